// SPDX-License-Identifier: MIT
// Small ASCII text helpers shared by the agent's parsers (routing words, HTML, config values).
// Pure functions, thread-safe.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace sniper::agent {

// `s` without leading and trailing spaces, tabs, CRs and newlines.
inline std::string trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

// `s` with ASCII letters lower-cased (other bytes, UTF-8 included, unchanged).
inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace sniper::agent
