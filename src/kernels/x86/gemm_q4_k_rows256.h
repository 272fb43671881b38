// SPDX-License-Identifier: MIT
// The AVX2 row-lane gemm (gemm_rows256.h) for Q4_K: every output equals vec_dot_q4_K_q8_K_ref
// (quant/q4_k.h), i.e. DotQ4_K (dot_kquants.h), bit for bit. Per super-block, lane d's integer sum
// (bytes 4d..4d+3 of each 32-element chunk times the chunk's scale) is the same exact i32, times
// the same d * a.d into float lane d; the mins go into the same 4 lanes with the same products;
// the lanes are reduced in hsum_ps / hsum4_ps's order. Include only from AVX2 TUs.
#pragma once

#include "kernels/x86/gemm_rows256.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_kquants.h).
namespace {

struct Q4KRows8 {
  // The transposed copy pays for itself from about this many tokens (the matmul's choice).
  static constexpr int kMinTokens = 8;

  // One super-block of 8 rows, rows in lanes.
  struct alignas(32) Block {
    __m256i q[8][8];  // [chunk c][dword d]: lane r = row r's elements 32c + 4d .. 32c + 4d + 3 (0..15)
    __m256i sc[8];    // [chunk c]: lane r = [scale c | scale c] of row r as words
    __m256i mins[8];  // [chunk c]: lane r = [min c | min c] of row r as words
    __m256 d, dmin;   // lane r = row r's d, dmin
  };

  static void lay_out(const uint8_t* const* row_bytes, int64_t n_sb, Block* blocks) {
    const __m256i low_mask = _mm256_set1_epi8(0x0F);
    const BlockQ4_K* rows[kRow8Lanes];
    for (int r = 0; r < kRow8Lanes; ++r) rows[r] = reinterpret_cast<const BlockQ4_K*>(row_bytes[r]);
    for (int64_t i = 0; i < n_sb; ++i) {
      Block& b = blocks[i];
      __m256i z[8], t[8];
      for (int j = 0; j < 4; ++j) {
        // Bytes 32j..32j+31: low nibbles are chunk 2j, high nibbles chunk 2j + 1.
        for (int k = 0; k < 8; ++k) z[k] = load256(rows[k][i].qs + 32 * j);
        transpose_8x8(z, t);
        for (int d = 0; d < 8; ++d) {
          b.q[2 * j][d] = _mm256_and_si256(t[d], low_mask);
          b.q[2 * j + 1][d] = _mm256_and_si256(_mm256_srli_epi16(t[d], 4), low_mask);
        }
      }
      alignas(32) uint32_t sc_words[8][8], min_words[8][8];  // [chunk][row]
      alignas(32) float d[8], dmin[8];
      for (int r = 0; r < kRow8Lanes; ++r) {
        alignas(16) uint8_t sc[16];
        unpack_scales_k4(rows[r][i].scales, sc);
        for (int c = 0; c < 8; ++c) {
          sc_words[c][r] = static_cast<uint32_t>(sc[c]) * 0x10001u;
          min_words[c][r] = static_cast<uint32_t>(sc[8 + c]) * 0x10001u;
        }
        d[r] = h2f(rows[r][i].d);
        dmin[r] = h2f(rows[r][i].dmin);
      }
      for (int c = 0; c < 8; ++c) {
        b.sc[c] = load256(sc_words[c]);
        b.mins[c] = load256(min_words[c]);
      }
      b.d = _mm256_load_ps(d);
      b.dmin = _mm256_load_ps(dmin);
    }
  }

  // The 8 rows of `blocks` against NT tokens a[t]; row r of token t to out[t * out_stride + r]
  // for r < n_lanes. DotQ4_K's order per output: 8 float accumulators (lane d: bytes 4d..4d+3
  // of every chunk) and 4 for the mins (chunk pair m), reduced at the end.
  template <int NT>
  static void tile(int64_t n_sb, const Block* blocks, const BlockQ8_K* const* a, float* out, int64_t out_stride,
                   int n_lanes) {
    __m256 acc[NT][8], acc_m[NT][4];
    for (int t = 0; t < NT; ++t) {
      for (int d = 0; d < 8; ++d) acc[t][d] = _mm256_setzero_ps();
      for (int m = 0; m < 4; ++m) acc_m[t][m] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < n_sb; ++i) {
      const Block& b = blocks[i];
      __m256 dd[NT];
      for (int t = 0; t < NT; ++t) dd[t] = _mm256_mul_ps(_mm256_set1_ps(a[t][i].d), b.d);
      for (int d = 0; d < 8; ++d) {
        __m256i isum[NT];
        for (int t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
        add_lane_sums<NT>(
            b.q, d, [&b](int c) { return b.sc[c]; }, a, i, isum);
        for (int t = 0; t < NT; ++t) acc[t][d] = _mm256_fmadd_ps(dd[t], _mm256_cvtepi32_ps(isum[t]), acc[t][d]);
      }
      for (int t = 0; t < NT; ++t) {
        // Chunk pair m: min 2m * (bsum 4m + bsum 4m+1) + min 2m+1 * (bsum 4m+2 + bsum 4m+3).
        const __m256 dmin = _mm256_mul_ps(_mm256_set1_ps(a[t][i].d), b.dmin);
        for (int m = 0; m < 4; ++m) {
          const __m256i p =
              _mm256_add_epi32(_mm256_madd_epi16(b.mins[2 * m], bcast32_256(a[t][i].bsums + 4 * m)),
                               _mm256_madd_epi16(b.mins[2 * m + 1], bcast32_256(a[t][i].bsums + 4 * m + 2)));
          acc_m[t][m] = _mm256_fnmadd_ps(dmin, _mm256_cvtepi32_ps(p), acc_m[t][m]);
        }
      }
    }
    for (int t = 0; t < NT; ++t) {
      // hsum_ps then hsum4_ps, lane by lane (dot_kquants.h).
      const __m256 sm = _mm256_add_ps(_mm256_add_ps(acc_m[t][0], acc_m[t][2]), _mm256_add_ps(acc_m[t][1], acc_m[t][3]));
      store_rows8(out + t * out_stride, _mm256_add_ps(hsum8_lanes(acc[t]), sm), n_lanes);
    }
  }
};

}  // namespace
}  // namespace sniper::x86
