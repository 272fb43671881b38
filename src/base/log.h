// SPDX-License-Identifier: MIT
// Minimal leveled logging to stderr. The level is process-wide and set once at startup
// (SNIPER_LOG=debug|info|warn|error or set_log_level); logging is thread-safe line by line.
#pragma once

namespace sniper {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kSilent = 4 };

void set_log_level(LogLevel level);
LogLevel log_level();
void log_message(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace sniper

#define LOG_DEBUG(...) ::sniper::log_message(::sniper::LogLevel::kDebug, __VA_ARGS__)
#define LOG_INFO(...) ::sniper::log_message(::sniper::LogLevel::kInfo, __VA_ARGS__)
#define LOG_WARN(...) ::sniper::log_message(::sniper::LogLevel::kWarn, __VA_ARGS__)
#define LOG_ERROR(...) ::sniper::log_message(::sniper::LogLevel::kError, __VA_ARGS__)
