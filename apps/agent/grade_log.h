// SPDX-License-Identifier: MIT
// Answer grades (/good, /bad) appended to a JSONL log, and the statistics /improve prints from it
// (good rate per route and per backend, the most recent bad prompts). One JSON object per line:
// {"ts": unix seconds, "grade": "good|bad", "route", "backend", "prompt", "answer", "tok_s"}.
// Invariants: appends never rewrite earlier lines; unreadable lines are counted and skipped.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "base/result.h"

namespace sniper::agent {

struct GradeEntry {
  long ts = 0;
  std::string grade;  // "good" | "bad"
  std::string route;  // chat | search | shell | raw
  std::string backend;
  std::string prompt;
  std::string answer;
  double tok_s = 0;
};

// Appends one entry (creating the file and its directory).
[[nodiscard]] Status append_grade(const std::string& path, const GradeEntry& entry);

struct GradeCounts {
  int good = 0;
  int bad = 0;
};

struct GradeSummary {
  int total = 0;
  int skipped_lines = 0;
  GradeCounts all;
  std::map<std::string, GradeCounts> by_route;
  std::map<std::string, GradeCounts> by_backend;
  std::vector<GradeEntry> recent_bad;  // newest last, at most 5
};

// Reads the log. A missing file is an empty summary.
[[nodiscard]] Result<GradeSummary> summarize_grades(const std::string& path);

// Prints the summary and a hint per weak route/backend.
void print_grade_summary(const GradeSummary& summary, std::ostream& out);

}  // namespace sniper::agent
