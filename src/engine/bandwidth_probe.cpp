// SPDX-License-Identifier: MIT
#include "engine/bandwidth_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "kernels/kernels.h"

namespace sniper {

namespace {

// Where thread t's part of n words (a multiple of 64) starts: whole 64-word blocks; part nt
// starts at n.
size_t part_begin(size_t n, int t, int nt) { return n * static_cast<size_t>(t) / static_cast<size_t>(nt) / 64 * 64; }

}  // namespace

MemoryReadProbe::MemoryReadProbe(ThreadPool& pool, uint64_t bytes) : pool_(pool) {
  n_words_ = static_cast<size_t>(bytes / sizeof(uint64_t)) / 64 * 64;
  if (n_words_ == 0) return;
  buf_ = static_cast<uint64_t*>(std::aligned_alloc(64, n_words_ * sizeof(uint64_t)));
  if (buf_ == nullptr) return;
  // Touch every page first (first-touch by the thread that will read it).
  pool_.run([&](int t, int nt) {
    const size_t end = part_begin(n_words_, t + 1, nt);
    for (size_t i = part_begin(n_words_, t, nt); i < end; ++i) buf_[i] = 0x3F8000003F800000ull;  // 1.0f pairs
  });
}

MemoryReadProbe::~MemoryReadProbe() { std::free(buf_); }

BandwidthProbe MemoryReadProbe::measure(int reps) {
  BandwidthProbe r;
  r.buffer_bytes = n_words_ * sizeof(uint64_t);
  r.n_threads = pool_.n_threads();
  if (buf_ == nullptr) return r;
  std::vector<uint64_t> sink(static_cast<size_t>(pool_.n_threads()) * 8, 0);
  const auto dot = get_kernels(GgmlType::kF32).vec_dot;
  for (int rep = 0; rep < reps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pool_.run([&](int t, int nt) {
      // The widest f32 dot kernel of this CPU reads the slice (both operands are the same
      // memory, so each byte crosses the memory bus once).
      const size_t begin = part_begin(n_words_, t, nt);
      const size_t end = part_begin(n_words_, t + 1, nt);
      const float* f = reinterpret_cast<const float*>(buf_ + begin);
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
    const double gbps = static_cast<double>(r.buffer_bytes) / s / 1e9;
    if (gbps > r.gb_per_s) r.gb_per_s = gbps;
  }
  volatile uint64_t keep = sink[0];
  (void)keep;
  return r;
}

BandwidthProbe probe_memory_read_bandwidth(ThreadPool& pool, uint64_t bytes, int reps) {
  MemoryReadProbe probe(pool, bytes);
  return probe.measure(reps);
}

}  // namespace sniper
