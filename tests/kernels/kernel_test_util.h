// SPDX-License-Identifier: MIT
// Shared helpers for the kernel tests: deterministic random data (well- and ill-conditioned),
// quantization through the `_ref` codecs, the list of weight types and of host tiers.
#pragma once

#include <algorithm>
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
#include "quant/block_scale.h"
#include "quant/quant.h"

namespace sniper::test {

inline constexpr GgmlType kWeightTypes[] = {
    GgmlType::kF32,        GgmlType::kF16,      GgmlType::kBF16,     GgmlType::kQ4_0,     GgmlType::kQ4_1,
    GgmlType::kQ5_0,       GgmlType::kQ5_1,     GgmlType::kQ8_0,     GgmlType::kQ2_K,     GgmlType::kQ3_K,
    GgmlType::kQ4_K,       GgmlType::kQ5_K,     GgmlType::kQ6_K,     GgmlType::kIQ4_NL,   GgmlType::kIQ4_XS,
    GgmlType::kIQ2_XXS,    GgmlType::kIQ2_XS,   GgmlType::kIQ2_S,    GgmlType::kIQ3_XXS,  GgmlType::kIQ3_S,
    GgmlType::kIQ1_S,      GgmlType::kIQ1_M,    GgmlType::kTQ1_0,    GgmlType::kTQ2_0,    GgmlType::kIQ2_RP,
    GgmlType::kIQ3_XXS_RP, GgmlType::kIQ3_S_RP, GgmlType::kIQ1_S_RP, GgmlType::kIQ1_M_RP,
};

inline constexpr GgmlType kActTypes[] = {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16,
                                         GgmlType::kQ8_0, GgmlType::kQ8_1, GgmlType::kQ8_K};

// The target architecture's tiers, ref first (tests skip those the host cannot run).
inline const std::span<const IsaTier> kAllTiers = arch_tiers();

inline bool host_has(IsaTier tier) { return host_runs(tier); }

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

// Quantizes x (n_rows rows of n) to `type` with the reference quantizer. Types we only read
// (no quantizer: the i-quants, TQ*) get random valid blocks instead, seeded from x, with each
// block's scale taken from its slice of x (max |x| / 32), so x's conditioning (dynamic range,
// all-zero blocks) carries over.
inline std::vector<uint8_t> quantize_rows(GgmlType type, const std::vector<float>& x, int64_t n, int64_t n_rows) {
  const size_t rb = row_bytes(type, n);
  std::vector<uint8_t> q(rb * static_cast<size_t>(n_rows) + 64);
  if (!has_ref_quantizer(type)) {
    const GgmlTypeInfo& info = get_type_info(type);
    uint32_t seed;
    std::memcpy(&seed, x.data(), sizeof(seed));
    std::mt19937 rng(seed ^ static_cast<uint32_t>(n * 2654435761u));
    for (uint8_t& b : q) b = static_cast<uint8_t>(rng());
    const int64_t n_blocks = n * n_rows / info.block_size;
    for (int64_t i = 0; i < n_blocks; ++i) {
      float amax = 0.0f;
      for (int64_t j = 0; j < info.block_size; ++j)
        amax = std::max(amax, std::fabs(x[static_cast<size_t>(i * info.block_size + j)]));
      set_block_scale(type, q.data() + info.type_size * i, fp32_to_fp16(amax / 32.0f));
    }
    return q;
  }
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
