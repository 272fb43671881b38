// SPDX-License-Identifier: MIT
// The AVX2 row-lane gemm (gemm_rows256.h) for Q6_K: every output equals vec_dot_q6_K_q8_K_ref
// (quant/q6_k.h), i.e. DotQ6_K (dot_kquants.h), bit for bit. DotQ6_K's i32 lane d holds, per
// super-block, -32 * (bsum 2d * scale 2d + bsum 2d+1 * scale 2d+1) plus, for each 32-element
// chunk c, bytes 4d..4d+3 of the chunk (6-bit values 0..63) against the activations, times scale
// 2c for d < 4 and 2c + 1 for d >= 4 (elements 0..15 and 16..31 of the chunk). Here lane d's sum
// is the same exact i32 for 8 rows at once, times the same d * a.d into float lane d, and the
// lanes are reduced in hsum_ps's order. Include only from AVX2 TUs.
#pragma once

#include "kernels/x86/gemm_rows256.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_kquants.h).
namespace {

struct Q6KRows8 {
  // The transposed copy pays for itself from about this many tokens (the matmul's choice).
  static constexpr int kMinTokens = 8;

  // One super-block of 8 rows, rows in lanes.
  struct alignas(32) Block {
    __m256i q[8][8];   // [chunk c][dword d]: lane r = row r's elements 32c + 4d .. 32c + 4d + 3 (0..63)
    __m256i sc[8][2];  // [chunk c][d >= 4]: lane r = [scale | scale] of row r as words
    __m256i bsc[8];    // [lane d]: lane r = [scale 2d | scale 2d + 1] of row r as words
    __m256 d;          // lane r = row r's d
  };

  static void lay_out(const uint8_t* const* row_bytes, int64_t n_sb, Block* blocks) {
    const __m256i low_mask = _mm256_set1_epi8(0x0F);
    const __m256i two_bits = _mm256_set1_epi8(0x03);
    const BlockQ6_K* rows[kRow8Lanes];
    for (int r = 0; r < kRow8Lanes; ++r) rows[r] = reinterpret_cast<const BlockQ6_K*>(row_bytes[r]);
    for (int64_t i = 0; i < n_sb; ++i) {
      Block& b = blocks[i];
      for (int half = 0; half < 2; ++half) {
        __m256i z[4][8], t[8];  // [k][row]: chunk 4 half + k of each row, decoded as DotQ6_K does
        for (int r = 0; r < kRow8Lanes; ++r) {
          const __m256i qa = load256(rows[r][i].ql + 64 * half);
          const __m256i qb = load256(rows[r][i].ql + 64 * half + 32);
          const __m256i qh = load256(rows[r][i].qh + 32 * half);
          z[0][r] =
              _mm256_or_si256(_mm256_and_si256(qa, low_mask), _mm256_slli_epi16(_mm256_and_si256(qh, two_bits), 4));
          z[1][r] = _mm256_or_si256(_mm256_and_si256(qb, low_mask),
                                    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), two_bits), 4));
          z[2][r] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qa, 4), low_mask),
                                    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), two_bits), 4));
          z[3][r] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qb, 4), low_mask),
                                    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), two_bits), 4));
        }
        for (int k = 0; k < 4; ++k) {
          transpose_8x8(z[k], t);
          for (int d = 0; d < 8; ++d) b.q[4 * half + k][d] = t[d];
        }
      }
      alignas(32) uint32_t sc_words[8][2][8], bsc_words[8][8];  // [..][row]
      alignas(32) float d[8];
      for (int r = 0; r < kRow8Lanes; ++r) {
        const int8_t* sc = rows[r][i].scales;
        auto word = [](int8_t v) { return static_cast<uint32_t>(static_cast<uint16_t>(static_cast<int16_t>(v))); };
        for (int c = 0; c < 8; ++c) {
          sc_words[c][0][r] = word(sc[2 * c]) * 0x10001u;
          sc_words[c][1][r] = word(sc[2 * c + 1]) * 0x10001u;
          bsc_words[c][r] = word(sc[2 * c]) | word(sc[2 * c + 1]) << 16;
        }
        d[r] = h2f(rows[r][i].d);
      }
      for (int c = 0; c < 8; ++c) {
        b.sc[c][0] = load256(sc_words[c][0]);
        b.sc[c][1] = load256(sc_words[c][1]);
        b.bsc[c] = load256(bsc_words[c]);
      }
      b.d = _mm256_load_ps(d);
    }
  }

  // The 8 rows of `blocks` against NT tokens a[t]; row r of token t to out[t * out_stride + r]
  // for r < n_lanes.
  template <int NT>
  static void tile(int64_t n_sb, const Block* blocks, const BlockQ8_K* const* a, float* out, int64_t out_stride,
                   int n_lanes) {
    __m256 acc[NT][8];
    for (int t = 0; t < NT; ++t) {
      for (int d = 0; d < 8; ++d) acc[t][d] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < n_sb; ++i) {
      const Block& b = blocks[i];
      __m256 dd[NT];
      for (int t = 0; t < NT; ++t) dd[t] = _mm256_mul_ps(_mm256_set1_ps(a[t][i].d), b.d);
      for (int d = 0; d < 8; ++d) {
        __m256i isum[NT];
        for (int t = 0; t < NT; ++t) {
          // 32 * (scale 2d * bsum 2d + scale 2d+1 * bsum 2d+1), subtracted up front.
          const __m256i bs = _mm256_madd_epi16(b.bsc[d], bcast32_256(a[t][i].bsums + 2 * d));
          isum[t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(bs, 5));
        }
        add_lane_sums<NT>(
            b.q, d, [&b, d](int c) { return b.sc[c][d >= 4 ? 1 : 0]; }, a, i, isum);
        for (int t = 0; t < NT; ++t) acc[t][d] = _mm256_fmadd_ps(dd[t], _mm256_cvtepi32_ps(isum[t]), acc[t][d]);
      }
    }
    for (int t = 0; t < NT; ++t) store_rows8(out + t * out_stride, hsum8_lanes(acc[t]), n_lanes);
  }
};

}  // namespace
}  // namespace sniper::x86
