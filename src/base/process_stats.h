// SPDX-License-Identifier: MIT
// Process memory figures from /proc/self/status (Linux). Thread-safe.
#pragma once

#include <cstdint>

namespace sniper {

// Peak resident set size (VmHWM) in bytes, or 0 if unavailable.
uint64_t peak_rss_bytes();
// Current resident set size (VmRSS) in bytes, or 0 if unavailable.
uint64_t current_rss_bytes();
// Bytes this process caused to be fetched from storage (/proc/self/io read_bytes: page-cache
// misses and O_DIRECT reads), or 0 if unavailable.
uint64_t storage_read_bytes();
// Major page faults so far (getrusage).
uint64_t major_page_faults();

}  // namespace sniper
