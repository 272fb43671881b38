// SPDX-License-Identifier: MIT
#include "base/process_stats.h"

#include <cstdio>
#include <cstring>

#include <sys/resource.h>

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

uint64_t storage_read_bytes() {
  std::FILE* f = std::fopen("/proc/self/io", "r");
  if (f == nullptr) return 0;
  char line[128];
  uint64_t v = 0;
  while (std::fgets(line, sizeof(line), f)) {
    unsigned long long x = 0;
    if (std::sscanf(line, "read_bytes: %llu", &x) == 1) {
      v = x;
      break;
    }
  }
  std::fclose(f);
  return v;
}

uint64_t major_page_faults() {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return static_cast<uint64_t>(ru.ru_majflt);
}

uint64_t peak_rss_bytes() { return status_kb("VmHWM") * 1024; }
uint64_t current_rss_bytes() { return status_kb("VmRSS") * 1024; }

}  // namespace sniper
