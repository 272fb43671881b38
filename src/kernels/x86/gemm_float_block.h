// SPDX-License-Identifier: MIT
// The batched float gemm (KernelTable::gemm_batched for F32 and F16 weights: ggml's tinyBLAS
// order, one 16-lane accumulator per output over steps of 16, reduced at the end) in register
// blocks of RM weight rows x RN tokens: each weight vector is loaded once for RN tokens and each
// activation vector once for RM rows, where x86_util.h's gemm_entry of DotFloatTiny loads the
// weight once per 4 tokens and every activation once per row. Every output is the same chain of
// fused multiply-adds and the same reduction as DotFloatTiny::dot, so the bits are its bits
// (tests/kernels/matmul_test.cpp compares every tier against the ref tier).
// f16 activations of a token block are widened once into a stack buffer (exact), so the inner
// loop converts only weights; longer rows than kWideMax convert on the fly.
// Include only from ISA translation units (x86_avx2/, x86_avx512/).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/x86/dot_float.h"

namespace sniper::x86 {
namespace {

// Elements of one activation row widened on the stack (RN rows of them): 4 x 8192 floats = 128 KiB.
constexpr int64_t kWideMax = 8192;

// out[t * out_stride + r] for RM consecutive rows at w (w_row_bytes apart) and RN tokens whose
// activations are at a[0..RN) (already loadable by LA); n % 16 == 0.
template <class V, class L, class LA, int RM, int RN>
inline void block_kernel(int64_t n, const uint8_t* w, size_t w_row_bytes, const typename LA::E* const* a, float* out,
                         int64_t out_stride) {
  using T = typename V::T;
  using E = typename L::E;
  const E* wr[RM];
  for (int m = 0; m < RM; ++m) wr[m] = reinterpret_cast<const E*>(w + static_cast<size_t>(m) * w_row_bytes);
  T acc[RM][RN];
  for (int m = 0; m < RM; ++m) {
    for (int t = 0; t < RN; ++t) acc[m][t] = V::zero();
  }
  for (int64_t i = 0; i < n; i += 16) {
    T wv[RM];
    for (int m = 0; m < RM; ++m) wv[m] = L::template load<V>(wr[m] + i);
    for (int t = 0; t < RN; ++t) {
      const T av = LA::template load<V>(a[t] + i);
      for (int m = 0; m < RM; ++m) acc[m][t] = V::fmadd(wv[m], av, acc[m][t]);
    }
  }
  if constexpr (RM == 4 && RN == 4 && requires { V::reduce_4x4(acc, out, out_stride); }) {
    V::reduce_4x4(acc, out, out_stride);  // the 16 reductions side by side: the same trees
  } else {
    for (int t = 0; t < RN; ++t) {
      for (int m = 0; m < RM; ++m) out[t * out_stride + m] = V::reduce(acc[m][t]);
    }
  }
}

// The rows [0, n_rows) x tokens of one block of RN (or fewer, nt) tokens.
template <class V, class L, class LA, int RM, int RN>
inline void block_rows(int64_t n, int64_t n_rows, int nt, const uint8_t* w, size_t w_row_bytes,
                       const typename LA::E* const* a, float* out, int64_t out_stride) {
  int64_t r = 0;
  if (nt == RN) {
    for (; r + RM <= n_rows; r += RM) {
      block_kernel<V, L, LA, RM, RN>(n, w + static_cast<size_t>(r) * w_row_bytes, w_row_bytes, a, out + r, out_stride);
    }
  }
  // Rows past the last whole block, and blocks of fewer tokens: one row at a time.
  const void* ap[RN];
  for (int t = 0; t < nt; ++t) ap[t] = a[t];
  for (; r < n_rows; ++r) {
    const void* wr = w + static_cast<size_t>(r) * w_row_bytes;
    float res[RN];
    int done = 0;
    while (done < nt) {
      const int k = nt - done >= 4 ? 4 : nt - done;
      switch (k) {
        case 1: DotFloatTiny<V, L, LA>::template dot<1>(n, wr, ap + done, res + done); break;
        case 2: DotFloatTiny<V, L, LA>::template dot<2>(n, wr, ap + done, res + done); break;
        case 3: DotFloatTiny<V, L, LA>::template dot<3>(n, wr, ap + done, res + done); break;
        default: DotFloatTiny<V, L, LA>::template dot<4>(n, wr, ap + done, res + done); break;
      }
      done += k;
    }
    for (int t = 0; t < nt; ++t) out[t * out_stride + r] = res[t];
  }
}

// KernelTable::gemm_batched contract with LA the activations' element loader (LoadF32 or LoadF16).
template <class V, class L, class LA, int RM, int RN>
void gemm_tiny_block(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
                     size_t a_row_bytes, float* out, int64_t out_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  constexpr bool kWiden = sizeof(typename LA::E) == 2;
  for (int64_t t0 = 0; t0 < n_tok; t0 += RN) {
    const int nt = static_cast<int>(n_tok - t0 < RN ? n_tok - t0 : RN);
    float* o = out + t0 * out_stride;
    if constexpr (kWiden) {
      if (n <= kWideMax) {
        alignas(64) float wide[RN][kWideMax];
        const float* ap[RN];
        for (int t = 0; t < nt; ++t) {
          const auto* src = reinterpret_cast<const uint16_t*>(ab + static_cast<size_t>(t0 + t) * a_row_bytes);
          for (int64_t i = 0; i < n; i += 16) V::store_f32(wide[t] + i, V::load_f16(src + i));
          ap[t] = wide[t];
        }
        block_rows<V, L, LoadF32, RM, RN>(n, n_rows, nt, wb, w_row_bytes, ap, o, out_stride);
        continue;
      }
    }
    const typename LA::E* ap[RN];
    for (int t = 0; t < nt; ++t) {
      ap[t] = reinterpret_cast<const typename LA::E*>(ab + static_cast<size_t>(t0 + t) * a_row_bytes);
    }
    block_rows<V, L, LA, RM, RN>(n, n_rows, nt, wb, w_row_bytes, ap, o, out_stride);
  }
}

}  // namespace
}  // namespace sniper::x86
