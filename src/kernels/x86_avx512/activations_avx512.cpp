// SPDX-License-Identifier: MIT
// AVX-512 twins of GELU and GEGLU (kernels/activations.h), bit-identical to gelu_ref /
// geglu_ref: 16 lanes are rounded to f16 (vcvtps2ph, nearest even, as fp32_to_fp16), their bits
// index the widened f16 GELU table through a gather, and the |x| >= 10 lanes are blended in.
// (A NaN lane indexes a NaN entry either way: every NaN of one sign has the same table entry.)
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: Clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include "base/fp16.h"
#include "kernels/activations.h"
#include "kernels/kernel_registry.h"

namespace sniper::kernels_internal {

namespace {

// gelu of 16 lanes; `up_or_one` multiplies the table and x >= 10 lanes (GEGLU), or is 1.
inline __m512 gelu16(__m512 x, const float* table, __m512 up, bool mul) {
  const __m256i h = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 t = _mm512_i32gather_ps(_mm512_cvtepu16_epi32(h), table, 4);
  __m512 big = x;
  if (mul) {
    t = _mm512_mul_ps(t, up);
    big = _mm512_mul_ps(x, up);
  }
  const __mmask16 ge = _mm512_cmp_ps_mask(x, _mm512_set1_ps(10.0f), _CMP_GE_OQ);
  const __mmask16 le = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-10.0f), _CMP_LE_OQ);
  t = _mm512_mask_blend_ps(ge, t, big);
  return _mm512_mask_blend_ps(le, t, _mm512_setzero_ps());
}

}  // namespace

void gelu_avx512(const float* x, float* y, int64_t n) {
  const float* table = gelu_table_f32();
  const __m512 one = _mm512_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 15 < n; i += 16) _mm512_storeu_ps(y + i, gelu16(_mm512_loadu_ps(x + i), table, one, false));
  if (i < n) gelu_ref(x + i, y + i, n - i);
}

void geglu_avx512(const float* gate, const float* up, float* out, int64_t n) {
  const float* table = gelu_table_f32();
  int64_t i = 0;
  for (; i + 15 < n; i += 16) {
    _mm512_storeu_ps(out + i, gelu16(_mm512_loadu_ps(gate + i), table, _mm512_loadu_ps(up + i), true));
  }
  if (i < n) geglu_ref(gate + i, up + i, out + i, n - i);
}

void gelu_quick_avx512(const float* x, float* y, int64_t n) {
  const float* table = gelu_quick_table_f32();
  int64_t i = 0;
  for (; i + 15 < n; i += 16) {
    const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm512_storeu_ps(y + i, _mm512_i32gather_ps(_mm512_cvtepu16_epi32(h), table, 4));
  }
  if (i < n) gelu_quick_ref(x + i, y + i, n - i);
}

void geglu_quick_avx512(const float* gate, const float* up, float* out, int64_t n) {
  const float* table = gelu_quick_table_f32();
  int64_t i = 0;
  for (; i + 15 < n; i += 16) {
    const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(gate + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 t = _mm512_i32gather_ps(_mm512_cvtepu16_epi32(h), table, 4);
    _mm512_storeu_ps(out + i, _mm512_mul_ps(t, _mm512_loadu_ps(up + i)));
  }
  if (i < n) geglu_quick_ref(gate + i, up + i, out + i, n - i);
}

}  // namespace sniper::kernels_internal
