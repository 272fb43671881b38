// SPDX-License-Identifier: MIT
// Flash attention's row steps at the AVX-512 tier: x86/flash_ops.h instantiated with 16-lane
// vectors, and widen_f16_cols, the tiled path's K tile widened and transposed sixteen rows by
// sixteen columns at a time in registers (the widening is exact, so any order gives the bits of
// widen_f16_cols_ref).
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the masked-off source, which trips
// -Wuninitialized/-Wmaybe-uninitialized at -O2+ (a false positive: those lanes are never read).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: Clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include "kernels/kernel_registry.h"
#include "kernels/x86/flash_ops.h"

namespace sniper::kernels_internal {

using x86::F32x16;

void mad_f32_avx512(float* y, const float* x, float v, int64_t n) { x86::mad_f32_t<F32x16>(y, x, v, n); }
void scale_f32_avx512(float* y, float v, int64_t n) { x86::scale_f32_t<F32x16>(y, v, n); }
void mad_f16_avx512(uint16_t* y, const uint16_t* x, float v, int64_t n) { x86::mad_f16_t<F32x16>(y, x, v, n); }
void scale_f16_avx512(uint16_t* y, float v, int64_t n) { x86::scale_f16_t<F32x16>(y, v, n); }
void widen_f16_avx512(const uint16_t* x, float* y, int64_t n) { x86::widen_f16_t<F32x16>(x, y, n); }
void gemm_f32_avx512(float* c, const float* a, const float* b, int64_t m, int64_t k, int64_t n) {
  x86::gemm_f32_t<F32x16>(c, a, b, m, k, n);
}

namespace {

// r[i] = row i of a 16 x 16 block -> r[j] = column j.
inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  // Per 128-bit lane, rows 4q..4q+3: element c of each (c = 0..3 within the lane) together.
  for (int q = 0; q < 4; ++q) {
    __m512* o = r + 4 * q;
    const __m512* s = t + 4 * q;
    o[0] = _mm512_shuffle_ps(s[0], s[2], _MM_SHUFFLE(1, 0, 1, 0));
    o[1] = _mm512_shuffle_ps(s[0], s[2], _MM_SHUFFLE(3, 2, 3, 2));
    o[2] = _mm512_shuffle_ps(s[1], s[3], _MM_SHUFFLE(1, 0, 1, 0));
    o[3] = _mm512_shuffle_ps(s[1], s[3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  // r[4q + c] holds, per 128-bit lane l, column 4l + c of rows 4q..4q+3.
  for (int c = 0; c < 4; ++c) {
    t[c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);        // cols c, 8+c of rows 0-7
    t[4 + c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);    // cols 4+c, 12+c of rows 0-7
    t[8 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
    t[12 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
  }
  for (int c = 0; c < 8; ++c) {
    r[c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0x88);
    r[8 + c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0xdd);
  }
}

}  // namespace

void widen_f16_cols_avx512(const uint8_t* rows, size_t row_bytes, int64_t n_rows, int64_t n, float* out,
                           int64_t out_stride) {
  auto row = [&](int64_t t) { return reinterpret_cast<const uint16_t*>(rows + row_bytes * static_cast<size_t>(t)); };
  int64_t t0 = 0;
  for (; t0 + 16 <= n_rows; t0 += 16) {
    int64_t d0 = 0;
    for (; d0 + 16 <= n; d0 += 16) {
      __m512 r[16];
      for (int i = 0; i < 16; ++i) r[i] = F32x16::load_f16(row(t0 + i) + d0);
      transpose16(r);
      for (int j = 0; j < 16; ++j) _mm512_storeu_ps(out + (d0 + j) * out_stride + t0, r[j]);
    }
    for (; d0 < n; ++d0) {
      for (int64_t t = t0; t < t0 + 16; ++t) out[d0 * out_stride + t] = x86::h2f(row(t)[d0]);
    }
  }
  for (; t0 < n_rows; ++t0) {
    for (int64_t d = 0; d < n; ++d) out[d * out_stride + t0] = x86::h2f(row(t0)[d]);
  }
}

}  // namespace sniper::kernels_internal
