// SPDX-License-Identifier: MIT
// AVX2 twin of the gated delta-net recurrence (kernels/delta_net.h), bit-identical to
// delta_net_ref: x86_avx512/delta_net_avx512.cpp's loop structure (blocks of tokens over groups of
// rows kept in L1, q and k of a block copied side by side) with every 16-lane vector of ggml's
// order held as two __m256 (x86::Vec16x2: the same lanes, FMAs and reduction tree).
#include <immintrin.h>

#include <cmath>

#include "kernels/delta_net.h"
#include "kernels/kernel_registry.h"
#include "kernels/x86/dot_float.h"

namespace sniper::kernels_internal {

namespace {

using V = x86::Vec16x2;
constexpr int64_t kTokenBlock = 16;
constexpr int64_t kRowGroup = 8;

// ggml_vec_dot_f32 of NV 16-lane vectors with y (NV % 4 == 0).
template <int NV>
inline float dot_rows(const V::T* x, const float* y) {
  V::T acc[4] = {V::zero(), V::zero(), V::zero(), V::zero()};
  for (int b = 0; b < NV; ++b) acc[b % 4] = V::fmadd(x[b], V::load_f32(y + 16 * b), acc[b % 4]);
  return V::reduce(V::add(V::add(acc[0], acc[2]), V::add(acc[1], acc[3])));
}

template <int NV>
inline float row_step(float* row, const float* q, const float* k, float v_c, __m256 vdecay, float beta, float scale) {
  V::T x[NV];
  for (int b = 0; b < NV; ++b) {
    const V::T r = V::load_f32(row + 16 * b);
    x[b] = {_mm256_mul_ps(r.lo, vdecay), _mm256_mul_ps(r.hi, vdecay)};
  }
  const float u = (v_c - dot_rows<NV>(x, k)) * beta;
  const V::T vu = {_mm256_set1_ps(u), _mm256_set1_ps(u)};
  for (int b = 0; b < NV; ++b) {
    x[b] = V::fmadd(V::load_f32(k + 16 * b), vu, x[b]);
    _mm256_storeu_ps(row + 16 * b, x[b].lo);
    _mm256_storeu_ps(row + 16 * b + 8, x[b].hi);
  }
  return dot_rows<NV>(x, q) * scale;
}

template <int NV>
void head_block(float* s, const DeltaNetArgs& a, int64_t j, int64_t kh, int64_t t0, int64_t t1, float scale) {
  constexpr int64_t d = 16 * NV;
  __m256 decay[kTokenBlock];
  float beta[kTokenBlock];
  alignas(32) float qk[kTokenBlock][2][d];
  for (int64_t t = t0; t < t1; ++t) {
    decay[t - t0] = _mm256_set1_ps(std::exp(a.g[t * a.gb_stride + j]));
    beta[t - t0] = a.beta[t * a.gb_stride + j];
    for (int64_t i = 0; i < d; i += 8) {
      _mm256_store_ps(qk[t - t0][0] + i, _mm256_loadu_ps(a.q + t * a.q_stride + kh * d + i));
      _mm256_store_ps(qk[t - t0][1] + i, _mm256_loadu_ps(a.k + t * a.k_stride + kh * d + i));
    }
  }
  for (int64_t c0 = 0; c0 < d; c0 += kRowGroup) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* v = a.v + t * a.v_stride + j * d;
      float* o = a.out + t * a.out_stride + j * d;
      for (int64_t c = c0; c < c0 + kRowGroup; ++c) {
        o[c] = row_step<NV>(s + c * d, qk[t - t0][0], qk[t - t0][1], v[c], decay[t - t0], beta[t - t0], scale);
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

void delta_net_avx2(const DeltaNetArgs& a, int64_t head_begin, int64_t head_end) {
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
