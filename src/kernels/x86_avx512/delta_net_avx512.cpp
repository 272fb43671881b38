// SPDX-License-Identifier: MIT
// AVX-512 twin of the gated delta-net recurrence (kernels/delta_net.h), bit-identical to
// delta_net_ref. A state row (one value channel, d floats) is loaded into d/16 registers, scaled
// by the token's decay, dotted with k in ggml's order (four accumulators over 16-lane blocks
// b % 4, added a0 + a2, a1 + a3, then the two, then _mm512_reduce_add_ps), updated with one FMA
// per element, stored, and dotted with q the same way. A prefill passes a block of tokens over a
// group of rows at a time, so the state is read from L2 once per block, not once per token.
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: Clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <cmath>

#include "kernels/delta_net.h"
#include "kernels/kernel_registry.h"

namespace sniper::kernels_internal {

namespace {

constexpr int64_t kTokenBlock = 16;  // tokens per pass over a group of rows
constexpr int64_t kRowGroup = 8;     // rows that stay in L1 across a token block

// ggml_vec_dot_f32 of NV 16-lane registers with y (NV % 4 == 0).
template <int NV>
inline float dot_rows(const __m512* x, const float* y) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int b = 0; b < NV; ++b) acc[b % 4] = _mm512_fmadd_ps(x[b], _mm512_loadu_ps(y + 16 * b), acc[b % 4]);
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[2]), _mm512_add_ps(acc[1], acc[3])));
}

// One token on one state row (value channel c): returns o[c].
template <int NV>
inline float row_step(float* row, const float* q, const float* k, float v_c, __m512 vdecay, float beta, float scale) {
  __m512 x[NV];
  for (int b = 0; b < NV; ++b) x[b] = _mm512_mul_ps(_mm512_loadu_ps(row + 16 * b), vdecay);
  const __m512 vu = _mm512_set1_ps((v_c - dot_rows<NV>(x, k)) * beta);
  for (int b = 0; b < NV; ++b) {
    x[b] = _mm512_fmadd_ps(_mm512_loadu_ps(k + 16 * b), vu, x[b]);
    _mm512_storeu_ps(row + 16 * b, x[b]);
  }
  return dot_rows<NV>(x, q) * scale;
}

// Tokens [t0, t1) of head j. Rows go in groups that stay in L1 while the block's tokens pass
// over them, token-major inside the group, so consecutive row steps are independent and the
// core overlaps one row's reductions with the next row's arithmetic (row-major inside a group
// would chain every step on the previous token's result for the same row).
template <int NV>
void head_block(float* s, const DeltaNetArgs& a, int64_t j, int64_t kh, int64_t t0, int64_t t1, float scale) {
  constexpr int64_t d = 16 * NV;
  __m512 decay[kTokenBlock];
  float beta[kTokenBlock];
  // The block's q and k side by side: in the model's rows they sit a whole qkv row apart, a
  // multiple of 4 KiB, so that every token's vectors would compete for the same L1 sets.
  alignas(64) float qk[kTokenBlock][2][d];
  for (int64_t t = t0; t < t1; ++t) {
    decay[t - t0] = _mm512_set1_ps(std::exp(a.g[t * a.gb_stride + j]));
    beta[t - t0] = a.beta[t * a.gb_stride + j];
    for (int b = 0; b < NV; ++b) {
      _mm512_store_ps(qk[t - t0][0] + 16 * b, _mm512_loadu_ps(a.q + t * a.q_stride + kh * d + 16 * b));
      _mm512_store_ps(qk[t - t0][1] + 16 * b, _mm512_loadu_ps(a.k + t * a.k_stride + kh * d + 16 * b));
    }
  }
  for (int64_t c0 = 0; c0 < d; c0 += kRowGroup) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* q = qk[t - t0][0];
      const float* k = qk[t - t0][1];
      const float* v = a.v + t * a.v_stride + j * d;
      float* o = a.out + t * a.out_stride + j * d;
      for (int64_t c = c0; c < c0 + kRowGroup; ++c) {
        o[c] = row_step<NV>(s + c * d, q, k, v[c], decay[t - t0], beta[t - t0], scale);
      }
    }
  }
}

template <int NV>
void run(const DeltaNetArgs& a, int64_t head_begin, int64_t head_end) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(a.head_dim));
  for (int64_t j = head_begin; j < head_end; ++j) {
    const int64_t kh = delta_net_key_head(a, j);
    float* s = a.state + j * a.head_dim * a.head_dim;
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kTokenBlock) {
      const int64_t t1 = t0 + kTokenBlock < a.n_tokens ? t0 + kTokenBlock : a.n_tokens;
      head_block<NV>(s, a, j, kh, t0, t1, scale);
    }
  }
}

}  // namespace

void delta_net_avx512(const DeltaNetArgs& a, int64_t head_begin, int64_t head_end) {
  check_delta_net_args(a, head_begin, head_end);
  switch (a.head_dim) {
    case 64: return run<4>(a, head_begin, head_end);
    case 128: return run<8>(a, head_begin, head_end);
    case 192: return run<12>(a, head_begin, head_end);
    case 256: return run<16>(a, head_begin, head_end);
    default: return delta_net_ref(a, head_begin, head_end);
  }
}

}  // namespace sniper::kernels_internal
