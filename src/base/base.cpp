// SPDX-License-Identifier: MIT
// Implementations of the tiny base facilities: make_error, check_failed and logging.
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "base/check.h"
#include "base/log.h"
#include "base/result.h"

namespace sniper {

namespace {
std::string vformat(const char* fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap2);
  va_end(ap2);
  std::string s(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(s.data(), s.size() + 1, fmt, ap);
  return s;
}

LogLevel initial_level() {
  const char* env = std::getenv("SNIPER_LOG");
  if (env == nullptr) return LogLevel::kWarn;
  if (!std::strcmp(env, "debug")) return LogLevel::kDebug;
  if (!std::strcmp(env, "info")) return LogLevel::kInfo;
  if (!std::strcmp(env, "error")) return LogLevel::kError;
  if (!std::strcmp(env, "silent")) return LogLevel::kSilent;
  return LogLevel::kWarn;
}

std::atomic<int> g_level{static_cast<int>(initial_level())};
std::mutex g_log_mu;
}  // namespace

Error make_error(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Error e{vformat(fmt, ap)};
  va_end(ap);
  return e;
}

void check_failed(const char* file, int line, const char* cond, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "%s:%d: CHECK(%s) failed%s%s\n", file, line, cond, msg.empty() ? "" : ": ", msg.c_str());
  std::fflush(stderr);
  std::abort();
}

void check_failed(const char* file, int line, const char* cond) {
  std::fprintf(stderr, "%s:%d: CHECK(%s) failed\n", file, line, cond);
  std::fflush(stderr);
  std::abort();
}

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }

void log_message(LogLevel level, const char* fmt, ...) {
  if (static_cast<int>(level) < g_level.load()) return;
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  static const char* kNames[] = {"debug", "info", "warn", "error", ""};
  std::lock_guard<std::mutex> lock(g_log_mu);
  std::fprintf(stderr, "[sniper %s] %s\n", kNames[static_cast<int>(level)], msg.c_str());
}

}  // namespace sniper
