// SPDX-License-Identifier: MIT
// Row-lane gemm for the K-quants at the AVX2 tier: 8 weight rows in the 8 dword lanes of a ymm,
// the AVX2 form of gemm_rows512.h (read that first). The kernels are gemm_q4_k_rows256.h and
// gemm_q6_k_rows256.h.
//
// The pair kernels (dot_kquants.h) spend, per 32 products of one row and one token, an activation
// load, vpmaddubsw, vpmaddwd and an add, and per super-block and token the scale unpacking, the
// bit decoding and the float step of that one row: about half their instructions are not
// multiplies. Here each super-block of 8 rows is decoded and transposed once per call (bytes
// 4d..4d+3 of chunk c of every row in one ymm, scales and d per row in lanes), and then one
// vpmaddubsw against a broadcast of 4 activation bytes gives 8 rows' products; the float step
// is shared by the 8 rows. Each kernel's outputs equal its pair kernel's (and its scalar twin's
// in quant/) bit for bit: per super-block each float lane's integer sum is the same exact i32,
// scaled by the same product and fused into the same lane, and the lanes are reduced in
// hsum_ps's order.
//
// The transposed copy lives on the caller's stack (kRows8MaxSuperBlocks blocks, under 140 KB).
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
  for (int h = 0; h < 2; ++h) {                                        // rows 0..3 (h = 0) and 4..7 (h = 1)
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

// Adds float lane d's integer part of one super-block to isum[t] for 8 rows (lane r: row r): for
// each 32-element chunk c, bytes 4d..4d+3 of the chunk (q[c][d], unsigned) against token t's
// activation bytes 32c + 4d.., as two words of 2 products each (they fit an i16 for weights of
// at most 6 bits), times sc_of(c) ([scale | scale] words per row), summed exactly into the i32.
template <int NT, class ScaleOf>
[[gnu::always_inline]] inline void add_lane_sums(const __m256i (*q)[8], int d, ScaleOf sc_of, const BlockQ8_K* const* a,
                                                 int64_t i, __m256i* isum) {
  for (int c = 0; c < 8; ++c) {
    const __m256i w = q[c][d], sc = sc_of(c);
    for (int t = 0; t < NT; ++t) {
      const __m256i x = _mm256_maddubs_epi16(w, bcast32_256(a[t][i].qs + 32 * c + 4 * d));
      isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(x, sc));
    }
  }
}

// The 8 float lanes of `acc` (lane d of every row) reduced as hsum_ps reduces one output's.
[[gnu::always_inline]] inline __m256 hsum8_lanes(const __m256* acc) {
  const __m256 h0 = _mm256_add_ps(acc[0], acc[4]), h1 = _mm256_add_ps(acc[1], acc[5]);
  const __m256 h2 = _mm256_add_ps(acc[2], acc[6]), h3 = _mm256_add_ps(acc[3], acc[7]);
  return _mm256_add_ps(_mm256_add_ps(h0, h2), _mm256_add_ps(h1, h3));
}

// Stores the first n_lanes rows of `res` (all 8 with one store).
[[gnu::always_inline]] inline void store_rows8(float* out, __m256 res, int n_lanes) {
  if (n_lanes == 8) {
    _mm256_storeu_ps(out, res);
  } else {
    const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(out, keep, res);
  }
}

// KernelTable::gemm_rows for a kernel K (Q4KRows8, Q6KRows8): rows [0, n_rows) against tokens
// [0, n_tok) (any n_tok >= 1), n / 256 <= kRows8MaxSuperBlocks. A group of fewer than 8 rows
// repeats its last row in the spare lanes and stores only its own.
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
      for (int t = 0; t < nt; ++t)
        at[t] = reinterpret_cast<const BlockQ8_K*>(ab + static_cast<size_t>(t0 + t) * a_row_bytes);
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
