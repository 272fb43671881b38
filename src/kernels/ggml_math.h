// SPDX-License-Identifier: MIT
// Internal to kernels/: scalar forms of the reference engine's (ggml's) arithmetic building
// blocks, shared by the `_ref` twins so that each is written once: its vectorised expf (AVX-512
// variant, lane by lane), _mm512_reduce_add_ps's summation tree, and the 4 x 16-lane f32 dot
// product of ggml_vec_dot_f32. Pure functions, thread-compatible. Include only from translation
// units compiled without FP contraction (baseline x86-64, or the ISA flags' -ffp-contract=off):
// the unfused products below must stay unfused.
#pragma once

#include <cmath>
#include <cstdint>

namespace sniper::kernels_internal {

// ggml's vectorised expf (ggml-cpu vec.h, AVX-512 variant), evaluated lane by lane with the
// same fused multiply-adds, so results are bit-identical to the reference engine's. Max error
// ~1.5 ulp against libm; |n| > 192 saturates to 0 or inf.
inline float ggml_expf(float x) {
  const float r = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, r);
  const float n = z - r;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  if (std::fabs(n) > 192.0f) return n <= 0.0f ? 0.0f : INFINITY;
  const float u = b * b;
  const float j =
      std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
               std::fma(0x1.ffffecp-1f, b, 1.0f));
  if (std::isnan(n)) return j;  // NaN in, NaN out (and no NaN-to-int conversion, which is undefined)
  return std::ldexp(j, static_cast<int>(n));
}

// _mm512_reduce_add_ps's summation tree over 16 lanes.
inline float reduce_add_16(const float* v) {
  float t3[8], t6[4];
  for (int i = 0; i < 8; ++i) t3[i] = v[i + 8] + v[i];
  for (int i = 0; i < 4; ++i) t6[i] = t3[i + 4] + t3[i];
  const float t8_0 = t6[0] + t6[2], t8_1 = t6[1] + t6[3];
  return t8_0 + t8_1;
}

// ggml_vec_dot_f32 as the reference's AVX-512 build (GCC 12, -march=native) computes it: n
// rounded down to 64 goes through four 16-lane accumulators (accumulator a takes elements
// 64 * b + 16 * a + lane, one fused multiply-add per element), which are added pairwise (a0 + a2,
// a1 + a3, then the two) and reduced by the tree above. GCC vectorises the source's scalar
// leftover loop as an in-order reduction: while 8 or more remain, 8 products rounded on their own
// are added to the sum one by one; then, if 4 or more remain, 4 more the same way; the last
// n % 4 are fused-multiply-added one by one (checked against the compiled ggml, see
// scripts/ggml-parity.sh).
inline float ggml_dot_f32(const float* x, const float* y, int64_t n) {
  float acc[4][16] = {};
  const int64_t n_vec = n - n % 64;
  for (int64_t i = 0; i < n_vec; i += 64) {
    for (int a = 0; a < 4; ++a) {
      for (int l = 0; l < 16; ++l) acc[a][l] = std::fma(x[i + 16 * a + l], y[i + 16 * a + l], acc[a][l]);
    }
  }
  float lanes[16];
  for (int l = 0; l < 16; ++l) lanes[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
  float sum = reduce_add_16(lanes);
  int64_t i = n_vec;
  for (; n - i >= 8; i += 8) {
    for (int64_t j = i; j < i + 8; ++j) {
      const float p = x[j] * y[j];
      sum += p;
    }
  }
  if (n - i >= 4) {
    for (int64_t j = i; j < i + 4; ++j) {
      const float p = x[j] * y[j];
      sum += p;
    }
    i += 4;
  }
  for (; i < n; ++i) sum = std::fma(x[i], y[i], sum);
  return sum;
}

}  // namespace sniper::kernels_internal
