// SPDX-License-Identifier: MIT
// Flash attention's K scores over an iq4_nl cache at the AVX2 tier (the AVX-512 tier calls it
// too): the AVX2 form of ggml's single-row iq4_nl x q8_0 dot, which llama.cpp's one_chunk calls
// for each cell, over a tile of K rows against a group of q8_0 query rows. Per 32-element block:
// the nibbles looked up in kIq4nlValues (pshufb), 8 i32 lanes of 4 products (maddubs + madd),
// FMA'd as floats with d_q * d_k into one of two accumulators (even / odd blocks); the two are
// added and reduced in hsum_ps's order; an odd last block joins with a scalar FMA. Every score is
// bitwise vec_dot_iq4_nl_q8_0_row_ref (quant/iq4_nl.cpp). Each K row's blocks are decoded once
// for all the query rows of the call.
#include <immintrin.h>

#include <cmath>

#include "base/check.h"
#include "kernels/kernel_registry.h"
#include "kernels/x86/dot_q32.h"
#include "kernels/x86/isa_policies.h"
#include "quant/iq4_nl.h"

namespace sniper::kernels_internal {

namespace {

// K rows of up to kMaxBlocks blocks (head width 512) are decoded once per row.
constexpr int64_t kMaxBlocks = 16;

// The i32 lanes of one block's 32 products.
[[gnu::always_inline]] inline __m256i block_lanes(__m256i w, const BlockQ8_0& a) {
  return x86::dot_s8s8<x86::Avx2Int>(_mm256_setzero_si256(), w, x86::load256(a.qs));
}

float dot_row(int64_t nb, const __m256i* w, const float* dk, const BlockQ8_0* a) {
  __m256 acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 1 < nb; i += 2) {
    const __m256i p1 = block_lanes(w[i], a[i]);
    const __m256i p2 = block_lanes(w[i + 1], a[i + 1]);
    acc1 = _mm256_fmadd_ps(_mm256_set1_ps(x86::h2f(a[i].d) * dk[i]), _mm256_cvtepi32_ps(p1), acc1);
    acc2 = _mm256_fmadd_ps(_mm256_set1_ps(x86::h2f(a[i + 1].d) * dk[i + 1]), _mm256_cvtepi32_ps(p2), acc2);
  }
  float sum = x86::hsum_ps(_mm256_add_ps(acc1, acc2));
  if (i < nb) {
    const int total = x86::hsum_epi32(block_lanes(w[i], a[i]));
    sum = std::fma(x86::h2f(a[i].d) * dk[i], static_cast<float>(total), sum);
  }
  return sum;
}

}  // namespace

void attention_kq_iq4_nl_avx2(int64_t n, int64_t n_rows, int64_t n_heads, const uint8_t* k, size_t k_row_bytes,
                              const uint8_t* q, size_t q_row_bytes, float* scores, int64_t s_stride) {
  CHECK(n % kIQ4_NLBlockSize == 0 && n / kIQ4_NLBlockSize <= kMaxBlocks, "iq4_nl K rows of %ld elements",
        static_cast<long>(n));
  const int64_t nb = n / kIQ4_NLBlockSize;
  __m256i w[kMaxBlocks];
  float dk[kMaxBlocks];
  for (int64_t t = 0; t < n_rows; ++t) {
    const auto* row = reinterpret_cast<const BlockIQ4_NL*>(k + k_row_bytes * static_cast<size_t>(t));
    for (int64_t i = 0; i < nb; ++i) {
      w[i] = x86::FmtIQ4_NL::decode(row[i]);
      dk[i] = x86::h2f(row[i].d);
    }
    for (int64_t r = 0; r < n_heads; ++r) {
      const auto* a = reinterpret_cast<const BlockQ8_0*>(q + q_row_bytes * static_cast<size_t>(r));
      scores[r * s_stride + t] = dot_row(nb, w, dk, a);
    }
  }
}

}  // namespace sniper::kernels_internal
