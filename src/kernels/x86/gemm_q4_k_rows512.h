// SPDX-License-Identifier: MIT
// Q4_K prefill gemm with one weight row per lane (AVX-512 VNNI), in super-block order: each
// output equals dot_q4_K_q8_K_superblock_order_ref (quant/q4_k.h) bit for bit.
//
// Why rows in lanes. The pair tiles of gemm_kquants512.h keep the reference's 8 lanes per output,
// so every 32-element chunk costs a vpmaddubsw (pairs of products to words) and a vpdpwssd (the
// chunk's scale, then pairs to dwords): 32 multiply-adds per instruction. With 16 rows in the 16
// dword lanes, one vpdpbusd multiplies 4 weight bytes of each row by the same 4 activation bytes
// (a broadcast from memory) and adds them into the row's lane: 64 multiply-adds per instruction.
// Four of them cover 16 elements of a chunk, a sum that fits 16 bits (|16 * 15 * 127| < 2^15), so
// one vpdpwssd against [scale | 0] words applies the chunk's scale exactly. Per super-block, 16
// rows and one token that is 64 + 16 integer instructions for 4096 products, against 128 in the
// pair tiles; the mins (4 vpdpwssd against the token's chunk sums) and the float step (two
// converts, multiplies and FMAs) add 10. Each output has a single float accumulator, and its
// 16 rows are one 64-byte store.
//
// The price is a transposed copy of the weights: for each group of 16 rows, every super-block is
// rewritten once per call into a Q4KRowBlock (bytes 4d..4d+3 of chunk c of every row, unpacked to
// 0..15, in one zmm; the scales and mins as words per row; d and dmin as floats per row), 24
// shuffles and 24 logic ops per 32-byte slice of 16 rows, spread over all the tokens of the call.
// The file's bytes are not changed (streamed experts need no other layout), and the copy lives on
// the caller's stack (kRowsMaxSuperBlocks blocks, about 250 KB).
// Include only from AVX-512 TUs.
#pragma once

#include <algorithm>

#include "kernels/x86/dot_kquants512.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_kquants.h).
namespace {

constexpr int kRowLanes = 16;
// Tokens per inner tile: 8 integer and 8 float accumulators, the 4 weight registers of a
// 16-element step and its scale fit the 32 zmm registers.
constexpr int kRowsTileTokens = 8;
// Longest row the row-lane gemm takes (48 super-blocks = 12288 elements); longer rows go through
// the pair tiles.
constexpr int kRowsMaxSuperBlocks = 48;
// Smallest batch that takes the row-lane gemm (the transposed copy is paid once per call).
constexpr int kRowsMinTokens = 8;

// One super-block of 16 rows, rows in lanes.
struct alignas(64) Q4KRowBlock {
  __m512i q[8][8];   // [chunk c][dword d]: lane r = row r's elements 32c + 4d .. 32c + 4d + 3 (bytes 0..15)
  __m512i sc[8];     // [chunk c]: lane r = [scale c of row r | 0] as words
  __m512i mins[4];   // [pair p]: lane r = [min 2p | min 2p + 1] of row r as words
  __m512 d, dmin;    // lane r = row r's d, dmin
};

// Transposes 16 rows of 8 dwords: z[k] holds row k in its low 256 bits and row k + 8 in its high
// 256 bits; out[d] gets dword d of row r in lane r. Three rounds of 8 shuffles.
[[gnu::always_inline]] inline void transpose_16x8(const __m512i* z, __m512i* out) {
  __m512i u[8], v[8];
  for (int k = 0; k < 4; ++k) {
    u[2 * k] = _mm512_unpacklo_epi32(z[2 * k], z[2 * k + 1]);      // rows 2k, 2k+1: d0 d1 | d4 d5
    u[2 * k + 1] = _mm512_unpackhi_epi32(z[2 * k], z[2 * k + 1]);  //                 d2 d3 | d6 d7
  }
  for (int h = 0; h < 2; ++h) {  // rows 0..3 (h = 0) and 4..7 (h = 1) of each 256-bit half
    v[4 * h + 0] = _mm512_unpacklo_epi64(u[4 * h], u[4 * h + 2]);      // d0 | d4
    v[4 * h + 1] = _mm512_unpackhi_epi64(u[4 * h], u[4 * h + 2]);      // d1 | d5
    v[4 * h + 2] = _mm512_unpacklo_epi64(u[4 * h + 1], u[4 * h + 3]);  // d2 | d6
    v[4 * h + 3] = _mm512_unpackhi_epi64(u[4 * h + 1], u[4 * h + 3]);  // d3 | d7
  }
  // v[k] (k < 4) has 128-bit lanes [rows 0-3 dk, rows 0-3 dk+4, rows 8-11 dk, rows 8-11 dk+4],
  // v[4 + k] the same for rows 4-7 and 12-15.
  const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
  const __m512i second = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  for (int k = 0; k < 4; ++k) {
    out[k] = _mm512_permutex2var_epi64(v[k], first, v[4 + k]);
    out[k + 4] = _mm512_permutex2var_epi64(v[k], second, v[4 + k]);
  }
}

// 32 bytes of row `lo` and of row `hi` in one zmm.
[[gnu::always_inline]] inline __m512i two_rows(const uint8_t* lo, const uint8_t* hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(load256(lo)), load256(hi), 1);
}

// Writes blocks[0 .. n_sb) for rows[0 .. 16) (each row n_sb Q4_K blocks).
void lay_out_row_group(const BlockQ4_K* const* rows, int64_t n_sb, Q4KRowBlock* blocks) {
  const Q4KScaleConsts sk;
  const __m512i low_mask = _mm512_set1_epi8(0x0F);
  const __m512i low_word = _mm512_set1_epi32(0xFFFF);
  for (int64_t i = 0; i < n_sb; ++i) {
    Q4KRowBlock& b = blocks[i];
    __m512i z[8], t[8];
    for (int j = 0; j < 4; ++j) {
      // Bytes 32j..32j+31: low nibbles are chunk 2j, high nibbles chunk 2j + 1.
      for (int k = 0; k < 8; ++k) z[k] = two_rows(rows[k][i].qs + 32 * j, rows[k + 8][i].qs + 32 * j);
      transpose_16x8(z, t);
      for (int d = 0; d < 8; ++d) {
        b.q[2 * j][d] = _mm512_and_si512(t[d], low_mask);
        b.q[2 * j + 1][d] = _mm512_and_si512(_mm512_srli_epi16(t[d], 4), low_mask);
      }
    }
    // Scale words: dword p < 4 = [scale 2p | scale 2p + 1], dword 4 + p = [min 2p | min 2p + 1].
    for (int k = 0; k < 8; ++k) {
      z[k] = _mm512_inserti64x4(_mm512_castsi256_si512(q4_k_scale_words(rows[k][i].scales, sk)),
                                q4_k_scale_words(rows[k + 8][i].scales, sk), 1);
    }
    transpose_16x8(z, t);
    for (int p = 0; p < 4; ++p) {
      b.sc[2 * p] = _mm512_and_si512(t[p], low_word);
      b.sc[2 * p + 1] = _mm512_srli_epi32(t[p], 16);
      b.mins[p] = t[4 + p];
    }
    alignas(32) uint16_t d[kRowLanes], dmin[kRowLanes];
    for (int r = 0; r < kRowLanes; ++r) {
      __builtin_memcpy(&d[r], &rows[r][i].d, 2);
      __builtin_memcpy(&dmin[r], &rows[r][i].dmin, 2);
    }
    b.d = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(d)));
    b.dmin = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(dmin)));
  }
}

// Per token and super-block, the q8 sums of the chunk pairs as the words [sum 2p | sum 2p + 1].
struct Q8KChunkSums {
  int32_t pair[4];
};

void chunk_sums(const BlockQ8_K* a, int64_t n_sb, Q8KChunkSums* out) {
  for (int64_t i = 0; i < n_sb; ++i) {
    // Each chunk sum is two 16-element sums, |sum| <= 32 * 127: it fits a word.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out[i].pair), _mm_hadd_epi16(load128(a[i].bsums), load128(a[i].bsums + 8)));
  }
}

[[gnu::always_inline]] inline __m512i bcast32(const void* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// The 16 rows of `blocks` against NT tokens a[t] (sums[t]: their chunk sums); row r of token t to
// out[t * out_stride + r] for the rows in `lanes`.
template <int NT>
void q4_k_rows_tile(int64_t n_sb, const Q4KRowBlock* blocks, const BlockQ8_K* const* a, const Q8KChunkSums* const* sums,
                    float* out, int64_t out_stride, __mmask16 lanes) {
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t i = 0; i < n_sb; ++i) {
    const Q4KRowBlock& b = blocks[i];
    __m512i isum[NT];
    for (int t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
    for (int c = 0; c < 8; ++c) {
      for (int half = 0; half < 2; ++half) {
        const __m512i w0 = b.q[c][4 * half], w1 = b.q[c][4 * half + 1];
        const __m512i w2 = b.q[c][4 * half + 2], w3 = b.q[c][4 * half + 3];
        for (int t = 0; t < NT; ++t) {
          const int8_t* y = a[t][i].qs + 32 * c + 16 * half;
          __m512i x = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w0, bcast32(y));
          x = _mm512_dpbusd_epi32(x, w1, bcast32(y + 4));
          x = _mm512_dpbusd_epi32(x, w2, bcast32(y + 8));
          x = _mm512_dpbusd_epi32(x, w3, bcast32(y + 12));
          isum[t] = _mm512_dpwssd_epi32(isum[t], x, b.sc[c]);
        }
      }
    }
    for (int t = 0; t < NT; ++t) {
      __m512i m = _mm512_dpwssd_epi32(_mm512_setzero_si512(), b.mins[0], _mm512_set1_epi32(sums[t][i].pair[0]));
      for (int p = 1; p < 4; ++p) m = _mm512_dpwssd_epi32(m, b.mins[p], _mm512_set1_epi32(sums[t][i].pair[p]));
      const __m512 dy = _mm512_set1_ps(a[t][i].d);
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dy, b.d), _mm512_cvtepi32_ps(isum[t]), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(dy, b.dmin), _mm512_cvtepi32_ps(m), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_mask_storeu_ps(out + t * out_stride, lanes, acc[t]);
}

// KernelTable::gemm_rows for Q4_K: rows [0, n_rows) against tokens [0, n_tok) (any n_tok >= 1),
// n / 256 <= kRowsMaxSuperBlocks. A group of fewer than 16 rows repeats its last row in the
// spare lanes and stores only its own.
void gemm_q4_k_rows(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
                    size_t a_row_bytes, float* out, int64_t out_stride) {
  const int64_t n_sb = n / 256;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  Q4KRowBlock blocks[kRowsMaxSuperBlocks];
  for (int64_t r0 = 0; r0 < n_rows; r0 += kRowLanes) {
    const int nr = static_cast<int>(std::min<int64_t>(n_rows - r0, kRowLanes));
    const BlockQ4_K* rows[kRowLanes];
    for (int r = 0; r < kRowLanes; ++r) {
      rows[r] = reinterpret_cast<const BlockQ4_K*>(wb + static_cast<size_t>(r0 + std::min(r, nr - 1)) * w_row_bytes);
    }
    lay_out_row_group(rows, n_sb, blocks);
    const __mmask16 lanes = static_cast<__mmask16>((1u << nr) - 1);
    for (int64_t t0 = 0; t0 < n_tok; t0 += kRowsTileTokens) {
      const int nt = static_cast<int>(std::min<int64_t>(n_tok - t0, kRowsTileTokens));
      const BlockQ8_K* at[kRowsTileTokens];
      Q8KChunkSums sums_store[kRowsTileTokens][kRowsMaxSuperBlocks];
      const Q8KChunkSums* sums[kRowsTileTokens];
      for (int t = 0; t < nt; ++t) {
        at[t] = reinterpret_cast<const BlockQ8_K*>(ab + static_cast<size_t>(t0 + t) * a_row_bytes);
        chunk_sums(at[t], n_sb, sums_store[t]);
        sums[t] = sums_store[t];
      }
      float* o = out + t0 * out_stride + r0;
      switch (nt) {
        case 1: q4_k_rows_tile<1>(n_sb, blocks, at, sums, o, out_stride, lanes); break;
        case 2: q4_k_rows_tile<2>(n_sb, blocks, at, sums, o, out_stride, lanes); break;
        case 3: q4_k_rows_tile<3>(n_sb, blocks, at, sums, o, out_stride, lanes); break;
        case 4: q4_k_rows_tile<4>(n_sb, blocks, at, sums, o, out_stride, lanes); break;
        case 5: q4_k_rows_tile<5>(n_sb, blocks, at, sums, o, out_stride, lanes); break;
        case 6: q4_k_rows_tile<6>(n_sb, blocks, at, sums, o, out_stride, lanes); break;
        case 7: q4_k_rows_tile<7>(n_sb, blocks, at, sums, o, out_stride, lanes); break;
        default: q4_k_rows_tile<8>(n_sb, blocks, at, sums, o, out_stride, lanes); break;
      }
    }
  }
}

}  // namespace
}  // namespace sniper::x86
