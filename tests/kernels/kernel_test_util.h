// SPDX-License-Identifier: MIT
// Shared helpers for the kernel tests: deterministic random data (well- and ill-conditioned),
// quantization through the `_ref` codecs, the list of weight types and of host tiers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "gguf/format.h"
#include "kernels/kernels.h"
#include "quant/quant.h"

namespace sniper::test {

inline constexpr GgmlType kWeightTypes[] = {
    GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ4_0,   GgmlType::kQ4_1,
    GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0, GgmlType::kQ2_K,   GgmlType::kQ3_K,
    GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS,
};

inline constexpr GgmlType kActTypes[] = {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16,
                                         GgmlType::kQ8_0, GgmlType::kQ8_1, GgmlType::kQ8_K};

inline constexpr IsaTier kAllTiers[] = {IsaTier::kRef, IsaTier::kAvx2, IsaTier::kAvx512};

inline bool host_has(IsaTier tier) { return tier <= host_best_tier(); }

// The bit pattern of f, for bitwise comparisons that also tell -0 from 0 and compare NaNs.
inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

// Data conditioning: kWell = N(0, 1); kIll = N(0, 1) times 10^U(-4, 4) per element (a dynamic
// range of 1e8 inside one block), with every 5th block all zeros.
enum class Cond { kWell, kIll };

inline std::vector<float> random_floats(int64_t n, uint32_t seed, Cond cond, int64_t block = 32) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> expo(-4.0f, 4.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float v = normal(rng);
    if (cond == Cond::kIll) v *= std::pow(10.0f, expo(rng));
    x[static_cast<size_t>(i)] = v;
  }
  if (cond == Cond::kIll) {
    for (int64_t b = 0; b * block < n; b += 5) {
      for (int64_t i = b * block; i < std::min(n, (b + 1) * block); ++i) x[static_cast<size_t>(i)] = 0.0f;
    }
  }
  return x;
}

// Quantizes x (n_rows rows of n) to `type` with the reference quantizer.
inline std::vector<uint8_t> quantize_rows(GgmlType type, const std::vector<float>& x, int64_t n, int64_t n_rows) {
  const size_t rb = row_bytes(type, n);
  std::vector<uint8_t> q(rb * static_cast<size_t>(n_rows) + 64);
  for (int64_t r = 0; r < n_rows; ++r) quantize_row_ref(type, x.data() + r * n, q.data() + rb * r, n);
  return q;
}

inline std::vector<float> dequantize_rows(GgmlType type, const uint8_t* q, int64_t n, int64_t n_rows) {
  const size_t rb = row_bytes(type, n);
  std::vector<float> y(static_cast<size_t>(n * n_rows));
  for (int64_t r = 0; r < n_rows; ++r) dequantize_row_ref(type, q + rb * r, y.data() + r * n, n);
  return y;
}

// sum_i |w_i| |a_i| in double over dequantized values: the scale of a dot's rounding error.
inline double abs_dot(const float* w, const float* a, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += std::fabs(static_cast<double>(w[i]) * a[i]);
  return s;
}

inline std::string type_name(GgmlType type) { return get_type_info(type).name; }

inline float nan_f() { return std::numeric_limits<float>::quiet_NaN(); }

}  // namespace sniper::test
