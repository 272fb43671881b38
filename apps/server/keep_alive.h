// SPDX-License-Identifier: MIT
// Ollama's keep_alive: how long a model stays loaded after a request. parse_keep_alive reads
// Ollama's forms (a number of seconds, or a Go duration string such as "5m", "1h30m", "300ms",
// "-1s"; negative = forever, 0 = unload now). KeepAlive records when the model was loaded and
// when it expires, for /api/ps. With one model per server a model is never unloaded: an expiry
// of now (keep_alive 0) is reported as such, and the model stays available (the multi-model
// registry does the unloading). Thread-safe.
#pragma once

#include <chrono>
#include <limits>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace sniper::server {

inline constexpr double kKeepAliveForever = std::numeric_limits<double>::infinity();
inline constexpr double kDefaultKeepAliveS = 300;  // Ollama's default, 5 minutes

// Seconds (kKeepAliveForever for a negative value). Errors name the value.
[[nodiscard]] Result<double> parse_keep_alive(const nlohmann::ordered_json& value);

// RFC 3339 with nanoseconds in UTC, as Ollama writes times ("2025-01-02T03:04:05.123456789Z").
std::string rfc3339(std::chrono::system_clock::time_point t);

class KeepAlive {
 public:
  KeepAlive() : loaded_at_(std::chrono::system_clock::now()) { touch(kDefaultKeepAliveS); }
  // A request used the model: it now expires `seconds` from now.
  void touch(double seconds);
  std::chrono::system_clock::time_point loaded_at() const { return loaded_at_; }
  std::chrono::system_clock::time_point expires_at() const;

 private:
  mutable std::mutex mu_;
  std::chrono::system_clock::time_point loaded_at_;
  std::chrono::system_clock::time_point expires_at_;
};

}  // namespace sniper::server
