// SPDX-License-Identifier: MIT
// 512-bit one-row kernels for Q2_K, Q3_K and IQ4_XS against q8_K activations (the decode case,
// and vec_dot), in the manner of dot_kquants512.h's Q6_K kernel: each zmm holds two 32-element
// chunks that dot_kquants.h's 256-bit kernel processes one after the other, and the two 256-bit
// halves of the super-block's sums are added before the float step. Per super-block the 8 int32
// lanes hold exactly the integers of the 256-bit kernel (integer sums are exact in any order) and
// the float steps are the same, so results are bitwise equal to it (and, for Q2_K and Q3_K, to
// the ref tier). Weights are prefetched ahead within the rows of the call.
//   Q2_K:   values 0..3, chunk c = 4h + k holds bits 2k..2k+1 of quant bytes 32h..32h+31; per
//           16-element group a 4-bit scale and a 4-bit min; the min term first, into the same lanes.
//   Q3_K:   values (2 low bits | hmask bit << 2) - 4, the -4 applied per pair of products as ggml's
//           AVX2 kernel does (maddubs(q, y) - maddubs(4, y)); 6-bit signed scales per 16.
//   IQ4_XS: table values (signed) per 4-bit index, one signed 6-bit scale per 32; AVX-512 has no
//           vpsignb, so |q| x (y negated where q < 0) gives the 256-bit kernel's sign-trick pairs.
// Include only from AVX-512 TUs.
#pragma once

#include "kernels/x86/dot_kquants512.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_kquants.h).
namespace {

// The 16 i32 lanes of a super-block (two 8-lane halves) to the reference's 8 lanes, then the
// float step acc += dd * lanes.
[[gnu::always_inline]] inline __m256 fold_fma(__m256 acc, float dd, __m512i isum) {
  return _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(fold512(isum)), acc);
}

struct DotQ2_K512 {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    dot_prefetch<NT>(n, wv, av, out, static_cast<const uint8_t*>(wv) + n / 256 * sizeof(BlockQ2_K));
  }

  template <int NT>
  static void dot_prefetch(int64_t n, const void* wv, const void* const* av, float* out, const uint8_t* pf_limit) {
    const auto* w = static_cast<const BlockQ2_K*>(wv);
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    const __m512i two_bits = _mm512_set1_epi8(0x03);
    const __m512i shift01 = words_by_quarter(0, 0, 2, 2), shift23 = words_by_quarter(4, 4, 6, 6);
    const GroupWordIndex gw;
    for (int64_t i = 0; i < n / 256; ++i) {
      prefetch_ahead(w + i, static_cast<int>(sizeof(BlockQ2_K)), pf_limit);
      const __m128i sm = load128(w[i].scales);
      const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(sm, _mm_set1_epi8(0x0F)));
      const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), _mm_set1_epi8(0x0F)));
      const __m512i scw = _mm512_zextsi256_si512(sc16);
      __m512i isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
      for (int half = 0; half < 2; ++half) {
        const __m512i q2 = _mm512_broadcast_i64x4(load256(w[i].qs + 32 * half));
        const __m512i q01 = _mm512_and_si512(_mm512_srlv_epi16(q2, shift01), two_bits);
        const __m512i q23 = _mm512_and_si512(_mm512_srlv_epi16(q2, shift23), two_bits);
        const __m512i s01 = _mm512_permutexvar_epi16(gw.idx[2 * half], scw);
        const __m512i s23 = _mm512_permutexvar_epi16(gw.idx[2 * half + 1], scw);
        for (int t = 0; t < NT; ++t) {
          const __m512i y01 = _mm512_loadu_si512(a[t][i].qs + 128 * half);
          const __m512i y23 = _mm512_loadu_si512(a[t][i].qs + 128 * half + 64);
          isum[t] = _mm512_dpwssd_epi32(isum[t], _mm512_maddubs_epi16(q01, y01), s01);
          isum[t] = _mm512_dpwssd_epi32(isum[t], _mm512_maddubs_epi16(q23, y23), s23);
        }
      }
      const float d = h2f(w[i].d), dmin = h2f(w[i].dmin);
      for (int t = 0; t < NT; ++t) {
        const __m256i ms = bsum_dot(a[t][i].bsums, mins16);
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(-a[t][i].d * dmin), _mm256_cvtepi32_ps(ms), acc[t]);
        acc[t] = fold_fma(acc[t], a[t][i].d * d, isum[t]);
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = hsum_ps(acc[t]);
  }
};

// The 16 signed scales of a Q3_K super-block (unpack_scales_k3) as words, vectorised: word j
// takes its low 4 bits from byte j % 8 (its high nibble for j >= 8) and its high 2 bits from
// bits 2 (j / 4) .. 2 (j / 4) + 1 of byte 8 + j % 4. One shuffle puts both bytes in the word,
// then variable shifts and masks. Reads the 12 scale bytes only (a masked load: the block ends 2
// bytes after them).
struct Q3KScaleConsts {
  __m256i shuffle, shift_lo, shift_hi;
  Q3KScaleConsts() {
    alignas(32) int8_t sh[32];
    alignas(32) int16_t lo[16], hi[16];
    for (int j = 0; j < 16; ++j) {
      sh[2 * j] = static_cast<int8_t>(j % 8);
      sh[2 * j + 1] = static_cast<int8_t>(8 + j % 4);
      lo[j] = static_cast<int16_t>(j >= 8 ? 4 : 0);
      hi[j] = static_cast<int16_t>(8 + 2 * (j / 4));
    }
    shuffle = _mm256_load_si256(reinterpret_cast<const __m256i*>(sh));
    shift_lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
    shift_hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
  }
};

[[gnu::always_inline]] inline __m256i q3_k_scale_words(const uint8_t* packed, const Q3KScaleConsts& k) {
  const __m256i w = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_maskz_loadu_epi8(0x0FFF, packed)), k.shuffle);
  const __m256i low = _mm256_and_si256(_mm256_srlv_epi16(w, k.shift_lo), _mm256_set1_epi16(0x0F));
  const __m256i high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srlv_epi16(w, k.shift_hi), _mm256_set1_epi16(3)), 4);
  return _mm256_sub_epi16(_mm256_or_si256(low, high), _mm256_set1_epi16(32));
}

struct DotQ3_K512 {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    dot_prefetch<NT>(n, wv, av, out, static_cast<const uint8_t*>(wv) + n / 256 * sizeof(BlockQ3_K));
  }

  template <int NT>
  static void dot_prefetch(int64_t n, const void* wv, const void* const* av, float* out, const uint8_t* pf_limit) {
    const auto* w = static_cast<const BlockQ3_K*>(wv);
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    const __m512i two_bits = _mm512_set1_epi8(0x03);
    const __m512i bit2 = _mm512_set1_epi8(0x04);
    const __m512i four = _mm512_set1_epi8(4);
    const __m512i shift01 = words_by_quarter(0, 0, 2, 2), shift23 = words_by_quarter(4, 4, 6, 6);
    // hmask bit 4h + k of chunk 4h + k moved to bit 2: pairs (k, k + 1) of each half.
    const __m512i hshift[4] = {words_by_quarter(0, 0, 1, 1), words_by_quarter(2, 2, 3, 3), words_by_quarter(4, 4, 5, 5),
                               words_by_quarter(6, 6, 7, 7)};
    const GroupWordIndex gw;
    const Q3KScaleConsts sk;
    for (int64_t i = 0; i < n / 256; ++i) {
      prefetch_ahead(w + i, static_cast<int>(sizeof(BlockQ3_K)), pf_limit);
      const __m512i scw = _mm512_zextsi256_si512(q3_k_scale_words(w[i].scales, sk));
      const __m512i hm = _mm512_broadcast_i64x4(load256(w[i].hmask));
      __m512i isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
      for (int half = 0; half < 2; ++half) {
        const __m512i q2 = _mm512_broadcast_i64x4(load256(w[i].qs + 32 * half));
        for (int pr = 0; pr < 2; ++pr) {
          const __m512i lo = _mm512_and_si512(_mm512_srlv_epi16(q2, pr == 0 ? shift01 : shift23), two_bits);
          // (hm >> b) << 2 & 4 == bit b at bit 2.
          const __m512i hb = _mm512_and_si512(_mm512_slli_epi16(_mm512_srlv_epi16(hm, hshift[2 * half + pr]), 2), bit2);
          const __m512i q = _mm512_or_si512(lo, hb);
          const __m512i s = _mm512_permutexvar_epi16(gw.idx[2 * half + pr], scw);
          for (int t = 0; t < NT; ++t) {
            const __m512i y = _mm512_loadu_si512(a[t][i].qs + 128 * half + 64 * pr);
            const __m512i p = _mm512_sub_epi16(_mm512_maddubs_epi16(q, y), _mm512_maddubs_epi16(four, y));
            isum[t] = _mm512_dpwssd_epi32(isum[t], p, s);
          }
        }
      }
      const float d = h2f(w[i].d);
      for (int t = 0; t < NT; ++t) acc[t] = fold_fma(acc[t], d * a[t][i].d, isum[t]);
    }
    for (int t = 0; t < NT; ++t) out[t] = hsum_ps(acc[t]);
  }
};

// IQ4_XS block ib's signed 6-bit scale (ls - 32).
inline int iq4_xs_scale(const BlockIQ4_XS& b, int ib) {
  return (((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((b.scales_h >> (2 * ib)) & 3) << 4)) - 32;
}

// The signed table values of IQ4_XS blocks 2p and 2p + 1 (quant bytes 32p .. 32p + 31) in element
// order: [block 2p low nibbles | its high nibbles | block 2p + 1 low | high].
[[gnu::always_inline]] inline __m512i iq4_xs_pair_values(const uint8_t* qs, __m512i lut) {
  const __m512i x =
      _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3), _mm512_castsi256_si512(load256(qs)));
  const __m512i nib =
      _mm512_and_si512(_mm512_srlv_epi16(x, _mm512_setr_epi64(0, 0, 0x0004000400040004, 0x0004000400040004, 0, 0,
                                                              0x0004000400040004, 0x0004000400040004)),
                       _mm512_set1_epi8(0x0F));
  return _mm512_shuffle_epi8(lut, nib);
}

// |q| (bytes) and y with the sign of q applied (negated where q < 0): their maddubs pairs are
// those of ggml's sign trick (q = 0 gives 0 either way; y = -128 wraps the same way).
[[gnu::always_inline]] inline __m512i signed_pairs(__m512i q_abs, __mmask64 neg, __m512i y) {
  return _mm512_maddubs_epi16(q_abs, _mm512_mask_sub_epi8(y, neg, _mm512_setzero_si512(), y));
}

struct DotIQ4_XS512 {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    dot_prefetch<NT>(n, wv, av, out, static_cast<const uint8_t*>(wv) + n / 256 * sizeof(BlockIQ4_XS));
  }

  template <int NT>
  static void dot_prefetch(int64_t n, const void* wv, const void* const* av, float* out, const uint8_t* pf_limit) {
    const auto* w = static_cast<const BlockIQ4_XS*>(wv);
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    const __m512i lut = _mm512_broadcast_i32x4(load128(kIq4nlValues));
    for (int64_t i = 0; i < n / 256; ++i) {
      prefetch_ahead(w + i, static_cast<int>(sizeof(BlockIQ4_XS)), pf_limit);
      __m512i isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
      for (int p = 0; p < 4; ++p) {
        const __m512i q = iq4_xs_pair_values(w[i].qs + 32 * p, lut);
        const __m512i q_abs = _mm512_abs_epi8(q);
        const __mmask64 neg = _mm512_movepi8_mask(q);
        const __m512i s = _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(iq4_xs_scale(w[i], 2 * p))),
                                             _mm256_set1_epi16(static_cast<int16_t>(iq4_xs_scale(w[i], 2 * p + 1))), 1);
        for (int t = 0; t < NT; ++t) {
          isum[t] = _mm512_dpwssd_epi32(isum[t], signed_pairs(q_abs, neg, _mm512_loadu_si512(a[t][i].qs + 64 * p)), s);
        }
      }
      const float d = h2f(w[i].d);
      for (int t = 0; t < NT; ++t) acc[t] = fold_fma(acc[t], d * a[t][i].d, isum[t]);
    }
    for (int t = 0; t < NT; ++t) out[t] = hsum_ps(acc[t]);
  }
};

}  // namespace
}  // namespace sniper::x86
