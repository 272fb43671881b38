// SPDX-License-Identifier: MIT
#include "engine/bandwidth_probe.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace sniper {

BandwidthProbe probe_memory_read_bandwidth(ThreadPool& pool, uint64_t bytes, int reps) {
  BandwidthProbe r;
  r.buffer_bytes = bytes;
  r.n_threads = pool.n_threads();
  const size_t n = static_cast<size_t>(bytes / sizeof(uint64_t));
  uint64_t* buf = static_cast<uint64_t*>(std::aligned_alloc(64, n * sizeof(uint64_t)));
  if (buf == nullptr) return r;
  // Touch every page first (first-touch by the thread that will read it).
  pool.run([&](int t, int nt) {
    const size_t begin = n * static_cast<size_t>(t) / static_cast<size_t>(nt);
    const size_t end = n * static_cast<size_t>(t + 1) / static_cast<size_t>(nt);
    for (size_t i = begin; i < end; ++i) buf[i] = i;
  });
  std::vector<uint64_t> sink(static_cast<size_t>(pool.n_threads()) * 8, 0);
  for (int rep = 0; rep < reps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.run([&](int t, int nt) {
      const size_t begin = n * static_cast<size_t>(t) / static_cast<size_t>(nt) / 8 * 8;
      const size_t end = n * static_cast<size_t>(t + 1) / static_cast<size_t>(nt) / 8 * 8;
      uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
      for (size_t i = begin; i < end; i += 8) {
        a0 += buf[i];
        a1 += buf[i + 1];
        a2 += buf[i + 2];
        a3 += buf[i + 3];
        a4 += buf[i + 4];
        a5 += buf[i + 5];
        a6 += buf[i + 6];
        a7 += buf[i + 7];
      }
      sink[static_cast<size_t>(t) * 8] += a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7;
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double gbps = static_cast<double>(bytes) / s / 1e9;
    if (gbps > r.gb_per_s) r.gb_per_s = gbps;
  }
  volatile uint64_t keep = sink[0];
  (void)keep;
  std::free(buf);
  return r;
}

}  // namespace sniper
