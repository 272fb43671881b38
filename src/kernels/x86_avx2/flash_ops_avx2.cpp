// SPDX-License-Identifier: MIT
// Flash attention's row steps at the AVX2 tier: x86/flash_ops.h instantiated with 8-lane
// vectors (the same template as the AVX-512 tier, so every tier gives the scalar twins' bits), and
// the transposed f16 widening of a K tile. The other row operations are x86_avx2/ops_avx2.cpp.
#include <immintrin.h>

#include "base/fp16.h"
#include "kernels/kernel_registry.h"
#include "kernels/x86/flash_ops.h"

namespace sniper::kernels_internal {

using x86::F32x8;

void mad_f32_avx2(float* y, const float* x, float v, int64_t n) { x86::mad_f32_t<F32x8>(y, x, v, n); }
void scale_f32_avx2(float* y, float v, int64_t n) { x86::scale_f32_t<F32x8>(y, v, n); }
void mad_f16_avx2(uint16_t* y, const uint16_t* x, float v, int64_t n) { x86::mad_f16_t<F32x8>(y, x, v, n); }
void scale_f16_avx2(uint16_t* y, float v, int64_t n) { x86::scale_f16_t<F32x8>(y, v, n); }
void widen_f16_avx2(const uint16_t* x, float* y, int64_t n) { x86::widen_f16_t<F32x8>(x, y, n); }
void gemm_f32_avx2(float* c, const float* a, const float* b, int64_t m, int64_t k, int64_t n) {
  x86::gemm_f32_t<F32x8>(c, a, b, m, k, n);
}
void softmax_mad_f32_avx2(float* acc, float* m, float* sum, const float* scores, int64_t n, float scale, const float* v,
                          int64_t hd) {
  x86::softmax_mad_f32_t<F32x8>(acc, m, sum, scores, n, scale, v, hd);
}

// widen_f16_cols_ref in 8 x 8 blocks: 8 rows' 8 halves widened (exact), transposed, stored as 8
// columns of 8 cells; the rows and elements past the last whole block one by one.
void widen_f16_cols_avx2(const uint8_t* rows, size_t row_bytes, int64_t n_rows, int64_t n, float* out,
                         int64_t out_stride) {
  const int64_t n_rows8 = n_rows - n_rows % 8, n8 = n - n % 8;
  for (int64_t t0 = 0; t0 < n_rows8; t0 += 8) {
    const uint8_t* r0 = rows + row_bytes * static_cast<size_t>(t0);
    for (int64_t d0 = 0; d0 < n8; d0 += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) {
        r[i] = _mm256_cvtph_ps(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(r0 + row_bytes * static_cast<size_t>(i)) + d0 / 8));
      }
      const __m256 a0 = _mm256_unpacklo_ps(r[0], r[1]), a1 = _mm256_unpackhi_ps(r[0], r[1]);
      const __m256 a2 = _mm256_unpacklo_ps(r[2], r[3]), a3 = _mm256_unpackhi_ps(r[2], r[3]);
      const __m256 a4 = _mm256_unpacklo_ps(r[4], r[5]), a5 = _mm256_unpackhi_ps(r[4], r[5]);
      const __m256 a6 = _mm256_unpacklo_ps(r[6], r[7]), a7 = _mm256_unpackhi_ps(r[6], r[7]);
      const __m256 b0 = _mm256_shuffle_ps(a0, a2, 0x44), b1 = _mm256_shuffle_ps(a0, a2, 0xEE);
      const __m256 b2 = _mm256_shuffle_ps(a1, a3, 0x44), b3 = _mm256_shuffle_ps(a1, a3, 0xEE);
      const __m256 b4 = _mm256_shuffle_ps(a4, a6, 0x44), b5 = _mm256_shuffle_ps(a4, a6, 0xEE);
      const __m256 b6 = _mm256_shuffle_ps(a5, a7, 0x44), b7 = _mm256_shuffle_ps(a5, a7, 0xEE);
      const __m256 c[8] = {_mm256_permute2f128_ps(b0, b4, 0x20), _mm256_permute2f128_ps(b1, b5, 0x20),
                           _mm256_permute2f128_ps(b2, b6, 0x20), _mm256_permute2f128_ps(b3, b7, 0x20),
                           _mm256_permute2f128_ps(b0, b4, 0x31), _mm256_permute2f128_ps(b1, b5, 0x31),
                           _mm256_permute2f128_ps(b2, b6, 0x31), _mm256_permute2f128_ps(b3, b7, 0x31)};
      for (int j = 0; j < 8; ++j) _mm256_storeu_ps(out + (d0 + j) * out_stride + t0, c[j]);
    }
    for (int64_t t = t0; t < t0 + 8; ++t) {
      const auto* row = reinterpret_cast<const uint16_t*>(rows + row_bytes * static_cast<size_t>(t));
      for (int64_t d = n8; d < n; ++d) out[d * out_stride + t] = fp16_to_fp32(row[d]);
    }
  }
  for (int64_t t = n_rows8; t < n_rows; ++t) {
    const auto* row = reinterpret_cast<const uint16_t*>(rows + row_bytes * static_cast<size_t>(t));
    for (int64_t d = 0; d < n; ++d) out[d * out_stride + t] = fp16_to_fp32(row[d]);
  }
}

}  // namespace sniper::kernels_internal
