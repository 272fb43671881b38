// SPDX-License-Identifier: MIT
// Helpers shared by the quant tests: deterministic random data and error metrics.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gguf/format.h"

namespace sniper::testing {

// n samples of N(0, 1) from a fixed seed (mt19937 + std::normal_distribution: deterministic
// for a given standard library).
inline std::vector<float> random_normal(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng) * scale;
  return v;
}

// sqrt(sum (a-b)^2 / sum b^2), in double. Returns 0 when both are all zero.
inline double rel_rmse(const float* a, const float* b, size_t n) {
  double num = 0;
  double den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  if (den == 0) return num == 0 ? 0 : INFINITY;
  return std::sqrt(num / den);
}

inline double dot_f64(const float* a, const float* b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

inline double norm_f64(const float* a, size_t n) { return std::sqrt(dot_f64(a, a, n)); }

// Bytes needed for n elements of `type`.
inline size_t bytes_for(GgmlType type, int64_t n) { return row_bytes(type, n); }

}  // namespace sniper::testing
