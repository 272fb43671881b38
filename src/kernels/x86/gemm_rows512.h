// SPDX-License-Identifier: MIT
// Row-lane gemm for the K-quants (AVX-512 VNNI): 16 weight rows in the 16 dword lanes of a zmm.
//
// Why rows in lanes. The pair tiles of gemm_kquants512.h keep the reference's 8 lanes per output,
// so every 32 products cost a vpmaddubsw (pairs of products to words) and a vpdpwssd (the scale,
// then pairs to dwords). With 16 rows in the lanes, one vpdpbusd multiplies 4 weight bytes of
// each row by the same 4 activation bytes (a broadcast from memory) and adds them into the row's
// lane: 64 products per instruction, and the scale of a 16-element group is applied once per
// four of them. Each output's float accumulators follow the reference's lane order (the type's
// scalar vec_dot twin in quant/, which each kernel equals bit for bit), its 16 rows are one
// 64-byte store.
//
// The price is a transposed copy of the weights: for each group of 16 rows, every super-block is
// rewritten once per call into a kernel's Block (bytes 4d..4d+3 of chunk c of every row, decoded
// to unsigned values, in one zmm; scales and d per row in lanes), spread over all the tokens of
// the call. The file's bytes are not changed (streamed experts need no other layout), and the
// copy lives on the caller's stack (kRowsMaxSuperBlocks blocks, about 250 KB).
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
[[gnu::always_inline]] inline __m512i two_rows(const void* lo, const void* hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(load256(lo)), load256(hi), 1);
}

[[gnu::always_inline]] inline __m512i bcast32(const void* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// The fp16 field at byte `offset` past each of the 16 row pointers, as floats (lane r: row r's).
// The halves are packed in general registers: 2-byte stores read back by one 32-byte load would
// wait on store forwarding.
template <class R>
[[gnu::always_inline]] inline __m512 row_halves(const R* const* rows, size_t offset) {
  uint64_t q[4];
  for (int g = 0; g < 4; ++g) {
    uint64_t v = 0;
    for (int j = 0; j < 4; ++j) {
      uint16_t h;
      __builtin_memcpy(&h, reinterpret_cast<const uint8_t*>(rows[4 * g + j]) + offset, 2);
      v |= static_cast<uint64_t>(h) << (16 * j);
    }
    q[g] = v;
  }
  return _mm512_cvtph_ps(_mm256_setr_epi64x(static_cast<int64_t>(q[0]), static_cast<int64_t>(q[1]),
                                            static_cast<int64_t>(q[2]), static_cast<int64_t>(q[3])));
}

// KernelTable::gemm_rows for a kernel K: rows [0, n_rows) against tokens [0, n_tok) (any n_tok
// >= 1), n / 256 <= kRowsMaxSuperBlocks. K provides kMinTokens (the smallest batch worth its
// transposed copy, for KernelTable::rows_min_tokens), its Block (one super-block of 16 rows),
// lay_out(rows, n_sb, blocks) (rows: 16 row pointers) and tile<NT>(n_sb, blocks, a, out,
// out_stride, lanes). A group of fewer than 16 rows repeats its last row in the spare lanes and
// stores only its own.
template <class K>
void gemm_rows(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
               size_t a_row_bytes, float* out, int64_t out_stride) {
  const int64_t n_sb = n / 256;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  typename K::Block blocks[kRowsMaxSuperBlocks];
  for (int64_t r0 = 0; r0 < n_rows; r0 += kRowLanes) {
    const int nr = static_cast<int>(std::min<int64_t>(n_rows - r0, kRowLanes));
    const uint8_t* rows[kRowLanes];
    for (int r = 0; r < kRowLanes; ++r) rows[r] = wb + static_cast<size_t>(r0 + std::min(r, nr - 1)) * w_row_bytes;
    K::lay_out(rows, n_sb, blocks);
    const __mmask16 lanes = static_cast<__mmask16>((1u << nr) - 1);
    for (int64_t t0 = 0; t0 < n_tok; t0 += kRowsTileTokens) {
      const int nt = static_cast<int>(std::min<int64_t>(n_tok - t0, kRowsTileTokens));
      const BlockQ8_K* at[kRowsTileTokens];
      for (int t = 0; t < nt; ++t)
        at[t] = reinterpret_cast<const BlockQ8_K*>(ab + static_cast<size_t>(t0 + t) * a_row_bytes);
      float* o = out + t0 * out_stride + r0;
      switch (nt) {
        case 1: K::template tile<1>(n_sb, blocks, at, o, out_stride, lanes); break;
        case 2: K::template tile<2>(n_sb, blocks, at, o, out_stride, lanes); break;
        case 3: K::template tile<3>(n_sb, blocks, at, o, out_stride, lanes); break;
        case 4: K::template tile<4>(n_sb, blocks, at, o, out_stride, lanes); break;
        case 5: K::template tile<5>(n_sb, blocks, at, o, out_stride, lanes); break;
        case 6: K::template tile<6>(n_sb, blocks, at, o, out_stride, lanes); break;
        case 7: K::template tile<7>(n_sb, blocks, at, o, out_stride, lanes); break;
        default: K::template tile<8>(n_sb, blocks, at, o, out_stride, lanes); break;
      }
    }
  }
}

}  // namespace
}  // namespace sniper::x86
