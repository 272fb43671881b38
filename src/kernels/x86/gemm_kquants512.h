// SPDX-License-Identifier: MIT
// Prefill tiles for Q4_K weights on the AVX-512 tier: one weight row against 2..8 tokens with the
// per-token float work packed, bitwise equal to DotQ4_K512 (and so to the ref tier).
// DotQ4_K512 spends more instructions per (row, token, super-block) on float bookkeeping than on
// the integer dot itself: a 512->256 fold, a convert, a scalar d * d_y and its broadcast, one
// 256-bit FMA, and the same again in 128 bits for the mins. Here two tokens share each 512-bit
// fold/convert/multiply/FMA ([token 2p | token 2p+1] in the two 256-bit halves) and four tokens
// share the mins step (one 128-bit block each). Per lane the operations are exactly those of
// DotQ4_K512 — the same integers (integer sums are exact), the same products d_y * d and
// -d_y * dmin rounded once, the same FMA into the same accumulator lane — and the final
// reductions are the same functions, so every token's result is unchanged.
// The activation-only terms (d_y, -d_y and the pairwise bsums of each super-block) are laid out
// once per tile, before the row loop. Include only from AVX-512 TUs.
#pragma once

#include <algorithm>

#include "kernels/x86/dot_kquants512.h"
#include "kernels/x86/matvec_q4_k512.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_kquants.h).
namespace {

// Super-blocks a tile's activation terms can describe (row length up to 64 * 256 elements).
constexpr int kTileMaxSuperBlocks = 64;

// Activation terms of up to 8 tokens (padded to whole pairs and quads by repeating a token).
struct Q8KTileTerms {
  __m512 yd2[kTileMaxSuperBlocks][4];    // [d_y(2p) x8 | d_y(2p+1) x8]
  __m512 nyd4[kTileMaxSuperBlocks][2];   // [-d_y(4q + k) x4 for k < 4]
  __m512i q8s4[kTileMaxSuperBlocks][2];  // [hadd(bsums) of token 4q + k, 8 words, for k < 4]
};

inline void fill_tile_terms(const BlockQ8_K* const* a, int n_pad, int64_t n_sb, Q8KTileTerms& terms) {
  for (int64_t i = 0; i < n_sb; ++i) {
    for (int p = 0; p < n_pad / 2; ++p) {
      terms.yd2[i][p] = _mm512_insertf32x8(_mm512_set1_ps(a[2 * p][i].d), _mm256_set1_ps(a[2 * p + 1][i].d), 1);
    }
    for (int q = 0; q < (n_pad + 3) / 4; ++q) {
      alignas(64) float nyd[16];
      alignas(64) int16_t sums[32];
      for (int k = 0; k < 4; ++k) {
        const BlockQ8_K& b = a[std::min(4 * q + k, n_pad - 1)][i];
        for (int l = 0; l < 4; ++l) nyd[4 * k + l] = -b.d;
        _mm_store_si128(reinterpret_cast<__m128i*>(sums + 8 * k), _mm_hadd_epi16(load128(b.bsums), load128(b.bsums + 8)));
      }
      terms.nyd4[i][q] = _mm512_load_ps(nyd);
      terms.q8s4[i][q] = _mm512_load_si512(sums);
    }
  }
}

// One Q4_K row against NP token pairs (tokens a[0 .. 2 NP)); results to out[0 .. 2 NP).
template <int NP>
void q4_k_row_tile(int64_t n_sb, const BlockQ4_K* w, const BlockQ8_K* const* a, const Q8KTileTerms& terms,
                   float* out, const uint8_t* pf_limit) {
  constexpr int NT = 2 * NP, NQ = (NT + 3) / 4;
  __m512 acc2[NP];
  __m512 accm4[NQ];
  for (int p = 0; p < NP; ++p) acc2[p] = _mm512_setzero_ps();
  for (int q = 0; q < NQ; ++q) accm4[q] = _mm512_setzero_ps();
  const Q4KConsts k;
  for (int64_t i = 0; i < n_sb; ++i) {
    prefetch_ahead(w + i, static_cast<int>(sizeof(BlockQ4_K)), pf_limit);
    __m512i isum[NT];
    const __m128i mins8 = q4_k_superblock_isums<NT>(w[i], a, i, k, isum);
    const __m512 d = _mm512_set1_ps(h2f(w[i].d));
    const __m512 dmin = _mm512_set1_ps(h2f(w[i].dmin));
    const __m512i mins = _mm512_broadcast_i32x4(mins8);
    for (int q = 0; q < NQ; ++q) {
      const __m512 m = _mm512_cvtepi32_ps(_mm512_madd_epi16(mins, terms.q8s4[i][q]));
      accm4[q] = _mm512_fmadd_ps(_mm512_mul_ps(terms.nyd4[i][q], dmin), m, accm4[q]);
    }
    for (int p = 0; p < NP; ++p) {
      const __m512i x = isum[2 * p], y = isum[2 * p + 1];
      const __m512i folded = _mm512_add_epi32(_mm512_shuffle_i64x2(x, y, _MM_SHUFFLE(1, 0, 1, 0)),
                                              _mm512_shuffle_i64x2(x, y, _MM_SHUFFLE(3, 2, 3, 2)));
      acc2[p] = _mm512_fmadd_ps(_mm512_mul_ps(terms.yd2[i][p], d), _mm512_cvtepi32_ps(folded), acc2[p]);
    }
  }
  alignas(64) float m4[NQ][16];
  for (int q = 0; q < NQ; ++q) _mm512_store_ps(m4[q], accm4[q]);
  for (int t = 0; t < NT; ++t) {
    const __m256 a8 = t % 2 == 0 ? _mm512_castps512_ps256(acc2[t / 2]) : _mm512_extractf32x8_ps(acc2[t / 2], 1);
    out[t] = hsum_ps(a8) + hsum4_ps(_mm_load_ps(m4[t / 4] + 4 * (t % 4)));
  }
}

// KernelTable::gemm for Q4_K: tiles of up to 8 tokens through q4_k_row_tile (odd counts padded
// by repeating the last token; its extra result is dropped), a single token through matvec_q4_k,
// over-long rows through DotQ4_K512. Prefetches run ahead across the rows of this call, never
// past them.
void gemm_q4_k_tiles(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
                     size_t a_row_bytes, float* out, int64_t out_stride) {
  const int64_t n_sb = n / 256;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  if (n_tok == 1 && n_sb <= kMatvecMaxSuperBlocks) {
    matvec_q4_k(n, n_rows, wb, w_row_bytes, reinterpret_cast<const BlockQ8_K*>(ab), out);
    return;
  }
  if (n_tok < 2 || n_sb > kTileMaxSuperBlocks) {
    gemm_entry_prefetch<DotQ4_K512>(n, n_rows, n_tok, w, w_row_bytes, a, a_row_bytes, out, out_stride);
    return;
  }
  const uint8_t* w_end = wb + static_cast<size_t>(n_rows) * w_row_bytes;
  Q8KTileTerms terms;
  for (int64_t t0 = 0; t0 < n_tok; t0 += 8) {
    const int nt = static_cast<int>(n_tok - t0 < 8 ? n_tok - t0 : 8);
    const int n_pad = nt + nt % 2;
    const BlockQ8_K* ap[8];
    for (int t = 0; t < n_pad; ++t) {
      ap[t] = reinterpret_cast<const BlockQ8_K*>(ab + static_cast<size_t>(t0 + std::min(t, nt - 1)) * a_row_bytes);
    }
    if (nt == 1) {
      matvec_q4_k(n, n_rows, wb, w_row_bytes, ap[0], out + t0 * out_stride);
      continue;
    }
    fill_tile_terms(ap, n_pad, n_sb, terms);
    float* o = out + t0 * out_stride;
    for (int64_t r = 0; r < n_rows; ++r) {
      const auto* wr = reinterpret_cast<const BlockQ4_K*>(wb + static_cast<size_t>(r) * w_row_bytes);
      float res[8];
      switch (n_pad / 2) {
        case 1: q4_k_row_tile<1>(n_sb, wr, ap, terms, res, w_end); break;
        case 2: q4_k_row_tile<2>(n_sb, wr, ap, terms, res, w_end); break;
        case 3: q4_k_row_tile<3>(n_sb, wr, ap, terms, res, w_end); break;
        default: q4_k_row_tile<4>(n_sb, wr, ap, terms, res, w_end); break;
      }
      for (int t = 0; t < nt; ++t) o[t * out_stride + r] = res[t];
    }
  }
}

}  // namespace
}  // namespace sniper::x86
