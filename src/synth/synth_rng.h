// SPDX-License-Identifier: MIT
// The random streams of the synthetic-model writer. Every stream is a splitmix64 generator
// seeded from (model seed, tensor name, chunk index), never from a thread id, so a file's
// bytes do not depend on how many threads wrote it. Header-only; no shared state.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace sniper {

// splitmix64: a tiny, high-quality, portable generator. Thread-compatible (one per thread).
struct SynthRng {
  uint64_t state;

  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  // Uniform integer in [lo, hi] (hi - lo < 2^32; the modulo bias is below 2^-32 per draw).
  int uniform_int(int lo, int hi) { return lo + static_cast<int>((next() >> 32) % static_cast<uint64_t>(hi - lo + 1)); }
  // Two independent standard normals (Box-Muller).
  void normal_pair(float* a, float* b) {
    double u1 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double t = 6.283185307179586 * uniform();
    *a = static_cast<float>(r * std::cos(t));
    *b = static_cast<float>(r * std::sin(t));
  }
  // Fills n bytes with uniform random bytes.
  void fill_bytes(uint8_t* dst, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const uint64_t v = next();
      std::memcpy(dst + i, &v, 8);
    }
    if (i < n) {
      const uint64_t v = next();
      std::memcpy(dst + i, &v, n - i);
    }
  }
};

// FNV-1a of the name, keyed by the model seed: the per-tensor stream seed.
inline uint64_t synth_tensor_seed(std::string_view name, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The stream of one chunk of a tensor (chunks are fixed row ranges, independent of threads).
inline SynthRng synth_chunk_rng(uint64_t tensor_seed, uint64_t chunk_idx) {
  SynthRng mix{tensor_seed ^ (chunk_idx * 0xD1B54A32D192ED03ull)};
  return SynthRng{mix.next()};
}

}  // namespace sniper
