// SPDX-License-Identifier: MIT
// The row-lane gemm (gemm_rows512.h) for Q4_K: each output equals
// dot_q4_K_q8_K_superblock_order_ref (quant/q4_k.h) bit for bit.
//
// Four vpdpbusd cover 16 elements of a chunk, a sum that fits 16 bits (|16 * 15 * 127| < 2^15),
// so one vpdpwssd against [scale | 0] words applies the chunk's scale exactly. Per super-block,
// 16 rows and one token that is 64 + 16 integer instructions for 4096 products, against 128 in
// the pair tiles; the mins (8 vpdpwssd of [min | min] words against the token's 16-element sums,
// straight from its block) and the float step (two converts, multiplies and FMAs) add 14. The transposed copy costs 24 shuffles and 24 logic ops
// per 32-byte slice of 16 rows, once per call.
// Include only from AVX-512 TUs.
#pragma once

#include "kernels/x86/gemm_rows512.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_kquants.h).
namespace {

struct Q4KRows {
  // Measured (2 threads, 4096 x 4096): 6 tokens 197 GFLOP/s in the pair tiles against 154 here,
  // 8 tokens 229-232 against 204-266, 64 tokens 275 against 477.
  static constexpr int kMinTokens = 8;

  // One super-block of 16 rows, rows in lanes.
  struct alignas(64) Block {
    __m512i q[8][8];   // [chunk c][dword d]: lane r = row r's elements 32c + 4d .. 32c + 4d + 3 (0..15)
    __m512i sc[8];     // [chunk c]: lane r = [scale c of row r | 0] as words
    __m512i mins[8];   // [chunk c]: lane r = [min c | min c] of row r as words
    __m512 d, dmin;    // lane r = row r's d, dmin
  };

  static void lay_out(const uint8_t* const* row_bytes, int64_t n_sb, Block* blocks) {
    const Q4KScaleConsts sk;
    const __m512i low_mask = _mm512_set1_epi8(0x0F);
    const __m512i low_word = _mm512_set1_epi32(0xFFFF);
    const BlockQ4_K* rows[kRowLanes];
    for (int r = 0; r < kRowLanes; ++r) rows[r] = reinterpret_cast<const BlockQ4_K*>(row_bytes[r]);
    for (int64_t i = 0; i < n_sb; ++i) {
      Block& b = blocks[i];
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
        const __m512i min_lo = _mm512_and_si512(t[4 + p], low_word), min_hi = _mm512_srli_epi32(t[4 + p], 16);
        b.mins[2 * p] = _mm512_or_si512(min_lo, _mm512_slli_epi32(min_lo, 16));
        b.mins[2 * p + 1] = _mm512_or_si512(min_hi, _mm512_slli_epi32(min_hi, 16));
      }
      const size_t block = sizeof(BlockQ4_K) * static_cast<size_t>(i);
      b.d = row_halves(row_bytes, block + offsetof(BlockQ4_K, d));
      b.dmin = row_halves(row_bytes, block + offsetof(BlockQ4_K, dmin));
    }
  }

  // The 16 rows of `blocks` against NT tokens a[t]; row r of token t to out[t * out_stride + r]
  // for the rows in `lanes`.
  template <int NT>
  static void tile(int64_t n_sb, const Block* blocks, const BlockQ8_K* const* a, float* out, int64_t out_stride,
                   __mmask16 lanes) {
    __m512 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n_sb; ++i) {
      const Block& b = blocks[i];
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
        // msum = sum_c min_c * (bsum 2c + bsum 2c + 1): [min c | min c] against the token's two
        // 16-element sums of chunk c, read as one dword of its block.
        __m512i m = _mm512_madd_epi16(b.mins[0], bcast32(a[t][i].bsums));
        for (int c = 1; c < 8; ++c) m = _mm512_dpwssd_epi32(m, b.mins[c], bcast32(a[t][i].bsums + 2 * c));
        const __m512 dy = _mm512_set1_ps(a[t][i].d);
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dy, b.d), _mm512_cvtepi32_ps(isum[t]), acc[t]);
        acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(dy, b.dmin), _mm512_cvtepi32_ps(m), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) _mm512_mask_storeu_ps(out + t * out_stride, lanes, acc[t]);
  }
};

}  // namespace
}  // namespace sniper::x86
