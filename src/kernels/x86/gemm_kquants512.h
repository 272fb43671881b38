// SPDX-License-Identifier: MIT
// Prefill tiles for the two Q4_K_M formats (Q4_K, Q6_K) on the AVX-512 tier: one weight row
// against 2..8 tokens, bitwise equal to DotQ4_K512 / DotQ6_K512 (and so to the ref tier).
//
// The one-token kernels hold a token's super-block sums in 16 lanes (two 32-element chunks side
// by side) and spend as many instructions per (row, token, super-block) on float bookkeeping as
// on the integer dot: a 512 -> 256 fold, a convert, a scalar d * d_y and its broadcast, a 256-bit
// FMA. Here each zmm holds one 32-element chunk for a pair of tokens instead:
//  - The activations are laid out once per tile (Q8KPairBlock: per super-block, chunk and token
//    pair, [token 2p's 32 bytes | token 2p+1's]).
//  - The weight chunk is broadcast to both 256-bit halves, and its per-16-element (Q6_K) or
//    per-32-element (Q4_K) scales with it, so the 8 int32 lanes of each half sum exactly the
//    products of the reference's 8 lanes for its token (integer sums are exact in any order):
//    the pair's sums come out [token 2p | token 2p+1] with no fold, and one 512-bit convert,
//    multiply (d_y * d, rounded once as in the reference) and FMA serve both tokens.
//  - Q4_K's mins term goes four tokens to a zmm (one 128-bit block each), as the reference's
//    128-bit accumulator; Q6_K's -32 offset is folded into the starting sums, per lane the
//    reference's 32 * (sc[2k] * bsums[2k] + sc[2k+1] * bsums[2k+1]).
// Per lane the float operations are those of the one-token kernels and the final reductions are
// the same functions, so every token's result is unchanged. Against the Q4_K tile before it
// (16 lanes per token, then a fold per token pair) the integer work is the same 64 vector ops per
// super-block and 8 tokens, and the rest drops from about 55 to about 40. The activation-only
// terms (d_y, -d_y and the bsums of each super-block) are laid out once per tile, before the row
// loop. Include only from AVX-512 TUs.
#pragma once

#include <algorithm>

#include "kernels/x86/dot_kquants512.h"
#include "kernels/x86/matvec_q4_k512.h"
#include "kernels/x86/matvec_q5_k512.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_kquants.h).
namespace {

// Super-blocks a tile can describe (row length up to 64 * 256 elements; longer rows go through
// the one-token kernels). A tile's activations and terms, 176 KB, live on the caller's stack.
constexpr int kTileMaxSuperBlocks = 64;

// Tokens per tile (4 pairs: with the accumulators and the weight chunk, the row loop fits the 32
// zmm registers; 16-token tiles were no faster, their activations spill out of L1).
constexpr int kPairTileTokens = 8;

// Activations of up to 8 tokens: per super-block, 32-element chunk c and token pair p, the 64
// bytes [token 2p's 32 bytes of chunk c | token 2p+1's].
struct alignas(64) Q8KPairBlock {
  int8_t qs[8][kPairTileTokens / 2][64];
};

// Activation terms of up to 8 tokens (padded to whole pairs and quads by repeating a token).
struct Q8KTileTerms {
  __m512 yd2[kTileMaxSuperBlocks][4];      // [d_y(2p) x8 | d_y(2p+1) x8]
  __m512 nyd4[kTileMaxSuperBlocks][2];     // Q4_K, Q5_K: [-d_y(4q + k) x4 for k < 4]
  __m512i q8s4[kTileMaxSuperBlocks][2];    // Q4_K, Q5_K: [hadd(bsums) of token 4q + k, 8 words, for k < 4]
  __m512i nbsum2[kTileMaxSuperBlocks][4];  // Q6_K, Q2_K: [-bsums of token 2p, 16 words | of token 2p+1]
};

// Lays out tokens a[0 .. n_pad) (n_pad even) for the row tiles of kType.
template <GgmlType kType>
void lay_out_tile(const BlockQ8_K* const* a, int n_pad, int64_t n_sb, Q8KPairBlock* acts, Q8KTileTerms& terms) {
  for (int64_t i = 0; i < n_sb; ++i) {
    for (int c = 0; c < 8; ++c) {
      for (int p = 0; p < n_pad / 2; ++p) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(acts[i].qs[c][p]), load256(a[2 * p][i].qs + 32 * c));
        _mm256_store_si256(reinterpret_cast<__m256i*>(acts[i].qs[c][p] + 32), load256(a[2 * p + 1][i].qs + 32 * c));
      }
    }
    for (int p = 0; p < n_pad / 2; ++p) {
      terms.yd2[i][p] = _mm512_insertf32x8(_mm512_set1_ps(a[2 * p][i].d), _mm256_set1_ps(a[2 * p + 1][i].d), 1);
      if constexpr (kType == GgmlType::kQ6_K || kType == GgmlType::kQ2_K) {
        // -bsums: each is a sum of 16 int8, in [-2048, 2032], so its negation fits 16 bits.
        const __m512i b =
            _mm512_inserti64x4(_mm512_castsi256_si512(load256(a[2 * p][i].bsums)), load256(a[2 * p + 1][i].bsums), 1);
        terms.nbsum2[i][p] = _mm512_sub_epi16(_mm512_setzero_si512(), b);
      }
    }
    if constexpr (kType == GgmlType::kQ4_K || kType == GgmlType::kQ5_K) {
      for (int q = 0; q < (n_pad + 3) / 4; ++q) {
        alignas(64) float nyd[16];
        alignas(64) int16_t sums[32];
        for (int k = 0; k < 4; ++k) {
          const BlockQ8_K& b = a[std::min(4 * q + k, n_pad - 1)][i];
          for (int l = 0; l < 4; ++l) nyd[4 * k + l] = -b.d;
          _mm_store_si128(reinterpret_cast<__m128i*>(sums + 8 * k),
                          _mm_hadd_epi16(load128(b.bsums), load128(b.bsums + 8)));
        }
        terms.nyd4[i][q] = _mm512_load_ps(nyd);
        terms.q8s4[i][q] = _mm512_load_si512(sums);
      }
    }
  }
}

// How a row tile's min term ends: none (Q6_K), Q4_K's 4-lane accumulator reduced by hsum4, or
// Q5_K's scalar (the first of its 4 lanes, which all hold it).
enum class TileMins { kNone, kLanes4, kScalar };

// The results of a row tile: token 2p's reference accumulator is the low half of acc2[p], token
// 2p+1's the high half; accm4 holds the mins accumulators, four tokens per zmm.
template <int NP, TileMins kMins>
void store_tile_results(const __m512* acc2, const __m512* accm4, float* out) {
  constexpr int NT = 2 * NP, NQ = (NT + 3) / 4;
  alignas(64) float m4[NQ][16];
  if constexpr (kMins != TileMins::kNone) {
    for (int q = 0; q < NQ; ++q) _mm512_store_ps(m4[q], accm4[q]);
  }
  for (int t = 0; t < NT; ++t) {
    const __m256 a8 = t % 2 == 0 ? _mm512_castps512_ps256(acc2[t / 2]) : _mm512_extractf32x8_ps(acc2[t / 2], 1);
    const float* m = m4[t / 4] + 4 * (t % 4);
    if constexpr (kMins == TileMins::kNone) out[t] = hsum_ps(a8);
    if constexpr (kMins == TileMins::kLanes4) out[t] = hsum_ps(a8) + hsum4_ps(_mm_load_ps(m));
    if constexpr (kMins == TileMins::kScalar) out[t] = hsum_ps(a8) + m[0];
  }
}

// Row tiles (a tile policy: kType, the type whose activation terms lay_out_tile makes, and
// row<NP>, one weight row against NP token pairs with results to out[0 .. 2 NP)).

// Q4_K and Q5_K: the same scales, mins and d/dmin. Quant bytes 32j..32j+31 hold chunk 2j in their
// low nibbles and chunk 2j + 1 in their high ones; Q5_K adds each value's fifth bit (bit 2j of qh
// for the low nibbles, bit 2j + 1 for the high ones; a 16-bit shift right then left moves bit b
// of every byte to bit 4). The min term: Q4_K's 4-lane accumulator
// (reduced by hsum4), Q5_K's scalar (DotQ5_K's summs: the 4 lanes of min_dot4 summed as integers
// in every lane of the token's 128-bit block, then one FMA).
template <class Block, GgmlType kT>
struct TilesK4 {
  static constexpr GgmlType kType = kT;
  static constexpr bool kFifthBit = kT == GgmlType::kQ5_K;

  template <int NP>
  static void row(int64_t n_sb, const void* wv, const Q8KPairBlock* acts, const Q8KTileTerms& terms, float* out,
                  const uint8_t* pf_limit) {
    constexpr int NQ = (2 * NP + 3) / 4;
    const auto* w = static_cast<const Block*>(wv);
    __m512 acc2[NP];
    __m512 accm4[NQ];
    for (int p = 0; p < NP; ++p) acc2[p] = _mm512_setzero_ps();
    for (int q = 0; q < NQ; ++q) accm4[q] = _mm512_setzero_ps();
    const Q4KScaleConsts sk;
    const __m512i low_mask = _mm512_set1_epi8(0x0F);
    const __m512i bit4 = _mm512_set1_epi8(0x10);
    // Dword s = [scale s | scale s] for s < 8, from the scale words.
    const __m256i dup = _mm256_setr_epi16(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    for (int64_t i = 0; i < n_sb; ++i) {
      prefetch_ahead(w + i, static_cast<int>(sizeof(Block)), pf_limit);
      // Per super-block constants through memory, so that the broadcasts below are loads (load
      // ports only) rather than extracts and shuffles on the one shuffle port: sc[s] = [scale s |
      // scale s] for s < 8, words = the 8 scale then the 8 min words, dm = [d, dmin].
      const __m256i words = q4_k_scale_words(w[i].scales, sk);
      alignas(32) int32_t sc[8];
      alignas(32) int16_t wd[16];
      alignas(16) float dm[4];
      _mm256_store_si256(reinterpret_cast<__m256i*>(sc), _mm256_permutexvar_epi16(dup, words));
      _mm256_store_si256(reinterpret_cast<__m256i*>(wd), words);
      uint32_t d_dmin;
      __builtin_memcpy(&d_dmin, &w[i].d, 4);
      _mm_store_ps(dm, _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(d_dmin))));
      asm("" : "+m"(sc), "+m"(wd), "+m"(dm));  // opaque to the compiler: it reloads rather than forwards
      __m512i qh = _mm512_setzero_si512();
      if constexpr (kFifthBit) qh = _mm512_broadcast_i64x4(load256(w[i].qh));
      __m512i isum[NP];
      for (int p = 0; p < NP; ++p) isum[p] = _mm512_setzero_si512();
      for (int j = 0; j < 4; ++j) {
        const __m512i q4 = _mm512_broadcast_i64x4(load256(w[i].qs + 32 * j));
        __m512i lo = _mm512_and_si512(q4, low_mask);
        __m512i hi = _mm512_and_si512(_mm512_srli_epi16(q4, 4), low_mask);
        if constexpr (kFifthBit) {  // | ((qh >> b) << 4 & 0x10): ternary logic 0xF8 = a | (b & c)
          lo = _mm512_ternarylogic_epi32(lo, _mm512_slli_epi16(_mm512_srli_epi16(qh, 2 * j), 4), bit4, 0xF8);
          hi = _mm512_ternarylogic_epi32(hi, _mm512_slli_epi16(_mm512_srli_epi16(qh, 2 * j + 1), 4), bit4, 0xF8);
        }
        const __m512i s_lo = _mm512_set1_epi32(sc[2 * j]);
        const __m512i s_hi = _mm512_set1_epi32(sc[2 * j + 1]);
        for (int p = 0; p < NP; ++p) {
          isum[p] =
              _mm512_dpwssd_epi32(isum[p], _mm512_maddubs_epi16(lo, _mm512_load_si512(acts[i].qs[2 * j][p])), s_lo);
          isum[p] =
              _mm512_dpwssd_epi32(isum[p], _mm512_maddubs_epi16(hi, _mm512_load_si512(acts[i].qs[2 * j + 1][p])), s_hi);
        }
      }
      const __m512 d = _mm512_set1_ps(dm[0]);
      const __m512 dmin = _mm512_set1_ps(dm[1]);
      const __m512i mins = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(wd + 8)));
      for (int q = 0; q < NQ; ++q) {
        __m512i m = _mm512_madd_epi16(mins, terms.q8s4[i][q]);
        if constexpr (kFifthBit) {
          m = _mm512_add_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_BADC));
          m = _mm512_add_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_CDAB));
        }
        accm4[q] = _mm512_fmadd_ps(_mm512_mul_ps(terms.nyd4[i][q], dmin), _mm512_cvtepi32_ps(m), accm4[q]);
      }
      for (int p = 0; p < NP; ++p) {
        acc2[p] = _mm512_fmadd_ps(_mm512_mul_ps(terms.yd2[i][p], d), _mm512_cvtepi32_ps(isum[p]), acc2[p]);
      }
    }
    store_tile_results<NP, kFifthBit ? TileMins::kScalar : TileMins::kLanes4>(acc2, accm4, out);
  }
};
using TilesQ4_K = TilesK4<BlockQ4_K, GgmlType::kQ4_K>;
using TilesQ5_K = TilesK4<BlockQ5_K, GgmlType::kQ5_K>;

// Scale words of chunk c in both 256-bit halves: [scale of group 2c x8 | of group 2c + 1 x8].
struct ChunkWordIndex {
  __m512i idx[8];
  ChunkWordIndex() {
    for (int c = 0; c < 8; ++c) idx[c] = words_by_quarter(2 * c, 2 * c + 1, 2 * c, 2 * c + 1);
  }
};

// The row tile of a type with one scale per super-block and no min term (Q6_K, Q3_K, IQ4_XS):
// isums(i, isum) writes super-block i's integer sums of the NP token pairs; each is FMA'd into the
// pair's accumulator times d_y * d.
template <int NP, class Block, class Isums>
[[gnu::always_inline]] inline void single_scale_row(int64_t n_sb, const Block* w, const Q8KTileTerms& terms, float* out,
                                                    const uint8_t* pf_limit, Isums&& isums) {
  __m512 acc2[NP];
  for (int p = 0; p < NP; ++p) acc2[p] = _mm512_setzero_ps();
  for (int64_t i = 0; i < n_sb; ++i) {
    prefetch_ahead(w + i, static_cast<int>(sizeof(Block)), pf_limit);
    __m512i isum[NP];
    isums(i, isum);
    const __m512 d = _mm512_set1_ps(h2f(w[i].d));
    for (int p = 0; p < NP; ++p) {
      acc2[p] = _mm512_fmadd_ps(_mm512_mul_ps(terms.yd2[i][p], d), _mm512_cvtepi32_ps(isum[p]), acc2[p]);
    }
  }
  store_tile_results<NP, TileMins::kNone>(acc2, nullptr, out);
}

// One Q6_K row against NP token pairs; results to out[0 .. 2 NP). Chunk c = 4 half + k of a
// super-block (DotQ6_K's q[k] of that half) has 6-bit values (ql nibble | 2 qh bits << 4):
// k = 0: ql[64 half + l] low nibble, qh bits 0-1; k = 1: ql[64 half + 32 + l] low, qh bits 2-3;
// k = 2: ql[64 half + l] high, qh bits 4-5; k = 3: ql[64 half + 32 + l] high, qh bits 6-7; its
// scales are sc[2c] (bytes 0..15) and sc[2c + 1] (16..31).
struct TilesQ6_K {
  static constexpr GgmlType kType = GgmlType::kQ6_K;

  template <int NP>
  static void row(int64_t n_sb, const void* wv, const Q8KPairBlock* acts, const Q8KTileTerms& terms, float* out,
                  const uint8_t* pf_limit) {
    const auto* w = static_cast<const BlockQ6_K*>(wv);
    const __m512i low_mask = _mm512_set1_epi8(0x0F);
    const __m512i six_bits = _mm512_set1_epi8(0x3F);
    const ChunkWordIndex cw;
    single_scale_row<NP>(n_sb, w, terms, out, pf_limit, [&](int64_t i, __m512i* isum) {
      const __m256i sc16 = _mm256_cvtepi8_epi16(load128(w[i].scales));
      const __m512i scw = _mm512_zextsi256_si512(sc16);
      // 32 * sc in 16 bits (|32 * sc| <= 4096): the starting sums are -32 * (sc . bsums) per lane.
      const __m512i sc32 = _mm512_broadcast_i64x4(_mm256_slli_epi16(sc16, 5));
      for (int p = 0; p < NP; ++p) isum[p] = _mm512_madd_epi16(terms.nbsum2[i][p], sc32);
      for (int half = 0; half < 2; ++half) {
        const __m512i qa = _mm512_broadcast_i64x4(load256(w[i].ql + 64 * half));
        const __m512i qb = _mm512_broadcast_i64x4(load256(w[i].ql + 64 * half + 32));
        const __m512i qh = _mm512_broadcast_i64x4(load256(w[i].qh + 32 * half));
        // (low nibble of x | bits 4-7 of y) & 0x3F: y's bits 4-5 are the 2 high bits.
        auto join = [&](__m512i x, __m512i y) {
          return _mm512_and_si512(_mm512_ternarylogic_epi32(low_mask, x, y, 0xCA), six_bits);
        };
        __m512i q[4];
        q[0] = join(qa, _mm512_slli_epi16(qh, 4));
        q[1] = join(qb, _mm512_slli_epi16(qh, 2));
        q[2] = join(_mm512_srli_epi16(qa, 4), qh);
        q[3] = join(_mm512_srli_epi16(qb, 4), _mm512_srli_epi16(qh, 2));
        for (int k = 0; k < 4; ++k) {
          const int c = 4 * half + k;
          const __m512i s = _mm512_permutexvar_epi16(cw.idx[c], scw);
          for (int p = 0; p < NP; ++p) {
            isum[p] = _mm512_dpwssd_epi32(isum[p], _mm512_maddubs_epi16(q[k], _mm512_load_si512(acts[i].qs[c][p])), s);
          }
        }
      }
    });
  }
};

// The tiles of rows [0, n_rows) against tokens [0, n_tok) (n_tok >= 2, n / 256 <=
// kTileMaxSuperBlocks); a tile of one token goes to `one`, the one-token gemm. Odd counts are
// padded by repeating the last token (its extra result is dropped). Prefetches run ahead across
// the rows of this call, never past them.
template <class Tiles, class OneToken>
void gemm_pair_tiles(int64_t n, int64_t n_rows, int64_t n_tok, const uint8_t* wb, size_t w_row_bytes, const uint8_t* ab,
                     size_t a_row_bytes, float* out, int64_t out_stride, OneToken&& one) {
  const int64_t n_sb = n / 256;
  const uint8_t* w_end = wb + static_cast<size_t>(n_rows) * w_row_bytes;
  Q8KTileTerms terms;
  Q8KPairBlock acts[kTileMaxSuperBlocks];
  for (int64_t t0 = 0; t0 < n_tok; t0 += kPairTileTokens) {
    const int nt = static_cast<int>(std::min<int64_t>(n_tok - t0, kPairTileTokens));
    if (nt == 1) {
      one(ab + static_cast<size_t>(t0) * a_row_bytes, out + t0 * out_stride);
      continue;
    }
    const int n_pad = nt + nt % 2;
    const BlockQ8_K* ap[kPairTileTokens];
    for (int t = 0; t < n_pad; ++t) {
      ap[t] = reinterpret_cast<const BlockQ8_K*>(ab + static_cast<size_t>(t0 + std::min(t, nt - 1)) * a_row_bytes);
    }
    lay_out_tile<Tiles::kType>(ap, n_pad, n_sb, acts, terms);
    float* o = out + t0 * out_stride;
    for (int64_t r = 0; r < n_rows; ++r) {
      const uint8_t* wr = wb + static_cast<size_t>(r) * w_row_bytes;
      float res[kPairTileTokens];
      switch (n_pad / 2) {
        case 1: Tiles::template row<1>(n_sb, wr, acts, terms, res, w_end); break;
        case 2: Tiles::template row<2>(n_sb, wr, acts, terms, res, w_end); break;
        case 3: Tiles::template row<3>(n_sb, wr, acts, terms, res, w_end); break;
        default: Tiles::template row<4>(n_sb, wr, acts, terms, res, w_end); break;
      }
      for (int t = 0; t < nt; ++t) o[t * out_stride + r] = res[t];
    }
  }
}

// A one-token matvec over laid-out activations (matvec_q4_k, matvec_q5_k), for rows of up to
// kMatvecMaxSuperBlocks super-blocks.
using MatvecFn = void (*)(int64_t n, int64_t n_rows, const uint8_t* w, size_t w_row_bytes, const BlockQ8_K* a,
                          float* out);

// A gemm entry over the rows of one call: K's dot_prefetch where it has one, else gemm_entry.
template <class K>
void gemm_one_row_kernel(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
                         size_t a_row_bytes, float* out, int64_t out_stride) {
  if constexpr (requires { &K::template dot_prefetch<1>; }) {
    gemm_entry_prefetch<K>(n, n_rows, n_tok, w, w_row_bytes, a, a_row_bytes, out, out_stride);
  } else {
    gemm_entry<K>(n, n_rows, n_tok, w, w_row_bytes, a, a_row_bytes, out, out_stride);
  }
}

// KernelTable::gemm of a K-quant: pair tiles for batches; one token through kMatvec where the
// type has one (and the row fits it), else through the one-row kernel K, which also takes rows
// longer than a tile describes.
template <class Tiles, class K, MatvecFn kMatvec = nullptr>
void gemm_tiles(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
                size_t a_row_bytes, float* out, int64_t out_stride) {
  const int64_t n_sb = n / 256;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  auto one_token = [&](const uint8_t* a1, float* o) {
    if constexpr (kMatvec != nullptr) {
      if (n_sb <= kMatvecMaxSuperBlocks) {
        kMatvec(n, n_rows, wb, w_row_bytes, reinterpret_cast<const BlockQ8_K*>(a1), o);
        return;
      }
    }
    gemm_one_row_kernel<K>(n, n_rows, 1, w, w_row_bytes, a1, a_row_bytes, o, out_stride);
  };
  if (n_tok == 1) {
    one_token(ab, out);
    return;
  }
  if (n_sb > kTileMaxSuperBlocks) {
    gemm_one_row_kernel<K>(n, n_rows, n_tok, w, w_row_bytes, a, a_row_bytes, out, out_stride);
    return;
  }
  gemm_pair_tiles<Tiles>(n, n_rows, n_tok, wb, w_row_bytes, ab, a_row_bytes, out, out_stride, one_token);
}

}  // namespace
}  // namespace sniper::x86
