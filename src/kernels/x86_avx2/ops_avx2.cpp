// SPDX-License-Identifier: MIT
// AVX2 twins of the row operations whose cost grows with context or width: softmax (every
// head's attention scores), the f16 rounding of attention weights, flash attention's
// exp-and-sum, and SwiGLU. The reference is ggml's AVX-512 build, so these compute what the
// scalar ops_ref twins (and x86_avx512/ops_avx512.cpp) compute, on 8-lane halves of its
// 16-lane blocks:
//   - ggml's vectorised expf, lane by lane (kernels/ggml_math.h ggml_expf). AVX2 has no
//     vscalefps, so j * 2^n is two exact power-of-two products, 2^floor(n/2) then the rest,
//     which round once, as ldexp and vscalefps do (subnormal results included);
//   - each 16-lane block's sum in _mm512_reduce_add_ps's tree (ggml_math.h reduce_add_16):
//     high half + low half, then the 128-bit halves, then the pairs;
//   - libm expf on the tail, one by one.
// tests/kernels/ops_test.cpp and flash_attention_test.cpp check every tier against the twins.
#include <immintrin.h>

#include <cmath>

#include "base/fp16.h"
#include "kernels/kernel_registry.h"

namespace sniper::kernels_internal {

namespace {

inline __m256 pow2_8(__m256i k) {  // 2^k for k in [-126, 127]
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
}

inline __m256 v_expf8(__m256 x) {
  const __m256 r = _mm256_set1_ps(0x1.8p23f);
  const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
  const __m256 n = _mm256_sub_ps(z, r);
  const __m256 b =
      _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
  const __m256 u = _mm256_mul_ps(b, b);
  const __m256 j = _mm256_fmadd_ps(
      _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                      _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
      u, _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f)));
  // |n| <= 192 here is an integer; out-of-range and NaN lanes are replaced below, so their
  // (meaningless) conversions are clamped into range first.
  const __m256 nc = _mm256_min_ps(_mm256_max_ps(n, _mm256_set1_ps(-192.0f)), _mm256_set1_ps(192.0f));
  const __m256i ni = _mm256_cvtps_epi32(nc);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);  // floor(n / 2) in [-96, 96]
  const __m256 res = _mm256_mul_ps(_mm256_mul_ps(j, pow2_8(n1)), pow2_8(_mm256_sub_epi32(ni, n1)));
  const __m256 big = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), n), _mm256_set1_ps(192.0f), _CMP_GT_OQ);
  const __m256 nan = _mm256_cmp_ps(n, n, _CMP_UNORD_Q);
  if (_mm256_testz_ps(_mm256_or_ps(big, nan), _mm256_or_ps(big, nan))) return res;
  const __m256 alt = _mm256_blendv_ps(_mm256_setzero_ps(), _mm256_set1_ps(INFINITY),
                                      _mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_GT_OQ));
  return _mm256_blendv_ps(_mm256_blendv_ps(res, alt, big), j, nan);  // NaN in, NaN out (as ggml_expf)
}

// reduce_add_16 of the block whose lanes 0..7 are lo and 8..15 are hi.
inline float reduce_add_16(__m256 lo, __m256 hi) {
  const __m256 t3 = _mm256_add_ps(hi, lo);
  const __m128 t6 = _mm_add_ps(_mm256_extractf128_ps(t3, 1), _mm256_castps256_ps128(t3));
  const __m128 t8 = _mm_add_ps(t6, _mm_movehl_ps(t6, t6));  // [t6 0 + t6 2, t6 1 + t6 3]
  return _mm_cvtss_f32(_mm_add_ss(t8, _mm_movehdup_ps(t8)));
}

double exp_and_sum(float* x, int64_t n, float max) {
  const __m256 vm = _mm256_set1_ps(max);
  double sum = 0.0;
  int64_t i = 0;
  for (; i + 15 < n; i += 16) {
    const __m256 lo = v_expf8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    const __m256 hi = v_expf8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm));
    _mm256_storeu_ps(x + i, lo);
    _mm256_storeu_ps(x + i + 8, hi);
    sum += static_cast<double>(reduce_add_16(lo, hi));
  }
  for (; i < n; ++i) {
    const float e = std::exp(x[i] - max);
    x[i] = e;
    sum += static_cast<double>(e);
  }
  return sum;
}

// round_fp16 of 8 floats (base/fp16.h encodes every NaN as sign | 0x7E00).
inline __m256 round_fp16_8(__m256 v) {
  __m256 r = _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
  if (!_mm256_testz_ps(nan, nan)) {
    const __m256 quiet =
        _mm256_or_ps(_mm256_and_ps(v, _mm256_set1_ps(-0.0f)), _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000)));
    r = _mm256_blendv_ps(r, quiet, nan);
  }
  return r;
}

inline float reduce_max8(__m256 v) {
  __m128 x = _mm_max_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  x = _mm_max_ps(x, _mm_movehl_ps(x, x));
  x = _mm_max_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}

}  // namespace

void softmax_avx2(float* x, int64_t n) {
  // Max: NaN lanes never win (max_ps returns its second operand when either is NaN), as in ref.
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 7 < n; i += 8) vmax = _mm256_max_ps(_mm256_loadu_ps(x + i), vmax);
  float max = reduce_max8(vmax);
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  const double sum = exp_and_sum(x, n, max);
  const float inv = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f;
  const __m256 vinv = _mm256_set1_ps(inv);
  i = 0;
  for (; i + 7 < n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
  for (; i < n; ++i) x[i] *= inv;
}

void silu_mul_avx2(const float* gate, const float* up, float* out, int64_t n) {
  // ggml_vec_swiglu_f32's vector part runs on whole 16-lane blocks; the rest uses libm.
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 zero = _mm256_setzero_ps();
  const int64_t n_vec = n - n % 16;
  int64_t i = 0;
  for (; i < n_vec; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, v_expf8(_mm256_sub_ps(zero, g))));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(silu, _mm256_loadu_ps(up + i)));
  }
  for (; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void round_fp16_row_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 7 < n; i += 8) _mm256_storeu_ps(y + i, round_fp16_8(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = round_fp16(x[i]);
}

// attention_weights_ref in three passes instead of six: scale, mask and max; exp and sum (the
// order of softmax_avx2); normalise, round and zero-fill.
void attention_weights_avx2(float* x, int64_t n_kv, int64_t n_soft, float scale, float* w, int64_t n_dot) {
  const __m256 vscale = _mm256_set1_ps(scale);
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 7 < n_kv; i += 8) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vscale);
    _mm256_storeu_ps(x + i, v);
    vmax = _mm256_max_ps(v, vmax);  // NaN never wins (max_ps returns its second operand), as in ref
  }
  float max = reduce_max8(vmax);
  for (; i < n_kv; ++i) {
    x[i] *= scale;
    max = x[i] > max ? x[i] : max;
  }
  for (; i < n_soft; ++i) x[i] = -INFINITY;
  const double sum = exp_and_sum(x, n_soft, max);
  const float inv = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f;
  const __m256 vinv = _mm256_set1_ps(inv);
  i = 0;
  for (; i + 7 < n_kv; i += 8) _mm256_storeu_ps(w + i, round_fp16_8(_mm256_mul_ps(_mm256_loadu_ps(x + i), vinv)));
  for (; i < n_kv; ++i) w[i] = round_fp16(x[i] * inv);
  for (; i < n_dot; ++i) w[i] = 0.0f;
}

double exp_sum_avx2(float* x, int64_t n, float max) { return exp_and_sum(x, n, max); }

}  // namespace sniper::kernels_internal
