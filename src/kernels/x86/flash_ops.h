// SPDX-License-Identifier: MIT
// Flash attention's row steps (kernels/ops.h RowOps mad_f32, scale_f32, mad_f16, scale_f16,
// widen_f16, gemm_f32, softmax_mad_f32) once, as templates over an f32 vector policy (x86/isa_policies.h:
// F32x8 for AVX2, F32x16 for AVX-512). Each lane does what the scalar twin does to its element
// (one FMA or one product, f16 rounding to nearest even), tails run the scalar twin's code, so
// every tier gives the same bits (tests/kernels/flash_attention_test.cpp).
// gemm_f32 is ggml's simd_gemm (ggml-cpu/simd-gemm.h): C[m x n] += A[m x k] * B[k x n], each
// element one chain of fused multiply-adds over k in order, started from C's value. Register
// blocks of kGemmRows rows x kGemmVecs vectors only decide which chains run side by side.
// Include only from a translation unit compiled with the policy's ISA flags.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/x86/isa_policies.h"
#include "kernels/x86/libm_expf.h"

namespace sniper::x86 {
namespace {

template <class P>
void mad_f32_t(float* y, const float* x, float v, int64_t n) {
  const auto vv = P::set1(v);
  int64_t i = 0;
  for (; i + P::kLanes <= n; i += P::kLanes) P::store(y + i, P::fmadd(P::load(x + i), vv, P::load(y + i)));
  for (; i < n; ++i) y[i] = std::fma(x[i], v, y[i]);
}

template <class P>
void scale_f32_t(float* y, float v, int64_t n) {
  const auto vv = P::set1(v);
  int64_t i = 0;
  for (; i + P::kLanes <= n; i += P::kLanes) P::store(y + i, P::mul(P::load(y + i), vv));
  for (; i < n; ++i) y[i] *= v;
}

template <class P>
void mad_f16_t(uint16_t* y, const uint16_t* x, float v, int64_t n) {
  const auto vv = P::set1(v);
  int64_t i = 0;
  for (; i + P::kLanes <= n; i += P::kLanes) P::store_f16(y + i, P::fmadd(P::load_f16(x + i), vv, P::load_f16(y + i)));
  for (; i < n; ++i) y[i] = f2h(std::fma(h2f(x[i]), v, h2f(y[i])));
}

template <class P>
void scale_f16_t(uint16_t* y, float v, int64_t n) {
  const auto vv = P::set1(v);
  int64_t i = 0;
  for (; i + P::kLanes <= n; i += P::kLanes) P::store_f16(y + i, P::mul(P::load_f16(y + i), vv));
  for (; i < n; ++i) y[i] = f2h(h2f(y[i]) * v);
}

template <class P>
void widen_f16_t(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + P::kLanes <= n; i += P::kLanes) P::store(y + i, P::load_f16(x + i));
  for (; i < n; ++i) y[i] = h2f(x[i]);
}

// RM rows of C by RN vectors of columns, starting at c (row stride n), over the whole k.
template <class P, int RM, int RN>
inline void gemm_f32_block(float* c, const float* a, const float* b, int64_t k, int64_t n) {
  using V = typename P::V;
  V acc[RM][RN];
  for (int i = 0; i < RM; ++i) {
    for (int r = 0; r < RN; ++r) acc[i][r] = P::load(c + i * n + r * P::kLanes);
  }
  for (int64_t kk = 0; kk < k; ++kk) {
    V bv[RN];
    for (int r = 0; r < RN; ++r) bv[r] = P::load(b + kk * n + r * P::kLanes);
    for (int i = 0; i < RM; ++i) {
      const V p = P::set1(a[i * k + kk]);
      for (int r = 0; r < RN; ++r) acc[i][r] = P::fmadd(p, bv[r], acc[i][r]);
    }
  }
  for (int i = 0; i < RM; ++i) {
    for (int r = 0; r < RN; ++r) P::store(c + i * n + r * P::kLanes, acc[i][r]);
  }
}

// Every column of RM rows: whole register blocks, then single vectors, then scalar chains.
template <class P, int RM>
inline void gemm_f32_rows(float* c, const float* a, const float* b, int64_t k, int64_t n) {
  constexpr int64_t kBlock = P::kGemmVecs * P::kLanes;
  int64_t j = 0;
  for (; j + kBlock <= n; j += kBlock) gemm_f32_block<P, RM, P::kGemmVecs>(c + j, a, b + j, k, n);
  for (; j + P::kLanes <= n; j += P::kLanes) gemm_f32_block<P, RM, 1>(c + j, a, b + j, k, n);
  for (; j < n; ++j) {
    for (int i = 0; i < RM; ++i) {
      float acc = c[i * n + j];
      for (int64_t kk = 0; kk < k; ++kk) acc = std::fma(a[i * k + kk], b[kk * n + j], acc);
      c[i * n + j] = acc;
    }
  }
}

template <class P>
void gemm_f32_t(float* c, const float* a, const float* b, int64_t m, int64_t k, int64_t n) {
  int64_t i = 0;
  for (; i + P::kGemmRows <= m; i += P::kGemmRows) gemm_f32_rows<P, P::kGemmRows>(c + i * n, a + i * k, b, k, n);
  for (; i < m; ++i) gemm_f32_rows<P, 1>(c + i * n, a + i * k, b, k, n);
}

// softmax_mad_f32 over up to kSoftmaxCells cells at a time: first the running maximum (a prefix
// maximum: the scalar twin's comparisons) and each cell's expf argument, the exps four at a time
// with libm's bits (x86/libm_expf.h), then the sum in the twin's order, recording each cell's
// accumulator factor ms (1 where the twin does not scale: x * 1 == x exactly) and weight vs; then
// the accumulator in registers, RN vectors at a time, through the cells in order: acc = acc * ms,
// fma(v, vs, acc).
inline constexpr int64_t kSoftmaxCells = 64;

template <class P, int RN>
inline void softmax_mad_block(float* acc, const float* ms, const float* vs, int64_t n, const float* v, int64_t hd) {
  using V = typename P::V;
  V a[RN];
  for (int r = 0; r < RN; ++r) a[r] = P::load(acc + r * P::kLanes);
  for (int64_t t = 0; t < n; ++t) {
    if (ms[t] != 1.0f) {
      const V s = P::set1(ms[t]);
      for (int r = 0; r < RN; ++r) a[r] = P::mul(a[r], s);
    }
    const V w = P::set1(vs[t]);
    for (int r = 0; r < RN; ++r) a[r] = P::fmadd(P::load(v + t * hd + r * P::kLanes), w, a[r]);
  }
  for (int r = 0; r < RN; ++r) P::store(acc + r * P::kLanes, a[r]);
}

template <class P>
void softmax_mad_f32_t(float* acc, float* m, float* sum, const float* scores, int64_t n, float scale, const float* v,
                       int64_t hd) {
  constexpr int kVecs = 8;  // accumulator vectors held in registers per pass over the cells
  for (int64_t t0 = 0; t0 < n; t0 += kSoftmaxCells) {
    const int64_t nc = n - t0 < kSoftmaxCells ? n - t0 : kSoftmaxCells;
    float ms[kSoftmaxCells], vs[kSoftmaxCells], e[kSoftmaxCells];
    uint8_t kind[kSoftmaxCells];  // 0: below the maximum; 1: a new maximum; 2: the first maximum (from -inf)
    float mx = *m;
    for (int64_t t = 0; t < nc; ++t) {
      const float sc = scores[t0 + t] * scale;
      if (sc > mx) {
        e[t] = mx - sc;
        kind[t] = mx == -INFINITY ? 2 : 1;
        mx = sc;
      } else {
        e[t] = sc - mx;
        kind[t] = 0;
      }
    }
    *m = mx;
    exp_args(e, nc);
    for (int64_t t = 0; t < nc; ++t) {
      const float s_ms = kind[t] != 0 ? e[t] : 1.0f;
      ms[t] = kind[t] == 1 ? e[t] : 1.0f;
      vs[t] = kind[t] != 0 ? 1.0f : e[t];
      *sum = std::fma(*sum, s_ms, vs[t]);
    }
    const float* vt = v + t0 * hd;
    int64_t d = 0;
    for (; d + kVecs * P::kLanes <= hd; d += kVecs * P::kLanes)
      softmax_mad_block<P, kVecs>(acc + d, ms, vs, nc, vt + d, hd);
    for (; d + P::kLanes <= hd; d += P::kLanes) softmax_mad_block<P, 1>(acc + d, ms, vs, nc, vt + d, hd);
    for (; d < hd; ++d) {
      float a = acc[d];
      for (int64_t t = 0; t < nc; ++t) {
        if (ms[t] != 1.0f) a *= ms[t];
        a = std::fma(vt[t * hd + d], vs[t], a);
      }
      acc[d] = a;
    }
  }
}

}  // namespace
}  // namespace sniper::x86
