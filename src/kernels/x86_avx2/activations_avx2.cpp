// SPDX-License-Identifier: MIT
// AVX2 twins of GELU and GEGLU (kernels/activations.h), bit-identical to gelu_ref / geglu_ref:
// 8 lanes rounded to f16 (F16C vcvtps2ph, nearest even), their bits index the widened f16 GELU
// table through a gather, and the |x| >= 10 lanes are blended in (as x86_avx512/).
#include <immintrin.h>

#include "kernels/activations.h"
#include "kernels/kernel_registry.h"

namespace sniper::kernels_internal {

namespace {

inline __m256 gelu8(__m256 x, const float* table, __m256 up, bool mul) {
  const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 t = _mm256_i32gather_ps(table, _mm256_cvtepu16_epi32(h), 4);
  __m256 big = x;
  if (mul) {
    t = _mm256_mul_ps(t, up);
    big = _mm256_mul_ps(x, up);
  }
  t = _mm256_blendv_ps(t, big, _mm256_cmp_ps(x, _mm256_set1_ps(10.0f), _CMP_GE_OQ));
  return _mm256_blendv_ps(t, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(-10.0f), _CMP_LE_OQ));
}

}  // namespace

void gelu_avx2(const float* x, float* y, int64_t n) {
  const float* table = gelu_table_f32();
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 7 < n; i += 8) _mm256_storeu_ps(y + i, gelu8(_mm256_loadu_ps(x + i), table, one, false));
  if (i < n) gelu_ref(x + i, y + i, n - i);
}

void geglu_avx2(const float* gate, const float* up, float* out, int64_t n) {
  const float* table = gelu_table_f32();
  int64_t i = 0;
  for (; i + 7 < n; i += 8) {
    _mm256_storeu_ps(out + i, gelu8(_mm256_loadu_ps(gate + i), table, _mm256_loadu_ps(up + i), true));
  }
  if (i < n) geglu_ref(gate + i, up + i, out + i, n - i);
}

void gelu_quick_avx2(const float* x, float* y, int64_t n) {
  const float* table = gelu_quick_table_f32();
  int64_t i = 0;
  for (; i + 7 < n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(y + i, _mm256_i32gather_ps(table, _mm256_cvtepu16_epi32(h), 4));
  }
  if (i < n) gelu_quick_ref(x + i, y + i, n - i);
}

void geglu_quick_avx2(const float* gate, const float* up, float* out, int64_t n) {
  const float* table = gelu_quick_table_f32();
  int64_t i = 0;
  for (; i + 7 < n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(gate + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 t = _mm256_i32gather_ps(table, _mm256_cvtepu16_epi32(h), 4);
    _mm256_storeu_ps(out + i, _mm256_mul_ps(t, _mm256_loadu_ps(up + i)));
  }
  if (i < n) geglu_quick_ref(gate + i, up + i, out + i, n - i);
}

}  // namespace sniper::kernels_internal
