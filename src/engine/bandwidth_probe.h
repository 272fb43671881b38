// SPDX-License-Identifier: MIT
// Memory read bandwidth probe: the roofline a decode step that streams weights from RAM is
// measured against. Thread-compatible.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace sniper {

struct BandwidthProbe {
  double gb_per_s = 0;     // best of the repetitions
  uint64_t buffer_bytes = 0;
  int n_threads = 0;
};

// Reads a buffer of `bytes` (far larger than the caches) `reps` times on every pool thread, each
// thread its own contiguous part, and reports the best aggregate read throughput.
BandwidthProbe probe_memory_read_bandwidth(ThreadPool& pool, uint64_t bytes = uint64_t{512} << 20, int reps = 5);

}  // namespace sniper
