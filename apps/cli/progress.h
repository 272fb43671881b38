// SPDX-License-Identifier: MIT
// Progress lines for long work (loading a model, evaluating a long prompt, writing a file): one
// line on stderr, redrawn in place, and only when stderr is a terminal, so files and pipes never
// receive carriage returns or half-drawn lines. A line appears only once the work has taken
// kProgressDelayS, so quick work stays silent, and is erased when the work ends.
// Thread-compatible, except ProgressLine::update, which may be called from several threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include "engine/generate.h"
#include "weights/weight_store.h"

namespace sniper::cli {

// Work shorter than this shows no progress line.
inline constexpr double kProgressDelayS = 0.5;

// "0:42", "1:02:03"; "--:--" for a negative or absurd number of seconds.
std::string format_eta(double seconds);

// True when stderr is a terminal that can redraw a line (not TERM=dumb).
bool stderr_is_terminal();

class ProgressLine {
 public:
  ProgressLine() : ProgressLine(stderr_is_terminal()) {}
  // `out`: where the line is drawn (stderr; tests pass a file); `delay_s`: how long work runs
  // before a line appears.
  explicit ProgressLine(bool enabled, std::FILE* out = stderr, double delay_s = kProgressDelayS);
  ~ProgressLine() { clear(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool enabled() const { return enabled_; }
  // Seconds since construction (or the last restart()).
  double elapsed_s() const;
  void restart();
  // Redraws the line with `text` when it is enabled, kProgressDelayS have passed since the start
  // and 0.1 s since the last draw (`force`: regardless of the last draw). Thread-safe.
  void update(const std::string& text, bool force = false);
  // Erases the line if one was drawn. Thread-safe.
  void clear();

 private:
  bool enabled_;
  std::FILE* out_;
  double delay_s_;
  std::mutex mu_;
  double t0_ = 0;
  double last_draw_ = -1;
  bool drawn_ = false;
};

// The callback for ModelLoadOptions::progress: "loading NAME: 1.20 / 4.50 GB (27%), 1.1 GB/s".
LoadProgress load_progress(ProgressLine& line, const std::string& name);

// The callback for GenerateOptions::on_prompt_progress: "prompt: 512 / 1354 tokens (38%),
// 41.2 tok/s, ETA 0:20". It returns false (stop) once `*stop` is true (null: never).
PromptProgress prompt_progress(ProgressLine& line, const std::atomic<bool>* stop = nullptr);

}  // namespace sniper::cli
