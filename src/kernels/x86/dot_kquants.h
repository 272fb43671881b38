// SPDX-License-Identifier: MIT
// Dot-product kernels for the 256-element super-block formats (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
// IQ4_XS) against q8_K activations, as templates over an ISA policy (see dot_q32.h). Per
// super-block everything is exact integer arithmetic: sub-block scales are applied with
// maddubs+madd (u8*s8 pair sums fit i16 because weights are <= 6 bits and |a| <= 127), and the
// weight offsets/mins are applied through the activation bsums. The float part is one FMA per
// super-block and token. Include only from ISA translation units.
#pragma once

#include "kernels/x86/x86_util.h"
#include "quant/iq4_xs.h"
#include "quant/q2_k.h"
#include "quant/q3_k.h"
#include "quant/q4_k.h"
#include "quant/q5_k.h"
#include "quant/q6_k.h"
#include "quant/q8_k.h"

namespace sniper::x86 {
// Internal linkage on purpose: these are compiled once per ISA with different -m flags, and
// must not be merged across ISA translation units by the linker (ODR).
namespace {

// Unpacks the 12-byte Q4_K/Q5_K scale field: sc[0..7] = scales, sc[8..15] = mins (6 bits each).
inline void unpack_scales_k4(const uint8_t* packed, uint8_t* sc) {
  constexpr uint32_t kMask1 = 0x3f3f3f3f, kMask2 = 0x0f0f0f0f, kMask3 = 0x03030303;
  uint32_t u[4];
  __builtin_memcpy(u, packed, 12);
  u[3] = ((u[2] >> 4) & kMask2) | (((u[1] >> 6) & kMask3) << 4);
  const uint32_t aux = u[1] & kMask1;
  u[1] = (u[2] & kMask2) | (((u[0] >> 6) & kMask3) << 4);
  u[2] = aux;
  u[0] &= kMask1;
  __builtin_memcpy(sc, u, 16);
}

// Unpacks the 12-byte Q3_K scale field into 16 signed scales (value - 32).
inline void unpack_scales_k3(const uint8_t* packed, int8_t* sc) {
  constexpr uint32_t kMask1 = 0x03030303, kMask2 = 0x0f0f0f0f;
  uint32_t u[4];
  __builtin_memcpy(u, packed, 12);
  const uint32_t tmp = u[2];
  u[2] = ((u[0] >> 4) & kMask2) | (((tmp >> 4) & kMask1) << 4);
  u[3] = ((u[1] >> 4) & kMask2) | (((tmp >> 6) & kMask1) << 4);
  u[0] = (u[0] & kMask2) | (((tmp >> 0) & kMask1) << 4);
  u[1] = (u[1] & kMask2) | (((tmp >> 2) & kMask1) << 4);
  __builtin_memcpy(sc, u, 16);
  for (int i = 0; i < 16; ++i) sc[i] = static_cast<int8_t>(sc[i] - 32);
}

// Sum over the 16 groups of scale16[g] * bsums[g] (i16 x i16 -> i32 lanes, 8 lanes).
inline __m256i bsum_dot(const int16_t* bsums, __m256i scale16) { return _mm256_madd_epi16(load256(bsums), scale16); }

// ggml's q4_K/q5_K min term: 4 i32 lanes, lane m = mins[2m] * (bsums[4m] + bsums[4m+1]) +
// mins[2m+1] * (bsums[4m+2] + bsums[4m+3]) (hadd of the 16 group sums, then madd).
inline __m128i min_dot4(const int16_t* bsums, __m128i mins8) {
  const __m128i q8s = _mm_hadd_epi16(load128(bsums), load128(bsums + 8));
  return _mm_madd_epi16(mins8, q8s);
}

inline int hsum_epi32_128(__m128i x) {
  x = _mm_add_epi32(x, _mm_shuffle_epi32(x, _MM_SHUFFLE(1, 0, 3, 2)));
  x = _mm_add_epi32(x, _mm_shuffle_epi32(x, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(x);
}

// The 4-lane tail of hsum_float_8: (x0 + x2) + (x1 + x3).
inline float hsum4_ps(__m128 x) {
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  x = _mm_add_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}

template <class Isa>
struct DotQ4_K {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    const auto* w = static_cast<const BlockQ4_K*>(wv);
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
    __m256 acc[NT];
    __m128 accm[NT];
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm256_setzero_ps();
      accm[t] = _mm_setzero_ps();
    }
    const __m256i low_mask = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < n / 256; ++i) {
      alignas(16) uint8_t sc[16];
      unpack_scales_k4(w[i].scales, sc);
      const __m128i mins8 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 8)));
      __m256i isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
      for (int j = 0; j < 4; ++j) {
        const __m256i q4 = load256(w[i].qs + 32 * j);
        const __m256i lo = _mm256_and_si256(q4, low_mask);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q4, 4), low_mask);
        const __m256i s_lo = _mm256_set1_epi16(sc[2 * j]);
        const __m256i s_hi = _mm256_set1_epi16(sc[2 * j + 1]);
        for (int t = 0; t < NT; ++t) {
          const __m256i p0 = dot_u8s8_scaled(lo, load256(a[t][i].qs + 64 * j), s_lo);
          const __m256i p1 = dot_u8s8_scaled(hi, load256(a[t][i].qs + 64 * j + 32), s_hi);
          isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(p0, p1));
        }
      }
      const float d = h2f(w[i].d), dmin = h2f(w[i].dmin);
      for (int t = 0; t < NT; ++t) {
        accm[t] =
            _mm_fmadd_ps(_mm_set1_ps(-a[t][i].d * dmin), _mm_cvtepi32_ps(min_dot4(a[t][i].bsums, mins8)), accm[t]);
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(a[t][i].d * d), _mm256_cvtepi32_ps(isum[t]), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = hsum_ps(acc[t]) + hsum4_ps(accm[t]);
  }
};

template <class Isa>
struct DotQ5_K {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    const auto* w = static_cast<const BlockQ5_K*>(wv);
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
    __m256 acc[NT];
    float summs[NT];
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm256_setzero_ps();
      summs[t] = 0.0f;
    }
    const __m256i low_mask = _mm256_set1_epi8(0x0F);
    const __m256i one = _mm256_set1_epi8(1);
    for (int64_t i = 0; i < n / 256; ++i) {
      alignas(16) uint8_t sc[16];
      unpack_scales_k4(w[i].scales, sc);
      const __m128i mins8 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 8)));
      const __m256i qh = load256(w[i].qh);
      __m256i isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
      for (int j = 0; j < 4; ++j) {
        const __m256i q4 = load256(w[i].qs + 32 * j);
        const __m256i h0 = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * j)), one);
        const __m256i h1 = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * j + 1)), one);
        const __m256i lo = _mm256_or_si256(_mm256_and_si256(q4, low_mask), _mm256_slli_epi16(h0, 4));
        const __m256i hi =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4, 4), low_mask), _mm256_slli_epi16(h1, 4));
        const __m256i s_lo = _mm256_set1_epi16(sc[2 * j]);
        const __m256i s_hi = _mm256_set1_epi16(sc[2 * j + 1]);
        for (int t = 0; t < NT; ++t) {
          const __m256i p0 = dot_u8s8_scaled(lo, load256(a[t][i].qs + 64 * j), s_lo);
          const __m256i p1 = dot_u8s8_scaled(hi, load256(a[t][i].qs + 64 * j + 32), s_hi);
          isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(p0, p1));
        }
      }
      const float d = h2f(w[i].d), dmin = h2f(w[i].dmin);
      for (int t = 0; t < NT; ++t) {
        const int sumi = hsum_epi32_128(min_dot4(a[t][i].bsums, mins8));
        summs[t] = __builtin_fmaf(-a[t][i].d * dmin, static_cast<float>(sumi), summs[t]);
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(a[t][i].d * d), _mm256_cvtepi32_ps(isum[t]), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = hsum_ps(acc[t]) + summs[t];
  }
};

// Q6_K: q = (ql nibble | 2 qh bits << 4) in 0..63, value q - 32; the -32 goes through the
// activation group sums (8 lanes of two groups each), as in the reference build.
template <class Isa>
struct DotQ6_K {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    const auto* w = static_cast<const BlockQ6_K*>(wv);
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    const __m256i low_mask = _mm256_set1_epi8(0x0F);
    const __m256i two_bits = _mm256_set1_epi8(0x03);
    for (int64_t i = 0; i < n / 256; ++i) {
      const int8_t* sc = w[i].scales;
      const __m256i sc16 = _mm256_cvtepi8_epi16(load128(sc));
      __m256i isum[NT];
      for (int t = 0; t < NT; ++t) {
        // 32 * (sc[2k] * bsums[2k] + sc[2k+1] * bsums[2k+1]) per lane, subtracted up front.
        isum[t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(bsum_dot(a[t][i].bsums, sc16), 5));
      }
      for (int half = 0; half < 2; ++half) {
        const __m256i qa = load256(w[i].ql + 64 * half);
        const __m256i qb = load256(w[i].ql + 64 * half + 32);
        const __m256i qh = load256(w[i].qh + 32 * half);
        __m256i q[4];
        q[0] = _mm256_or_si256(_mm256_and_si256(qa, low_mask), _mm256_slli_epi16(_mm256_and_si256(qh, two_bits), 4));
        q[1] = _mm256_or_si256(_mm256_and_si256(qb, low_mask),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), two_bits), 4));
        q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qa, 4), low_mask),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), two_bits), 4));
        q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qb, 4), low_mask),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), two_bits), 4));
        for (int k = 0; k < 4; ++k) {
          const __m256i s16 = scale_pair16(sc[8 * half + 2 * k], sc[8 * half + 2 * k + 1]);
          for (int t = 0; t < NT; ++t) {
            const __m256i p = dot_u8s8_scaled(q[k], load256(a[t][i].qs + 128 * half + 32 * k), s16);
            isum[t] = _mm256_add_epi32(isum[t], p);
          }
        }
      }
      const float d = h2f(w[i].d);
      for (int t = 0; t < NT; ++t) {
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * a[t][i].d), _mm256_cvtepi32_ps(isum[t]), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = hsum_ps(acc[t]);
  }
};

// Q3_K: q = (2 low bits | hmask bit << 2) in 0..7, value q - 4; the -4 is applied inside each
// integer lane, as ggml's AVX2 kernel does.
template <class Isa>
struct DotQ3_K {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    const auto* w = static_cast<const BlockQ3_K*>(wv);
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    const __m256i two_bits = _mm256_set1_epi8(0x03);
    const __m256i one = _mm256_set1_epi8(1);
    for (int64_t i = 0; i < n / 256; ++i) {
      alignas(16) int8_t sc[16];
      unpack_scales_k3(w[i].scales, sc);
      const __m256i off = _mm256_set1_epi8(4);
      __m256i isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
      const __m256i hm = load256(w[i].hmask);
      for (int half = 0; half < 2; ++half) {
        const __m256i q2 = load256(w[i].qs + 32 * half);
        for (int k = 0; k < 4; ++k) {
          const __m256i lo = _mm256_and_si256(_mm256_srl_epi16(q2, _mm_cvtsi32_si128(2 * k)), two_bits);
          const __m256i hb = _mm256_and_si256(_mm256_srl_epi16(hm, _mm_cvtsi32_si128(4 * half + k)), one);
          const __m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(hb, 2));
          const __m256i s16 = scale_pair16(sc[8 * half + 2 * k], sc[8 * half + 2 * k + 1]);
          for (int t = 0; t < NT; ++t) {
            const __m256i y = load256(a[t][i].qs + 128 * half + 32 * k);
            const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(q, y), _mm256_maddubs_epi16(off, y));
            isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(p, s16));
          }
        }
      }
      const float d = h2f(w[i].d);
      for (int t = 0; t < NT; ++t) {
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * a[t][i].d), _mm256_cvtepi32_ps(isum[t]), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = hsum_ps(acc[t]);
  }
};

// Q2_K: q in 0..3 with a 4-bit scale and a 4-bit min per 16 elements.
template <class Isa>
struct DotQ2_K {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    const auto* w = static_cast<const BlockQ2_K*>(wv);
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    const __m256i two_bits = _mm256_set1_epi8(0x03);
    for (int64_t i = 0; i < n / 256; ++i) {
      const __m128i sm = load128(w[i].scales);
      const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), _mm_set1_epi8(0x0F)));
      alignas(16) uint8_t sc[16];
      for (int g = 0; g < 16; ++g) sc[g] = w[i].scales[g] & 0x0F;
      __m256i isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
      for (int half = 0; half < 2; ++half) {
        const __m256i q2 = load256(w[i].qs + 32 * half);
        for (int k = 0; k < 4; ++k) {
          const __m256i q = _mm256_and_si256(_mm256_srl_epi16(q2, _mm_cvtsi32_si128(2 * k)), two_bits);
          const __m256i s16 = scale_pair16(sc[8 * half + 2 * k], sc[8 * half + 2 * k + 1]);
          for (int t = 0; t < NT; ++t) {
            const __m256i p = dot_u8s8_scaled(q, load256(a[t][i].qs + 128 * half + 32 * k), s16);
            isum[t] = _mm256_add_epi32(isum[t], p);
          }
        }
      }
      const float d = h2f(w[i].d), dmin = h2f(w[i].dmin);
      for (int t = 0; t < NT; ++t) {
        // ggml: the min term first, into the same 8 lanes.
        const __m256i ms = bsum_dot(a[t][i].bsums, mins16);
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(-a[t][i].d * dmin), _mm256_cvtepi32_ps(ms), acc[t]);
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(a[t][i].d * d), _mm256_cvtepi32_ps(isum[t]), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = hsum_ps(acc[t]);
  }
};

// IQ4_XS: non-linear 4-bit levels via a byte shuffle, 6-bit signed scale (ls - 32) per 32.
template <class Isa>
struct DotIQ4_XS {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    const auto* w = static_cast<const BlockIQ4_XS*>(wv);
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    const __m256i lut = _mm256_broadcastsi128_si256(load128(kIq4nlValues));
    for (int64_t i = 0; i < n / 256; ++i) {
      __m256i isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
      for (int ib = 0; ib < 8; ++ib) {
        const int ls = ((w[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((w[i].scales_h >> (2 * ib)) & 3) << 4);
        const __m256i s16 = _mm256_set1_epi16(static_cast<int16_t>(ls - 32));
        const __m256i q = _mm256_shuffle_epi8(lut, unpack_nibbles(w[i].qs + 16 * ib));
        const __m256i qa = _mm256_sign_epi8(q, q);
        for (int t = 0; t < NT; ++t) {
          const __m256i y = _mm256_sign_epi8(load256(a[t][i].qs + 32 * ib), q);
          isum[t] = _mm256_add_epi32(isum[t], dot_u8s8_scaled(qa, y, s16));
        }
      }
      const float d = h2f(w[i].d);
      for (int t = 0; t < NT; ++t) {
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * a[t][i].d), _mm256_cvtepi32_ps(isum[t]), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = hsum_ps(acc[t]);
  }
};

}  // namespace
}  // namespace sniper::x86
