// SPDX-License-Identifier: MIT
// Q5_K matvec (one token against many rows, the decode case) on the AVX-512 VNNI tier, bitwise
// equal to DotQ5_K and so to the ref tier. The layout of matvec_q4_k512.h (whose activation
// layout, Q8KForQ4K, it shares): each 64-byte load of quants feeds four 32-element sub-blocks,
// low nibbles sub-blocks 4m and 4m+2, high nibbles 4m+1 and 4m+3. Each gets its fifth bit from
// qh (bit s of byte l is element l of sub-block s), so values are 0..31 and the high nibbles are
// shifted down rather than masked in place; vpdpbusd sums of four products fit 16 bits
// (4 * 31 * 128), the high ones go to the upper word of each lane, and one vpdpwssd applies both
// sub-blocks' scales. Q5_K's min term is one integer per super-block FMA'd into a scalar
// (DotQ5_K's summs): here lane 8 of the one accumulator, fed the 4 min lanes summed as integers.
// Include only from AVX-512 TUs.
#pragma once

#include "kernels/x86/isa_policies.h"
#include "kernels/x86/matvec_q4_k512.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_kquants.h).
namespace {

struct Q5KMatvecConsts : Q4KMatvecConsts {
  __m512i bit4 = _mm512_set1_epi8(0x10);
  // Fifth bits to bit 4: sub-blocks 4m (bytes 0..31) and 4m+2 (32..63) for the low nibbles,
  // 4m+1 and 4m+3 for the high ones. Bit b moves left by 4 - b (m = 0) or right by b - 4 (m = 1).
  __m512i lo_left = words_by_quarter(4, 4, 2, 2), hi_left = words_by_quarter(3, 3, 1, 1);
  __m512i lo_right = words_by_quarter(0, 0, 2, 2), hi_right = words_by_quarter(1, 1, 3, 3);
};

// One row of n_sb super-blocks against laid-out activations; prefetches weights up to pf_limit.
inline float q5_k_row_dot(int64_t n_sb, const BlockQ5_K* w, const Q8KForQ4K* a, const Q5KMatvecConsts& k,
                          const uint8_t* pf_limit) {
  const __m512i zero = _mm512_setzero_si512();
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n_sb; ++i) {
    prefetch_ahead(w + i, static_cast<int>(sizeof(BlockQ5_K)), pf_limit);
    const __m256i words = q4_k_scale_words(w[i].scales, k.scales);
    const __m512i qh = _mm512_broadcast_i64x4(load256(w[i].qh));
    __m512i isum = zero;
    for (int m = 0; m < 2; ++m) {
      const __m512i q = _mm512_loadu_si512(w[i].qs + 64 * m);
      const __m512i h_lo = m == 0 ? _mm512_sllv_epi16(qh, k.lo_left) : _mm512_srlv_epi16(qh, k.lo_right);
      const __m512i h_hi = m == 0 ? _mm512_sllv_epi16(qh, k.hi_left) : _mm512_srlv_epi16(qh, k.hi_right);
      // (q & 0x0F) | (h & 0x10) (ternary logic 0xEA: (a & b) | c), the same for the high nibbles.
      const __m512i q_lo = _mm512_ternarylogic_epi32(q, k.low_nibbles, _mm512_and_si512(h_lo, k.bit4), 0xEA);
      const __m512i q_hi =
          _mm512_ternarylogic_epi32(_mm512_srli_epi16(q, 4), k.low_nibbles, _mm512_and_si512(h_hi, k.bit4), 0xEA);
      const __m512i lo = _mm512_dpbusd_epi32(zero, q_lo, _mm512_load_si512(a[i].qs + 128 * m));
      const __m512i hi = _mm512_dpbusd_epi32(zero, q_hi, _mm512_load_si512(a[i].qs + 128 * m + 64));
      const __m512i both = _mm512_mask_blend_epi16(0xAAAAAAAA, lo, _mm512_slli_epi32(hi, 16));
      const __m512i scale = _mm512_permutexvar_epi32(k.scale_pair[m], _mm512_castsi256_si512(words));
      isum = _mm512_dpwssd_epi32(isum, both, scale);
    }
    acc = k4_superblock_step<true>(acc, isum, words, &w[i].d, a[i], k.d_spread);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc);
  return hsum_ps(_mm512_castps512_ps256(acc)) + lanes[8];
}

// matvec_q4_k for Q5_K rows.
inline void matvec_q5_k(int64_t n, int64_t n_rows, const uint8_t* w, size_t w_row_bytes, const BlockQ8_K* a,
                        float* out) {
  const Q5KMatvecConsts k;
  matvec_k4<BlockQ5_K>(n, n_rows, w, w_row_bytes, a, out,
                       [&](int64_t n_sb, const BlockQ5_K* row, const Q8KForQ4K* la, const uint8_t* pf_limit) {
                         return q5_k_row_dot(n_sb, row, la, k, pf_limit);
                       });
}

// vec_dot entry for Q5_K: the matvec of one row (rows too long for it: the 256-bit kernel).
void vec_dot_q5_k_512(int64_t n, float* out, const void* w, const void* a) {
  if (n / 256 <= kMatvecMaxSuperBlocks) {
    matvec_q5_k(n, 1, static_cast<const uint8_t*>(w), sizeof(BlockQ5_K) * static_cast<size_t>(n / 256),
                static_cast<const BlockQ8_K*>(a), out);
  } else {
    vec_dot_entry<DotQ5_K<VnniInt>>(n, out, w, a);
  }
}

}  // namespace
}  // namespace sniper::x86
