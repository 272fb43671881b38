// SPDX-License-Identifier: MIT
// The row-lane gemm (gemm_rows512.h) for Q4_K: each output equals vec_dot_q4_K_q8_K_ref
// (quant/q4_k.h), i.e. ggml's AVX2 vec_dot order that the reference engine runs for a batch of
// any size (llamafile's tinyBLAS takes no K-quant, so its mul_mat goes through vec_dot), bit
// for bit. An earlier single-accumulator super-block order differed by rounding only, which a
// 256-token prompt carried to a per-row NMSE of 4.6e-4 (syn-qwen3-Q4_K_M) and 4e-3 (MoE).
//
// ggml keeps 8 float lanes per output, lane d holding bytes 4d..4d+3 of every 32-element chunk
// times the chunk's scale (integer sum per super-block, then one FMA with d), and 4 float lanes
// for the mins (a pair of chunks each). Here one vpmaddubsw gives lane d's 4 products of one
// chunk for 16 rows as two words of 2 products (no accumulator register to clear, unlike
// vpdpbusd), and one vpdpwssd against [scale | scale] words adds them times the chunk's scale
// into lane d's exact integer sum. Per super-block, 16 rows and one token that is 64
// + 64 integer instructions for 4096 products, against 128 in the pair tiles; the mins (8
// vpdpwssd of [min | min] words against the token's 16-element sums, straight from its block)
// and the float step (12 converts and FMAs) add 24. The transposed copy costs 24 shuffles and 24
// logic ops per 32-byte slice of 16 rows, once per call.
// Include only from AVX-512 TUs.
#pragma once

#include "kernels/x86/gemm_rows512.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_kquants.h).
namespace {

struct Q4KRows {
  // Measured before the kernel took ggml's lane order (2 threads, 4096 x 4096): 6 tokens 197
  // GFLOP/s in the pair tiles against 154 here, 8 tokens 229-232 against 204-266. In ggml's
  // order (1 thread, 64 tokens, best of 6 on a shared host): 149 in the pair tiles, 217 here,
  // 359 in the former single-accumulator order. The threshold was not measured again.
  static constexpr int kMinTokens = 8;

  // One super-block of 16 rows, rows in lanes.
  struct alignas(64) Block {
    __m512i q[8][8];  // [chunk c][dword d]: lane r = row r's elements 32c + 4d .. 32c + 4d + 3 (0..15)
    __m512i sc[8];    // [chunk c]: lane r = [scale c | scale c] of row r as words
    __m512i mins[8];  // [chunk c]: lane r = [min c | min c] of row r as words
    __m512 d, dmin;   // lane r = row r's d, dmin
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
        const __m512i sc_lo = _mm512_and_si512(t[p], low_word), sc_hi = _mm512_srli_epi32(t[p], 16);
        b.sc[2 * p] = _mm512_or_si512(sc_lo, _mm512_slli_epi32(sc_lo, 16));
        b.sc[2 * p + 1] = _mm512_or_si512(sc_hi, _mm512_slli_epi32(sc_hi, 16));
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
  // for the rows in `lanes`. ggml's order per output: 8 float accumulators (lane d: bytes
  // 4d..4d+3 of every chunk) and 4 for the mins (chunk pair m), reduced at the end.
  template <int NT>
  static void tile(int64_t n_sb, const Block* blocks, const BlockQ8_K* const* a, float* out, int64_t out_stride,
                   __mmask16 lanes) {
    __m512 acc[NT][8], acc_m[NT][4];
    for (int t = 0; t < NT; ++t) {
      for (int d = 0; d < 8; ++d) acc[t][d] = _mm512_setzero_ps();
      for (int m = 0; m < 4; ++m) acc_m[t][m] = _mm512_setzero_ps();
    }
    for (int64_t i = 0; i < n_sb; ++i) {
      const Block& b = blocks[i];
      __m512 dd[NT];
      for (int t = 0; t < NT; ++t) dd[t] = _mm512_mul_ps(_mm512_set1_ps(a[t][i].d), b.d);
      for (int d = 0; d < 8; ++d) {
        __m512i isum[NT];
        for (int t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
        for (int c = 0; c < 8; ++c) {
          const __m512i w = b.q[c][d], sc = b.sc[c];
          for (int t = 0; t < NT; ++t) {
            // Two words of 2 products each (|sum| < 2^12), times the chunk's scale, summed exactly
            // into the lane's int32.
            const __m512i x = _mm512_maddubs_epi16(w, bcast32(a[t][i].qs + 32 * c + 4 * d));
            isum[t] = _mm512_dpwssd_epi32(isum[t], x, sc);
          }
        }
        for (int t = 0; t < NT; ++t) acc[t][d] = _mm512_fmadd_ps(dd[t], _mm512_cvtepi32_ps(isum[t]), acc[t][d]);
      }
      for (int t = 0; t < NT; ++t) {
        // Chunk pair m: min 2m * (bsum 4m + bsum 4m + 1) + min 2m+1 * (bsum 4m+2 + bsum 4m+3), from
        // [min c | min c] words against the token's two 16-element sums of chunk c (one dword).
        const __m512 dmin = _mm512_mul_ps(_mm512_set1_ps(a[t][i].d), b.dmin);
        for (int m = 0; m < 4; ++m) {
          __m512i p = _mm512_madd_epi16(b.mins[2 * m], bcast32(a[t][i].bsums + 4 * m));
          p = _mm512_dpwssd_epi32(p, b.mins[2 * m + 1], bcast32(a[t][i].bsums + 4 * m + 2));
          acc_m[t][m] = _mm512_fnmadd_ps(dmin, _mm512_cvtepi32_ps(p), acc_m[t][m]);
        }
      }
    }
    for (int t = 0; t < NT; ++t) {
      // hsum8 then hsum4 in ggml's order (quant/lane_order.h).
      const __m512 h0 = _mm512_add_ps(acc[t][4], acc[t][0]), h1 = _mm512_add_ps(acc[t][5], acc[t][1]);
      const __m512 h2 = _mm512_add_ps(acc[t][6], acc[t][2]), h3 = _mm512_add_ps(acc[t][7], acc[t][3]);
      const __m512 s = _mm512_add_ps(_mm512_add_ps(h0, h2), _mm512_add_ps(h1, h3));
      const __m512 sm = _mm512_add_ps(_mm512_add_ps(acc_m[t][0], acc_m[t][2]), _mm512_add_ps(acc_m[t][1], acc_m[t][3]));
      _mm512_mask_storeu_ps(out + t * out_stride, lanes, _mm512_add_ps(s, sm));
    }
  }
};

}  // namespace
}  // namespace sniper::x86
