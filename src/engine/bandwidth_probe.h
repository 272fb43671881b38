// SPDX-License-Identifier: MIT
// Memory read bandwidth probe: the roofline a decode step that streams weights from RAM is
// measured against. Thread-compatible.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace sniper {

struct BandwidthProbe {
  double gb_per_s = 0;  // best of the repetitions
  uint64_t buffer_bytes = 0;
  int n_threads = 0;
};

// A buffer far larger than the caches, first-touched by the pool threads that read it, so that
// the probe can be repeated (e.g. right before each of several decode tokens) without paying the
// allocation and page faults each time.
class MemoryReadProbe {
 public:
  MemoryReadProbe(ThreadPool& pool, uint64_t bytes);
  ~MemoryReadProbe();
  MemoryReadProbe(const MemoryReadProbe&) = delete;
  MemoryReadProbe& operator=(const MemoryReadProbe&) = delete;

  bool ok() const { return buf_ != nullptr; }  // false: the buffer could not be allocated

  // Reads the buffer `reps` times on every pool thread, each thread its own contiguous part, and
  // returns the best aggregate read throughput (0 when !ok()).
  BandwidthProbe measure(int reps);

 private:
  ThreadPool& pool_;
  uint64_t* buf_ = nullptr;
  size_t n_words_ = 0;
};

// One-shot form: allocates, measures, frees.
BandwidthProbe probe_memory_read_bandwidth(ThreadPool& pool, uint64_t bytes = uint64_t{512} << 20, int reps = 5);

}  // namespace sniper
