// SPDX-License-Identifier: MIT
#include "progress.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace sniper::cli {

namespace {

double steady_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string format_eta(double seconds) {
  if (!(seconds >= 0) || seconds > 99 * 3600) return "--:--";
  const long t = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (t >= 3600) {
    std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%ld:%02ld", t / 60, t % 60);
  }
  return buf;
}

bool stderr_is_terminal() {
  if (::isatty(STDERR_FILENO) != 1) return false;
  const char* term = std::getenv("TERM");
  return term == nullptr || std::strcmp(term, "dumb") != 0;
}

ProgressLine::ProgressLine(bool enabled, std::FILE* out, double delay_s)
    : enabled_(enabled), out_(out), delay_s_(delay_s), t0_(steady_now_s()) {}

double ProgressLine::elapsed_s() const { return steady_now_s() - t0_; }

void ProgressLine::restart() {
  const std::lock_guard<std::mutex> lock(mu_);
  t0_ = steady_now_s();
  last_draw_ = -1;
}

void ProgressLine::update(const std::string& text, bool force) {
  if (!enabled_) return;
  const std::lock_guard<std::mutex> lock(mu_);
  const double now = steady_now_s();
  if (now - t0_ < delay_s_) return;
  if (!force && last_draw_ >= 0 && now - last_draw_ < 0.1) return;
  last_draw_ = now;
  drawn_ = true;
  std::fprintf(out_, "\r%s\033[K", text.c_str());
  std::fflush(out_);
}

void ProgressLine::clear() {
  if (!enabled_) return;
  const std::lock_guard<std::mutex> lock(mu_);
  if (!drawn_) return;
  drawn_ = false;
  std::fputs("\r\033[K", out_);
  std::fflush(out_);
}

LoadProgress load_progress(ProgressLine& line, const std::string& name) {
  if (!line.enabled()) return {};
  const double t0 = steady_now_s();
  return [&line, name, t0](uint64_t done, uint64_t total) {
    const double dt = steady_now_s() - t0;
    char buf[256];
    std::snprintf(buf, sizeof(buf), "loading %s: %.2f / %.2f GB (%d%%), %.2f GB/s", name.c_str(), done / 1e9,
                  total / 1e9, total > 0 ? static_cast<int>(100.0 * done / total) : 100,
                  dt > 0 ? done / 1e9 / dt : 0.0);
    line.update(buf);
  };
}

PromptProgress prompt_progress(ProgressLine& line, const std::atomic<bool>* stop) {
  const double t0 = steady_now_s();
  return [&line, stop, t0](int64_t done, int64_t total) {
    if (stop != nullptr && stop->load()) return false;
    if (done >= total) {
      line.clear();
      return true;
    }
    const double dt = steady_now_s() - t0;
    const double rate = dt > 0 ? static_cast<double>(done) / dt : 0;
    char buf[160];
    std::snprintf(buf, sizeof(buf), "prompt: %ld / %ld tokens (%d%%), %.1f tok/s, ETA %s", static_cast<long>(done),
                  static_cast<long>(total), static_cast<int>(100.0 * static_cast<double>(done) / total), rate,
                  format_eta(rate > 0 ? static_cast<double>(total - done) / rate : -1).c_str());
    line.update(buf);
    return true;
  };
}

}  // namespace sniper::cli
