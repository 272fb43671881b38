// SPDX-License-Identifier: MIT
// AVX-512 twins of the row operations whose cost grows with context or width: softmax (the
// attention scores of every head, every layer), the f16 rounding of attention weights, flash
// attention's exp-and-sum, and SwiGLU (the flash attention row steps are flash_ops_avx512.cpp). They compute exactly
// what the scalar ops_ref twins compute — ggml's vectorised expf (ggml-cpu vec.h, AVX-512 variant) on 16-lane blocks,
// _mm512_reduce_add_ps for the block sums, libm expf on the tail — so every tier gives the same bits
// (tests/kernels/ops_test.cpp checks this). GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the masked-off
// source, which trips -Wuninitialized/-Wmaybe-uninitialized at -O2+ (a false positive: those lanes are never read).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: Clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <cmath>
#include <utility>

#include "base/fp16.h"

#include "kernels/kernel_registry.h"
#include "kernels/x86/transposed_tree512.h"

namespace sniper::kernels_internal {

namespace {

inline __m512 v_expf(__m512 x) {
  const __m512 r = _mm512_set1_ps(0x1.8p23f);
  const __m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), r);
  const __m512 n = _mm512_sub_ps(z, r);
  const __m512 b =
      _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f), _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x));
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

// x[i] = expf(x[i] - max) over [0, n) and the reference's sum of them: per 16-lane block
// sum += double(_mm512_reduce_add_ps(block)), blocks in order, then the libm tail one by one.
// Sixteen blocks at a time share one transposed tree for their block sums (the same lane pairs,
// so the same sums), and the sums are then added in block order.
template <int... kSlots>
inline void exp_blocks16(float* x, __m512 vm, float* sums, std::integer_sequence<int, kSlots...>) {
  x86::TransposedTree16 tree;
  auto one = [&](auto slot) {
    float* b = x + 16 * x86::tree_slot_of(decltype(slot)::value);
    const __m512 e = v_expf(_mm512_sub_ps(_mm512_loadu_ps(b), vm));
    _mm512_storeu_ps(b, e);
    tree.push<decltype(slot)::value>(e);
  };
  (one(std::integral_constant<int, kSlots>{}), ...);
  _mm512_storeu_ps(sums, tree.result);
}

double exp_and_sum(float* x, int64_t n, float max) {
  const __m512 vm = _mm512_set1_ps(max);
  double sum = 0.0;
  int64_t i = 0;
  alignas(64) float sums[16];
  for (; i + 255 < n; i += 256) {
    exp_blocks16(x + i, vm, sums, std::make_integer_sequence<int, 16>{});
    for (int k = 0; k < 16; ++k) sum += static_cast<double>(sums[k]);
  }
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
  return sum;
}

}  // namespace

void softmax_avx512(float* x, int64_t n) {
  // Max: NaN lanes never win (max_ps returns its second operand when either is NaN), as in ref.
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 15 < n; i += 16) vmax = _mm512_max_ps(_mm512_loadu_ps(x + i), vmax);
  float max = _mm512_reduce_max_ps(vmax);
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  const double sum = exp_and_sum(x, n, max);
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

namespace {
// round_fp16 of 16 floats (base/fp16.h encodes every NaN as sign | 0x7E00).
inline __m512 round_fp16_16(__m512 v) {
  __m512 r = _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  if (nan != 0) {
    const __m512i sign = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(static_cast<int>(0x80000000u)));
    r = _mm512_mask_blend_ps(nan, r, _mm512_castsi512_ps(_mm512_or_si512(sign, _mm512_set1_epi32(0x7FC00000))));
  }
  return r;
}
}  // namespace

void round_fp16_row_avx512(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 15 < n; i += 16) _mm512_storeu_ps(y + i, round_fp16_16(_mm512_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = round_fp16(x[i]);
}

// attention_weights_ref in three passes instead of six: scale, mask and max; exp and sum (the
// order of softmax_avx512); normalise, round and zero-fill.
void attention_weights_avx512(float* x, int64_t n_kv, int64_t n_soft, float scale, float* w, int64_t n_dot) {
  const __m512 vscale = _mm512_set1_ps(scale);
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 15 < n_kv; i += 16) {
    const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + i), vscale);
    _mm512_storeu_ps(x + i, v);
    vmax = _mm512_max_ps(v, vmax);  // NaN never wins (max_ps returns its second operand), as in ref
  }
  float max = _mm512_reduce_max_ps(vmax);
  for (; i < n_kv; ++i) {
    x[i] *= scale;
    max = x[i] > max ? x[i] : max;
  }
  for (; i < n_soft; ++i) x[i] = -INFINITY;
  const double sum = exp_and_sum(x, n_soft, max);
  const float inv = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f;
  const __m512 vinv = _mm512_set1_ps(inv);
  i = 0;
  for (; i + 15 < n_kv; i += 16) _mm512_storeu_ps(w + i, round_fp16_16(_mm512_mul_ps(_mm512_loadu_ps(x + i), vinv)));
  for (; i < n_kv; ++i) w[i] = round_fp16(x[i] * inv);
  for (; i < n_dot; ++i) w[i] = 0.0f;
}

double exp_sum_avx512(float* x, int64_t n, float max) { return exp_and_sum(x, n, max); }

}  // namespace sniper::kernels_internal
