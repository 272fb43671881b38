// SPDX-License-Identifier: MIT
#include "server/keep_alive.h"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace sniper::server {

namespace {

// Go's time.ParseDuration: [-+]? (number unit)+ with units ns us µs ms s m h; "0" alone is 0.
Result<double> parse_duration(const std::string& s) {
  if (s.empty()) return make_error("keep_alive is an empty string; expected a duration such as \"5m\"");
  size_t i = 0;
  double sign = 1;
  if (s[i] == '-' || s[i] == '+') sign = s[i++] == '-' ? -1 : 1;
  if (s.substr(i) == "0") return 0.0;
  double total = 0;
  bool any = false;
  while (i < s.size()) {
    const size_t start = i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
    if (i == start) break;
    const double v = std::strtod(s.substr(start, i - start).c_str(), nullptr);
    const size_t unit_start = i;
    while (i < s.size() && !std::isdigit(static_cast<unsigned char>(s[i])) && s[i] != '.') ++i;
    const std::string unit = s.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit == "ns") scale = 1e-9;
    else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") scale = 1e-6;
    else if (unit == "ms") scale = 1e-3;
    else if (unit == "s") scale = 1;
    else if (unit == "m") scale = 60;
    else if (unit == "h") scale = 3600;
    else if (unit.empty() && i == s.size() && !any) scale = 1;  // a bare number of seconds ("3600")
    else {
      i = start;  // not a duration term: the check below reports the string
      break;
    }
    total += v * scale;
    any = true;
  }
  if (!any || i != s.size()) {
    return make_error("keep_alive is \"%s\" but must be a duration such as \"5m\", \"1h30m\" or \"-1\" (forever)",
                      s.c_str());
  }
  return sign * total;
}

}  // namespace

Result<double> parse_keep_alive(const nlohmann::ordered_json& value) {
  double seconds = 0;
  if (value.is_number()) {
    seconds = value.get<double>();
    if (!std::isfinite(seconds)) return make_error("keep_alive must be a finite number of seconds");
  } else if (value.is_string()) {
    SNIPER_ASSIGN_OR_RETURN(seconds, parse_duration(value.get<std::string>()));
  } else {
    return make_error("keep_alive must be a number of seconds or a duration string such as \"5m\"");
  }
  return seconds < 0 ? kKeepAliveForever : seconds;
}

std::string rfc3339(std::chrono::system_clock::time_point t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(ns % 1000000000));
  return buf;
}

}  // namespace sniper::server
