// SPDX-License-Identifier: MIT
// What the kernel microbenchmarks share: a monotonic clock and comma-separated arguments.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace sniper::bench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// "a,b,c" -> {"a", "b", "c"} (empty items kept).
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(',', start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace sniper::bench
