// SPDX-License-Identifier: MIT
// Ollama's keep_alive: how long a model stays loaded after a request. parse_keep_alive reads
// Ollama's forms (a number of seconds, or a Go duration string such as "5m", "1h30m", "300ms",
// "-1s"; negative = forever, 0 = unload now); the Ollama routes hand it to the model pool
// (ModelPool::set_keep_alive), which does the unloading.
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

}  // namespace sniper::server
