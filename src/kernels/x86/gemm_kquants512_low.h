// SPDX-License-Identifier: MIT
// Prefill tiles for Q2_K, Q3_K and IQ4_XS on the AVX-512 tier, in the pair-tile scheme of
// gemm_kquants512.h (one weight row against 2..8 tokens; each zmm holds one 32-element chunk for
// a pair of tokens, the chunk and its scale words broadcast to both 256-bit halves, the pair's
// activations laid out once per tile). Each token's 8 int32 lanes per super-block are exactly those
// of dot_kquants512_low.h's one-row kernels and the float steps are theirs, so the results are
// bitwise equal to them (Q2_K, Q3_K: to the ref tier; IQ4_XS: to the AVX2 tier).
//   Q2_K:   the min term (per lane two 16-group products) goes first, into the same accumulator,
//           from the tile's negated bsums times d_y * dmin (the reference's -d_y * dmin times the
//           bsum products, exactly).
//   Q3_K:   the -4 is applied per pair of products, maddubs(q, y) - maddubs(4, y).
//   IQ4_XS: |q| against y negated where q < 0 (the sign trick without vpsignb).
// Include only from AVX-512 TUs.
#pragma once

#include "kernels/x86/dot_kquants512_low.h"
#include "kernels/x86/gemm_kquants512.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_kquants.h).
namespace {

struct TilesQ2_K {
  static constexpr GgmlType kType = GgmlType::kQ2_K;

  template <int NP>
  static void row(int64_t n_sb, const void* wv, const Q8KPairBlock* acts, const Q8KTileTerms& terms, float* out,
                  const uint8_t* pf_limit) {
    const auto* w = static_cast<const BlockQ2_K*>(wv);
    __m512 acc2[NP];
    for (int p = 0; p < NP; ++p) acc2[p] = _mm512_setzero_ps();
    const __m512i two_bits = _mm512_set1_epi8(0x03);
    const ChunkWordIndex cw;
    for (int64_t i = 0; i < n_sb; ++i) {
      prefetch_ahead(w + i, static_cast<int>(sizeof(BlockQ2_K)), pf_limit);
      const __m128i sm = load128(w[i].scales);
      const __m512i scw = _mm512_zextsi256_si512(_mm256_cvtepu8_epi16(_mm_and_si128(sm, _mm_set1_epi8(0x0F))));
      const __m512i mins =
          _mm512_broadcast_i64x4(_mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), _mm_set1_epi8(0x0F))));
      __m512i isum[NP];
      for (int p = 0; p < NP; ++p) isum[p] = _mm512_setzero_si512();
      for (int half = 0; half < 2; ++half) {
        const __m512i q2 = _mm512_broadcast_i64x4(load256(w[i].qs + 32 * half));
        for (int k = 0; k < 4; ++k) {
          const int c = 4 * half + k;
          const __m512i q = _mm512_and_si512(_mm512_srli_epi16(q2, 2 * k), two_bits);
          const __m512i s = _mm512_permutexvar_epi16(cw.idx[c], scw);
          for (int p = 0; p < NP; ++p) {
            isum[p] = _mm512_dpwssd_epi32(isum[p], _mm512_maddubs_epi16(q, _mm512_load_si512(acts[i].qs[c][p])), s);
          }
        }
      }
      const __m512 d = _mm512_set1_ps(h2f(w[i].d));
      const __m512 dmin = _mm512_set1_ps(h2f(w[i].dmin));
      for (int p = 0; p < NP; ++p) {
        const __m512 m = _mm512_cvtepi32_ps(_mm512_madd_epi16(terms.nbsum2[i][p], mins));
        acc2[p] = _mm512_fmadd_ps(_mm512_mul_ps(terms.yd2[i][p], dmin), m, acc2[p]);
        acc2[p] = _mm512_fmadd_ps(_mm512_mul_ps(terms.yd2[i][p], d), _mm512_cvtepi32_ps(isum[p]), acc2[p]);
      }
    }
    store_tile_results<NP, TileMins::kNone>(acc2, nullptr, out);
  }
};

struct TilesQ3_K {
  static constexpr GgmlType kType = GgmlType::kQ3_K;

  template <int NP>
  static void row(int64_t n_sb, const void* wv, const Q8KPairBlock* acts, const Q8KTileTerms& terms, float* out,
                  const uint8_t* pf_limit) {
    const auto* w = static_cast<const BlockQ3_K*>(wv);
    const __m512i two_bits = _mm512_set1_epi8(0x03);
    const __m512i bit2 = _mm512_set1_epi8(0x04);
    const __m512i four = _mm512_set1_epi8(4);
    const ChunkWordIndex cw;
    const Q3KScaleConsts sk;
    single_scale_row<NP>(n_sb, w, terms, out, pf_limit, [&](int64_t i, __m512i* isum) {
      const __m512i scw = _mm512_zextsi256_si512(q3_k_scale_words(w[i].scales, sk));
      const __m512i hm = _mm512_broadcast_i64x4(load256(w[i].hmask));
      for (int p = 0; p < NP; ++p) isum[p] = _mm512_setzero_si512();
      for (int half = 0; half < 2; ++half) {
        const __m512i q2 = _mm512_broadcast_i64x4(load256(w[i].qs + 32 * half));
        for (int k = 0; k < 4; ++k) {
          const int c = 4 * half + k;
          // (2 low bits) | (hmask bit c at bit 2).
          const __m512i lo = _mm512_and_si512(_mm512_srli_epi16(q2, 2 * k), two_bits);
          const __m512i hb = _mm512_and_si512(_mm512_slli_epi16(_mm512_srli_epi16(hm, c), 2), bit2);
          const __m512i q = _mm512_or_si512(lo, hb);
          const __m512i s = _mm512_permutexvar_epi16(cw.idx[c], scw);
          for (int p = 0; p < NP; ++p) {
            const __m512i y = _mm512_load_si512(acts[i].qs[c][p]);
            const __m512i pr = _mm512_sub_epi16(_mm512_maddubs_epi16(q, y), _mm512_maddubs_epi16(four, y));
            isum[p] = _mm512_dpwssd_epi32(isum[p], pr, s);
          }
        }
      }
    });
  }
};

struct TilesIQ4_XS {
  static constexpr GgmlType kType = GgmlType::kIQ4_XS;

  template <int NP>
  static void row(int64_t n_sb, const void* wv, const Q8KPairBlock* acts, const Q8KTileTerms& terms, float* out,
                  const uint8_t* pf_limit) {
    const auto* w = static_cast<const BlockIQ4_XS*>(wv);
    const __m512i lut = _mm512_broadcast_i32x4(load128(kIq4nlValues));
    // Block ib's 16 quant bytes in every 128-bit lane, high nibbles shifted down in lanes 1 and 3:
    // [low nibbles | high nibbles] = the block's 32 values, for both tokens of a pair.
    const __m512i nibble_shift =
        _mm512_setr_epi64(0, 0, 0x0004000400040004, 0x0004000400040004, 0, 0, 0x0004000400040004, 0x0004000400040004);
    const __m512i low_mask = _mm512_set1_epi8(0x0F);
    single_scale_row<NP>(n_sb, w, terms, out, pf_limit, [&](int64_t i, __m512i* isum) {
      for (int p = 0; p < NP; ++p) isum[p] = _mm512_setzero_si512();
      for (int c = 0; c < 8; ++c) {
        const __m512i x = _mm512_broadcast_i32x4(load128(w[i].qs + 16 * c));
        const __m512i q = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srlv_epi16(x, nibble_shift), low_mask));
        const __m512i q_abs = _mm512_abs_epi8(q);
        const __mmask64 neg = _mm512_movepi8_mask(q);
        const __m512i s = _mm512_set1_epi16(static_cast<int16_t>(iq4_xs_scale(w[i], c)));
        for (int p = 0; p < NP; ++p) {
          isum[p] = _mm512_dpwssd_epi32(isum[p], signed_pairs(q_abs, neg, _mm512_load_si512(acts[i].qs[c][p])), s);
        }
      }
    });
  }
};

}  // namespace
}  // namespace sniper::x86
