// SPDX-License-Identifier: MIT
#include "base/process_stats.h"

#include <cstdio>
#include <cstring>

namespace sniper {

namespace {
uint64_t status_kb(const char* field) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  uint64_t kb = 0;
  const size_t len = std::strlen(field);
  while (std::fgets(line, sizeof(line), f)) {
    if (std::strncmp(line, field, len) == 0 && line[len] == ':') {
      unsigned long long v = 0;
      if (std::sscanf(line + len + 1, "%llu", &v) == 1) kb = v;
      break;
    }
  }
  std::fclose(f);
  return kb;
}
}  // namespace

uint64_t peak_rss_bytes() { return status_kb("VmHWM") * 1024; }
uint64_t current_rss_bytes() { return status_kb("VmRSS") * 1024; }

}  // namespace sniper
