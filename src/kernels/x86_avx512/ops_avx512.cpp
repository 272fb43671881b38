// SPDX-License-Identifier: MIT
// AVX-512 twins of the row operations whose cost grows with context or width: softmax (the
// attention scores of every head, every layer) and SwiGLU. They compute exactly what the scalar
// ops_ref twins compute — ggml's vectorised expf (ggml-cpu vec.h, AVX-512 variant) on 16-lane
// blocks, _mm512_reduce_add_ps for the block sums, libm expf on the tail — so every tier gives
// the same bits (tests/kernels/ops_test.cpp checks this).
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the masked-off source, which trips
// -Wuninitialized/-Wmaybe-uninitialized at -O2+ (a false positive: those lanes are never read).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cmath>

#include "kernels/kernel_registry.h"

namespace sniper::kernels_internal {

namespace {

inline __m512 v_expf(__m512 x) {
  const __m512 r = _mm512_set1_ps(0x1.8p23f);
  const __m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), r);
  const __m512 n = _mm512_sub_ps(z, r);
  const __m512 b = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f), _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x));
  const __mmask16 d = _mm512_cmp_ps_mask(_mm512_abs_ps(n), _mm512_set1_ps(192), _CMP_GT_OQ);
  const __m512 u = _mm512_mul_ps(b, b);
  const __m512 j = _mm512_fmadd_ps(
      _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b, _mm512_set1_ps(0x1.573e2ep-5f)), u,
                      _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b, _mm512_set1_ps(0x1.fffdb6p-2f))),
      u, _mm512_fmadd_ps(_mm512_set1_ps(0x1.ffffecp-1f), b, _mm512_set1_ps(1.0f)));
  const __m512 res = _mm512_scalef_ps(j, n);
  if (_mm512_kortestz(d, d)) return res;
  const __m512 zero = _mm512_setzero_ps();
  const __m512 alt = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(n, zero, _CMP_LE_OQ), _mm512_set1_ps(INFINITY), zero);
  return _mm512_mask_blend_ps(d, res, alt);
}

}  // namespace

void softmax_avx512(float* x, int64_t n) {
  // Max: NaN lanes never win (max_ps returns its second operand when either is NaN), as in ref.
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 15 < n; i += 16) vmax = _mm512_max_ps(_mm512_loadu_ps(x + i), vmax);
  float max = _mm512_reduce_max_ps(vmax);
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  const __m512 vm = _mm512_set1_ps(max);
  double sum = 0.0;
  i = 0;
  for (; i + 15 < n; i += 16) {
    const __m512 e = v_expf(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
    _mm512_storeu_ps(x + i, e);
    sum += static_cast<double>(_mm512_reduce_add_ps(e));
  }
  for (; i < n; ++i) {
    const float e = std::exp(x[i] - max);
    x[i] = e;
    sum += static_cast<double>(e);
  }
  const float inv = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f;
  const __m512 vinv = _mm512_set1_ps(inv);
  i = 0;
  for (; i + 15 < n; i += 16) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), vinv));
  for (; i < n; ++i) x[i] *= inv;
}

void silu_mul_avx512(const float* gate, const float* up, float* out, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 zero = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 15 < n; i += 16) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, v_expf(_mm512_sub_ps(zero, g))));
    _mm512_storeu_ps(out + i, _mm512_mul_ps(silu, _mm512_loadu_ps(up + i)));
  }
  for (; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

}  // namespace sniper::kernels_internal
