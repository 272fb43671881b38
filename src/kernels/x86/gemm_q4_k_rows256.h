// SPDX-License-Identifier: MIT
// Row-lane gemm for Q4_K at the AVX2 tier: 8 weight rows in the 8 dword lanes of a ymm, the
// AVX2 form of gemm_rows512.h / gemm_q4_k_rows512.h (read those first).
//
// The pair kernel (dot_kquants.h DotQ4_K) spends, per 32 products of one row and one token, an
// activation load, vpmaddubsw, vpmaddwd and an add, and per super-block and token the scale
// unpacking, nibble split, min term and float step of that one row: about half its instructions
// are not multiplies. Here each super-block of 8 rows is decoded and transposed once per call
// (bytes 4d..4d+3 of chunk c of every row in one ymm, scales and d per row in lanes), and then
// one vpmaddubsw against a broadcast of 4 activation bytes gives 8 rows' products; the float
// step and the min term are shared by the 8 rows.
//
// Every output equals vec_dot_q4_K_q8_K_ref (quant/q4_k.h), i.e. DotQ4_K, bit for bit: per
// super-block lane d's integer sum is the same exact i32 (it is only computed in another order),
// it is multiplied by the same d * a.d and fused into the same float lane d; the mins go into the
// same 4 lanes with the same products; and the lanes are reduced in hsum_ps / hsum4_ps's order.
//
// The transposed copy lives on the caller's stack (kRows8MaxSuperBlocks blocks, 126 KB).
// Include only from AVX2 TUs.
#pragma once

#include <algorithm>
#include <cstddef>

#include "kernels/x86/dot_kquants.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_kquants.h).
namespace {

constexpr int kRow8Lanes = 8;
// Tokens per inner tile: 8 integer accumulators, a weight register, the chunk's scale and two
// temporaries fit the 16 ymm registers.
constexpr int kRows8TileTokens = 8;
// Longest row taken (48 super-blocks = 12288 elements); longer rows go through the pair kernel.
constexpr int kRows8MaxSuperBlocks = 48;

// Transposes 8 rows of 8 dwords: z[k] is row k; out[d] gets dword d of row r in lane r.
[[gnu::always_inline]] inline void transpose_8x8(const __m256i* z, __m256i* out) {
  __m256i u[8], v[8];
  for (int k = 0; k < 4; ++k) {
    u[2 * k] = _mm256_unpacklo_epi32(z[2 * k], z[2 * k + 1]);      // rows 2k, 2k+1: d0 d1 | d4 d5
    u[2 * k + 1] = _mm256_unpackhi_epi32(z[2 * k], z[2 * k + 1]);  //                 d2 d3 | d6 d7
  }
  for (int h = 0; h < 2; ++h) {  // rows 0..3 (h = 0) and 4..7 (h = 1)
    v[4 * h + 0] = _mm256_unpacklo_epi64(u[4 * h], u[4 * h + 2]);      // d0 | d4
    v[4 * h + 1] = _mm256_unpackhi_epi64(u[4 * h], u[4 * h + 2]);      // d1 | d5
    v[4 * h + 2] = _mm256_unpacklo_epi64(u[4 * h + 1], u[4 * h + 3]);  // d2 | d6
    v[4 * h + 3] = _mm256_unpackhi_epi64(u[4 * h + 1], u[4 * h + 3]);  // d3 | d7
  }
  for (int k = 0; k < 4; ++k) {
    out[k] = _mm256_permute2x128_si256(v[k], v[4 + k], 0x20);
    out[k + 4] = _mm256_permute2x128_si256(v[k], v[4 + k], 0x31);
  }
}

[[gnu::always_inline]] inline __m256i bcast32_256(const void* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

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
        for (int c = 0; c < 8; ++c) {
          const __m256i w = b.q[c][d], sc = b.sc[c];
          for (int t = 0; t < NT; ++t) {
            // Two words of 2 products each (|sum| < 2^12), times the chunk's scale, summed
            // exactly into the lane's int32.
            const __m256i x = _mm256_maddubs_epi16(w, bcast32_256(a[t][i].qs + 32 * c + 4 * d));
            isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(x, sc));
          }
        }
        for (int t = 0; t < NT; ++t) acc[t][d] = _mm256_fmadd_ps(dd[t], _mm256_cvtepi32_ps(isum[t]), acc[t][d]);
      }
      for (int t = 0; t < NT; ++t) {
        // Chunk pair m: min 2m * (bsum 4m + bsum 4m+1) + min 2m+1 * (bsum 4m+2 + bsum 4m+3).
        const __m256 dmin = _mm256_mul_ps(_mm256_set1_ps(a[t][i].d), b.dmin);
        for (int m = 0; m < 4; ++m) {
          const __m256i p = _mm256_add_epi32(_mm256_madd_epi16(b.mins[2 * m], bcast32_256(a[t][i].bsums + 4 * m)),
                                             _mm256_madd_epi16(b.mins[2 * m + 1], bcast32_256(a[t][i].bsums + 4 * m + 2)));
          acc_m[t][m] = _mm256_fnmadd_ps(dmin, _mm256_cvtepi32_ps(p), acc_m[t][m]);
        }
      }
    }
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_lanes), lane);
    for (int t = 0; t < NT; ++t) {
      // hsum_ps then hsum4_ps, lane by lane (dot_kquants.h).
      const __m256 h0 = _mm256_add_ps(acc[t][0], acc[t][4]), h1 = _mm256_add_ps(acc[t][1], acc[t][5]);
      const __m256 h2 = _mm256_add_ps(acc[t][2], acc[t][6]), h3 = _mm256_add_ps(acc[t][3], acc[t][7]);
      const __m256 s = _mm256_add_ps(_mm256_add_ps(h0, h2), _mm256_add_ps(h1, h3));
      const __m256 sm = _mm256_add_ps(_mm256_add_ps(acc_m[t][0], acc_m[t][2]), _mm256_add_ps(acc_m[t][1], acc_m[t][3]));
      const __m256 res = _mm256_add_ps(s, sm);
      if (n_lanes == kRow8Lanes) {
        _mm256_storeu_ps(out + t * out_stride, res);
      } else {
        _mm256_maskstore_ps(out + t * out_stride, keep, res);
      }
    }
  }
};

// KernelTable::gemm_rows for Q4KRows8: rows [0, n_rows) against tokens [0, n_tok) (any n_tok
// >= 1), n / 256 <= kRows8MaxSuperBlocks. A group of fewer than 8 rows repeats its last row in
// the spare lanes and stores only its own.
template <class K>
void gemm_rows8(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
                size_t a_row_bytes, float* out, int64_t out_stride) {
  const int64_t n_sb = n / 256;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  typename K::Block blocks[kRows8MaxSuperBlocks];
  for (int64_t r0 = 0; r0 < n_rows; r0 += kRow8Lanes) {
    const int nr = static_cast<int>(std::min<int64_t>(n_rows - r0, kRow8Lanes));
    const uint8_t* rows[kRow8Lanes];
    for (int r = 0; r < kRow8Lanes; ++r) rows[r] = wb + static_cast<size_t>(r0 + std::min(r, nr - 1)) * w_row_bytes;
    K::lay_out(rows, n_sb, blocks);
    for (int64_t t0 = 0; t0 < n_tok; t0 += kRows8TileTokens) {
      const int nt = static_cast<int>(std::min<int64_t>(n_tok - t0, kRows8TileTokens));
      const BlockQ8_K* at[kRows8TileTokens];
      for (int t = 0; t < nt; ++t) at[t] = reinterpret_cast<const BlockQ8_K*>(ab + static_cast<size_t>(t0 + t) * a_row_bytes);
      float* o = out + t0 * out_stride + r0;
      switch (nt) {
        case 1: K::template tile<1>(n_sb, blocks, at, o, out_stride, nr); break;
        case 2: K::template tile<2>(n_sb, blocks, at, o, out_stride, nr); break;
        case 3: K::template tile<3>(n_sb, blocks, at, o, out_stride, nr); break;
        case 4: K::template tile<4>(n_sb, blocks, at, o, out_stride, nr); break;
        case 5: K::template tile<5>(n_sb, blocks, at, o, out_stride, nr); break;
        case 6: K::template tile<6>(n_sb, blocks, at, o, out_stride, nr); break;
        case 7: K::template tile<7>(n_sb, blocks, at, o, out_stride, nr); break;
        default: K::template tile<8>(n_sb, blocks, at, o, out_stride, nr); break;
      }
    }
  }
}

}  // namespace
}  // namespace sniper::x86
