// SPDX-License-Identifier: MIT
// AVX2 twins of flash attention's accumulator steps (kernels/ops.h RowOps mad_f32, scale_f32,
// mad_f16, scale_f16, widen_f16, dot_tile_f32): the scalar twins' operations lane by lane (one
// FMA or one product per element, f16 rounding to nearest even), so every tier gives the same
// bits (tests/kernels/flash_attention_test.cpp). The AVX2 tier takes its other row operations
// from the scalar twins.
#include <immintrin.h>

#include <cmath>

#include "base/fp16.h"
#include "kernels/kernel_registry.h"

namespace sniper::kernels_internal {

namespace {
inline __m256 load_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline void store_f16(uint16_t* p, __m256 x) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
}  // namespace

void mad_f32_avx2(float* y, const float* x, float v, int64_t n) {
  const __m256 vv = _mm256_set1_ps(v);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(_mm256_loadu_ps(x + i), vv, _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] = std::fma(x[i], v, y[i]);
}

void scale_f32_avx2(float* y, float v, int64_t n) {
  const __m256 vv = _mm256_set1_ps(v);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), vv));
  for (; i < n; ++i) y[i] *= v;
}

void mad_f16_avx2(uint16_t* y, const uint16_t* x, float v, int64_t n) {
  const __m256 vv = _mm256_set1_ps(v);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store_f16(y + i, _mm256_fmadd_ps(load_f16(x + i), vv, load_f16(y + i)));
  for (; i < n; ++i) y[i] = fp32_to_fp16(std::fma(fp16_to_fp32(x[i]), v, fp16_to_fp32(y[i])));
}

void scale_f16_avx2(uint16_t* y, float v, int64_t n) {
  const __m256 vv = _mm256_set1_ps(v);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store_f16(y + i, _mm256_mul_ps(load_f16(y + i), vv));
  for (; i < n; ++i) y[i] = fp32_to_fp16(fp16_to_fp32(y[i]) * v);
}

void widen_f16_avx2(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, load_f16(x + i));
  for (; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

void dot_tile_f32_avx2(const float* kt, int64_t n, int64_t tile, const float* q, float* s) {
  // Eight cells per register, each lane its own in-order chain of fused multiply-adds.
  int64_t t = 0;
  for (; t + 32 <= tile; t += 32) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < n; ++i) {
      const __m256 qi = _mm256_set1_ps(q[i]);
      const float* row = kt + i * tile + t;
      a0 = _mm256_fmadd_ps(qi, _mm256_loadu_ps(row), a0);
      a1 = _mm256_fmadd_ps(qi, _mm256_loadu_ps(row + 8), a1);
      a2 = _mm256_fmadd_ps(qi, _mm256_loadu_ps(row + 16), a2);
      a3 = _mm256_fmadd_ps(qi, _mm256_loadu_ps(row + 24), a3);
    }
    _mm256_storeu_ps(s + t, a0);
    _mm256_storeu_ps(s + t + 8, a1);
    _mm256_storeu_ps(s + t + 16, a2);
    _mm256_storeu_ps(s + t + 24, a3);
  }
  for (; t < tile; ++t) {
    float acc = 0.0f;
    for (int64_t i = 0; i < n; ++i) acc = std::fma(q[i], kt[i * tile + t], acc);
    s[t] = acc;
  }
}

}  // namespace sniper::kernels_internal
