// SPDX-License-Identifier: MIT
// JSONL grade log and its summary (see grade_log.h).
#include "agent/grade_log.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "agent/config.h"
#include "server/bounded_json.h"

namespace sniper::agent {

Status append_grade(const std::string& path, const GradeEntry& e) {
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0 && !make_dirs(path.substr(0, slash)))
    return make_error("cannot create the directory of '%s'", path.c_str());
  std::ofstream f(path, std::ios::app);
  if (!f) return make_error("cannot open '%s': %s", path.c_str(), std::strerror(errno));
  nlohmann::json j = {{"ts", e.ts},         {"grade", e.grade},   {"route", e.route}, {"backend", e.backend},
                      {"prompt", e.prompt}, {"answer", e.answer}, {"tok_s", e.tok_s}};
  f << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  f.flush();
  if (!f) return make_error("write to '%s' failed", path.c_str());
  return ok_status();
}

Result<GradeSummary> summarize_grades(const std::string& path) {
  GradeSummary s;
  std::ifstream f(path);
  if (!f) return s;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    nlohmann::json j;  // bounded while parsing (nesting, counts); a malformed line stays discarded
    if (!server::parse_json_bounded(line, &j).empty()) j = nlohmann::json(nlohmann::json::value_t::discarded);
    if (!j.is_object() || !j.contains("grade") || !j["grade"].is_string()) {
      ++s.skipped_lines;
      continue;
    }
    GradeEntry e;
    e.grade = j["grade"].get<std::string>();
    auto str = [&](const char* k) {
      return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
    };
    e.route = str("route");
    e.backend = str("backend");
    e.prompt = str("prompt");
    e.answer = str("answer");
    if (j.contains("ts") && j["ts"].is_number()) e.ts = j["ts"].get<long>();
    if (j.contains("tok_s") && j["tok_s"].is_number()) e.tok_s = j["tok_s"].get<double>();
    bool good = e.grade == "good";
    if (!good && e.grade != "bad") {
      ++s.skipped_lines;
      continue;
    }
    ++s.total;
    auto bump = [&](GradeCounts& c) { (good ? c.good : c.bad)++; };
    bump(s.all);
    bump(s.by_route[e.route.empty() ? "?" : e.route]);
    bump(s.by_backend[e.backend.empty() ? "?" : e.backend]);
    if (!good) {
      s.recent_bad.push_back(e);
      if (s.recent_bad.size() > 5) s.recent_bad.erase(s.recent_bad.begin());
    }
  }
  return s;
}

void print_grade_summary(const GradeSummary& s, std::ostream& out) {
  char buf[256];
  if (s.total == 0) {
    out << "No grades yet: use /good or /bad after an answer.\n";
    return;
  }
  auto rate = [](const GradeCounts& c) { return c.good + c.bad ? 100.0 * c.good / (c.good + c.bad) : 0.0; };
  std::snprintf(buf, sizeof(buf), "%d graded answers: %d good, %d bad (%.0f%% good)\n", s.total, s.all.good, s.all.bad,
                rate(s.all));
  out << buf;
  auto table = [&](const char* title, const std::map<std::string, GradeCounts>& m) {
    out << title << ":\n";
    for (const auto& [name, c] : m) {
      std::snprintf(buf, sizeof(buf), "  %-14s %3d good %3d bad  %5.0f%%%s\n", name.c_str(), c.good, c.bad, rate(c),
                    c.bad >= 2 && rate(c) < 50 ? "  <- weak" : "");
      out << buf;
    }
  };
  table("by route", s.by_route);
  table("by backend", s.by_backend);
  if (!s.recent_bad.empty()) {
    out << "recent bad answers:\n";
    for (const GradeEntry& e : s.recent_bad) {
      std::string p = e.prompt.substr(0, 70);
      out << "  [" << e.route << "/" << e.backend << "] " << p << (e.prompt.size() > 70 ? "..." : "") << "\n";
    }
  }
  for (const auto& [route, c] : s.by_route) {
    if (c.bad < 2 || rate(c) >= 50) continue;
    if (route == "search")
      out << "hint: search answers are weak; try a larger primary tier or more pages (search_results).\n";
    else if (route == "shell") out << "hint: shell commands are weak; check routing with --eval-routing.\n";
    else out << "hint: " << route << " answers are weak; try /think on or turn on /auto for the heavy tier.\n";
  }
  if (s.skipped_lines) out << "(" << s.skipped_lines << " unreadable lines skipped)\n";
}

}  // namespace sniper::agent
