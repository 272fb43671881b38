// SPDX-License-Identifier: MIT
#include "engine/bandwidth_probe.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>

#include "kernels/kernels.h"

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
    for (size_t i = begin; i < end; ++i) buf[i] = 0x3F8000003F800000ull;  // 1.0f pairs
  });
  std::vector<uint64_t> sink(static_cast<size_t>(pool.n_threads()) * 8, 0);
  const auto dot = get_kernels(GgmlType::kF32).vec_dot;
  for (int rep = 0; rep < reps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.run([&](int t, int nt) {
      // The widest f32 dot kernel of this CPU reads the slice (both operands are the same
      // memory, so each byte crosses the memory bus once).
      const size_t begin = n * static_cast<size_t>(t) / static_cast<size_t>(nt) / 64 * 64;
      const size_t end = n * static_cast<size_t>(t + 1) / static_cast<size_t>(nt) / 64 * 64;
      const float* f = reinterpret_cast<const float*>(buf + begin);
      const int64_t n_floats = static_cast<int64_t>(end - begin) * 2;
      float out = 0;
      const int64_t chunk = int64_t{1} << 20;
      for (int64_t i = 0; i < n_floats; i += chunk) {
        float part = 0;
        dot(std::min(chunk, n_floats - i), &part, f + i, f + i);
        out += part;
      }
      sink[static_cast<size_t>(t) * 8] += static_cast<uint64_t>(out != 0);
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
