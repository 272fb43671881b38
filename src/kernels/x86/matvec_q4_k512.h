// SPDX-License-Identifier: MIT
// Q4_K matvec (one token against many rows, the decode case) on the AVX-512 VNNI tier, bitwise
// equal to DotQ4_K512 and so to the ref tier, in about 60% of its instructions.
//
// Where DotQ4_K512 spends them, per super-block and token: a nibble shift per 64 weights (shifts
// issue on one port only), a word permute per 64 weights to spread the scales, and the float
// bookkeeping of two accumulators. Here:
//  - Each 64-byte load of quants feeds four sub-blocks. Its low nibbles hold sub-blocks 4m and
//    4m+2, its high nibbles (masked in place, so x16) sub-blocks 4m+1 and 4m+3. vpdpbusd gives
//    per-sub-block int32 sums of four products (|sum| <= 4 * 15 * 128, so they fit 16 bits), the
//    high ones are shifted into the upper word of each lane, and one vpdpwssd multiplies both
//    words by their sub-block scales and adds them: per 32-bit lane the integers are exactly those
//    of DotQ4_K512 (integer sums are exact in any order).
//  - The activations are laid out to match once per call (Q8KForQ4K: per 128 elements the order
//    [0, 32) [64, 96) [32, 64) [96, 128)), with their per-block float and bsum terms, so the row
//    loop loads them whole.
//  - The 8 lanes of the scaled sums and the 4 lanes of the mins term share one zmm: lanes 0..7
//    are DotQ4_K512's acc, lanes 8..11 its accm, each fed the same converted integers times the
//    same products (d_y * d, -d_y * dmin, each rounded once) by one FMA, and the final reductions
//    are the same functions.
// On kernel_bench 4096 x 4096 (9.4 MB, cache-resident) one core goes from 15.0 to 24.8 GB/s;
// from DRAM both kernels reach what two cores can read, and the spare cycles go to the rest of
// decode. Include only from AVX-512 TUs.
#pragma once

#include "kernels/x86/dot_kquants512.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_kquants.h).
namespace {

// Super-blocks a matvec call lays out on the stack (rows up to 128 * 256 elements; longer rows
// go through DotQ4_K512).
constexpr int kMatvecMaxSuperBlocks = 128;

// One q8_K super-block laid out for the Q4_K matvec.
struct alignas(64) Q8KForQ4K {
  int8_t qs[256];     // per 128 elements: [0, 32) [64, 96) [32, 64) [96, 128)
  float dterm[16];    // [d_y x8 | -d_y x4 | 0 x4]
  int16_t bsum2[16];  // [0 x8 | the 8 pairwise sums of bsums, as min_dot4 forms them]
  uint8_t pad[32];
};
static_assert(sizeof(Q8KForQ4K) == 384, "Q8KForQ4K must stay a whole number of cache lines");

inline void lay_out_q8k_for_q4k(const BlockQ8_K* a, int64_t n_sb, Q8KForQ4K* out) {
  const __m512 sign = _mm512_setr_ps(1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, 0, 0, 0, 0);
  for (int64_t i = 0; i < n_sb; ++i) {
    for (int h = 0; h < 2; ++h) {
      const int8_t* s = a[i].qs + 128 * h;
      auto* d = reinterpret_cast<__m256i*>(out[i].qs + 128 * h);
      _mm256_store_si256(d, load256(s));
      _mm256_store_si256(d + 1, load256(s + 64));
      _mm256_store_si256(d + 2, load256(s + 32));
      _mm256_store_si256(d + 3, load256(s + 96));
    }
    _mm512_store_ps(out[i].dterm, _mm512_mul_ps(_mm512_set1_ps(a[i].d), sign));  // x1, x-1, x0: exact
    const __m128i pairs = _mm_hadd_epi16(load128(a[i].bsums), load128(a[i].bsums + 8));
    _mm256_store_si256(reinterpret_cast<__m256i*>(out[i].bsum2),
                       _mm256_inserti128_si256(_mm256_setzero_si256(), pairs, 1));
  }
}

struct Q4KMatvecConsts {
  Q4KScaleConsts scales;
  __m512i low_nibbles = _mm512_set1_epi8(0x0F);
  __m512i high_nibbles = _mm512_set1_epi8(static_cast<char>(0xF0));
  // Scale words (as dwords) of sub-blocks [4m, 4m+1] for lanes 0..7 and [4m+2, 4m+3] for 8..15.
  __m512i scale_pair[2] = {_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                           _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3)};
  // [d x8 | dmin x4 | 0 x4] from the converted [d, dmin, 0, 0].
  __m512i d_spread = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2);
};

// The float step of a Q4_K or Q5_K super-block (d and dmin at `d_dmin`): lanes 0..7 of the
// integer sums are the two halves of isum added (fold512), lanes 8..11 the min term from the
// scale words against the laid-out bsum pairs (kScalarMin, Q5_K: its 4 lanes summed as integers,
// in every one of them), 12..15 zero; times [d_y * d x8 | -d_y * dmin x4 | 0] and FMA'd into acc.
template <bool kScalarMin>
[[gnu::always_inline]] inline __m512 k4_superblock_step(__m512 acc, __m512i isum, __m256i words, const uint16_t* d_dmin,
                                                        const Q8KForQ4K& a, __m512i d_spread) {
  __m256i mins = _mm256_madd_epi16(words, _mm256_load_si256(reinterpret_cast<const __m256i*>(a.bsum2)));
  if constexpr (kScalarMin) {
    mins = _mm256_add_epi32(mins, _mm256_shuffle_epi32(mins, _MM_SHUFFLE(1, 0, 3, 2)));
    mins = _mm256_add_epi32(mins, _mm256_shuffle_epi32(mins, _MM_SHUFFLE(2, 3, 0, 1)));
  }
  const __m512i t = _mm512_shuffle_i64x2(isum, _mm512_castsi256_si512(mins), _MM_SHUFFLE(0, 1, 3, 2));
  const __m512i sums = _mm512_mask_add_epi32(t, 0x00FF, isum, t);
  uint32_t dd_bits;
  __builtin_memcpy(&dd_bits, d_dmin, 4);
  const __m128 dd = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(dd_bits)));
  const __m512 wd = _mm512_permutexvar_ps(d_spread, _mm512_castps128_ps512(dd));
  return _mm512_fmadd_ps(_mm512_mul_ps(wd, _mm512_load_ps(a.dterm)), _mm512_cvtepi32_ps(sums), acc);
}

// One row of n_sb super-blocks against laid-out activations; prefetches weights up to pf_limit.
inline float q4_k_row_dot(int64_t n_sb, const BlockQ4_K* w, const Q8KForQ4K* a, const Q4KMatvecConsts& k,
                          const uint8_t* pf_limit) {
  const __m512i zero = _mm512_setzero_si512();
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n_sb; ++i) {
    prefetch_ahead(w + i, static_cast<int>(sizeof(BlockQ4_K)), pf_limit);
    const __m256i words = q4_k_scale_words(w[i].scales, k.scales);
    __m512i isum = zero;
    for (int m = 0; m < 2; ++m) {
      const __m512i q = _mm512_loadu_si512(w[i].qs + 64 * m);
      const __m512i y_lo = _mm512_load_si512(a[i].qs + 128 * m);
      const __m512i y_hi = _mm512_load_si512(a[i].qs + 128 * m + 64);
      const __m512i lo = _mm512_dpbusd_epi32(zero, _mm512_and_si512(q, k.low_nibbles), y_lo);
      const __m512i hi16 = _mm512_dpbusd_epi32(zero, _mm512_and_si512(q, k.high_nibbles), y_hi);
      // Word 0 of each lane: the low-nibble sum; word 1: the high-nibble sum (x16 << 12 = << 16).
      const __m512i both = _mm512_mask_blend_epi16(0xAAAAAAAA, lo, _mm512_slli_epi32(hi16, 12));
      const __m512i scale = _mm512_permutexvar_epi32(k.scale_pair[m], _mm512_castsi256_si512(words));
      isum = _mm512_dpwssd_epi32(isum, both, scale);
    }
    acc = k4_superblock_step<false>(acc, isum, words, &w[i].d, a[i], k.d_spread);
  }
  return hsum_ps(_mm512_castps512_ps256(acc)) + hsum4_ps(_mm512_extractf32x4_ps(acc, 2));
}

// out[r] = row_dot(n_sb, row r, laid-out a, pf_limit) for r < n_rows, n / 256 <=
// kMatvecMaxSuperBlocks: the activations laid out once, prefetches ahead across the rows of this
// call, never past them.
template <class Block, class RowDot>
void matvec_k4(int64_t n, int64_t n_rows, const uint8_t* w, size_t w_row_bytes, const BlockQ8_K* a, float* out,
               RowDot&& row_dot) {
  const int64_t n_sb = n / 256;
  Q8KForQ4K laid_out[kMatvecMaxSuperBlocks];
  lay_out_q8k_for_q4k(a, n_sb, laid_out);
  const uint8_t* w_end = w + static_cast<size_t>(n_rows) * w_row_bytes;
  for (int64_t r = 0; r < n_rows; ++r) {
    out[r] = row_dot(n_sb, reinterpret_cast<const Block*>(w + static_cast<size_t>(r) * w_row_bytes), laid_out, w_end);
  }
}

inline void matvec_q4_k(int64_t n, int64_t n_rows, const uint8_t* w, size_t w_row_bytes, const BlockQ8_K* a,
                        float* out) {
  const Q4KMatvecConsts k;
  matvec_k4<BlockQ4_K>(n, n_rows, w, w_row_bytes, a, out,
                       [&](int64_t n_sb, const BlockQ4_K* row, const Q8KForQ4K* la, const uint8_t* pf_limit) {
                         return q4_k_row_dot(n_sb, row, la, k, pf_limit);
                       });
}

}  // namespace
}  // namespace sniper::x86
