// SPDX-License-Identifier: MIT
// AVX2 dot-product kernels for the lookup-free i-quant layouts (quant/iq_repack.h: IQ2_RP,
// IQ3_XXS_RP, IQ3_S_RP; IQ1_S_RP and IQ1_M_RP below) against q8_K activations, one 32-element chunk per step: the
// chunk's codes (IQ2_RP: bits 2j of code bytes [32h, 32h + 32) for chunk 2j + h; IQ3: nibble k of code bytes [64h +
// 32l, +32) for chunk 4h + 2k + l) become magnitudes through one vpshufb, the sign bits (IQ2_RP: 32 bits expanded to
// bytes; IQ3: the nibble's bit 3 through a second vpshufb) become +-1 bytes for vpsignb on the activations, and maddubs
// + madd with the chunk's two i16 scales give the 8 i32 lanes: lane k = elements 4k..4k+3 of every chunk times their
// scale, the
// `_ref` order (quant/lane_order.h), with the ref's float steps. So every output is bitwise the
// `_ref` twin's (vec_dot_iq*_rp_q8_K_ref), and hence the source type's.
// Include only from ISA translation units (AVX2 and up).
#pragma once

#include <cstring>

#include "kernels/x86/x86_util.h"
#include "quant/iq_repack.h"
#include "quant/q8_k.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_q32.h): compiled once per ISA.
namespace {

// The 16 odd scales 2s+1 of a block (nibbles s at scales[0..7], low nibble first), as bytes.
inline __m128i odd_scales16(const uint8_t* scales) {
  uint64_t s8;
  std::memcpy(&s8, scales, 8);
  const __m128i x = _mm_cvtsi64_si128(static_cast<long long>(s8));
  const __m128i m = _mm_set1_epi8(0x0f);
  const __m128i s = _mm_unpacklo_epi8(_mm_and_si128(x, m), _mm_and_si128(_mm_srli_epi16(x, 4), m));
  return _mm_or_si128(_mm_add_epi8(s, s), _mm_set1_epi8(1));
}

// The block's odd scales for chunk_scales: byte 2c of the low lane = scale 2c, of the high lane
// = scale 2c + 1.
inline __m256i scale_lanes(__m128i odd) { return _mm256_setr_m128i(odd, _mm_srli_si128(odd, 1)); }

// i16 words 0..7 = scale 2c, words 8..15 = scale 2c + 1 (chunk c's two halves): one vpshufb.
inline __m256i chunk_scales(__m256i lanes, int c) {
  return _mm256_shuffle_epi8(lanes, _mm256_set1_epi16(static_cast<int16_t>(0xff00 | (2 * c))));
}

// Decoders: chunk(b, c, &mag, &sign): magnitudes and +-1 sign bytes of chunk c.
struct DecIQ2_RP {
  using Block = BlockIQ2_RP;
  static constexpr float kFactor = 0.125f;
  static void chunk(const Block& b, int c, __m256i* mag, __m256i* sign) {
    const __m256i q = load256(b.qs + 32 * (c % 2));
    const __m256i code = _mm256_and_si256(_mm256_srli_epi16(q, 2 * (c / 2)), _mm256_set1_epi8(3));
    *mag = _mm256_shuffle_epi8(_mm256_setr_epi8(8, 25, 43, 43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 25, 43, 43, 0, 0,
                                                0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                               code);
    uint32_t bits;
    std::memcpy(&bits, b.signs + 4 * c, 4);
    *sign = _mm256_or_si256(bits_to_bytes(bits), _mm256_set1_epi8(1));
  }
};

template <const uint8_t* kLevels, int kFactorQuarters>
struct DecIQ3_RP {
  using Block = BlockIQ3_RP;
  static constexpr float kFactor = 0.25f * kFactorQuarters;
  static void chunk(const Block& b, int c, __m256i* mag, __m256i* sign) {
    // chunk 4h + 2k + l: nibble k of bytes 64h + 32l ..
    const __m256i q = load256(b.qs + 64 * (c / 4) + 32 * (c % 2));
    const __m256i nib = _mm256_and_si256((c / 2) % 2 ? _mm256_srli_epi16(q, 4) : q, _mm256_set1_epi8(0x0f));
    const __m128i lev = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kLevels));
    *mag = _mm256_shuffle_epi8(_mm256_setr_m128i(lev, lev), nib);
    *sign = _mm256_shuffle_epi8(_mm256_setr_epi8(1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 1, 1, 1, 1,
                                                 1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1),
                                nib);
  }
};

template <class D>
struct DotIQRepacked {
  using Block = typename D::Block;
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    const auto* w = static_cast<const Block*>(wv);
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; ++i) {
      const Block& b = w[i];
      const __m256i sl = scale_lanes(odd_scales16(b.scales));
      __m256i isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
      for (int c = 0; c < 8; ++c) {
        __m256i mag, sign;
        D::chunk(b, c, &mag, &sign);
        const __m256i sc = chunk_scales(sl, c);
        for (int t = 0; t < NT; ++t) {
          const __m256i ys = _mm256_sign_epi8(load256(a[t][i].qs + 32 * c), sign);
          isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(mag, ys), sc));
        }
      }
      const float dw = h2f(b.d);
      for (int t = 0; t < NT; ++t) {
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * a[t][i].d), _mm256_cvtepi32_ps(isum[t]), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = D::kFactor * hsum_ps(acc[t]);
  }
};

// IQ1_S_RP / IQ1_M_RP (see dot_iq_repacked512.h): per chunk maddubs(c, y) - maddubs(1, y) times
// the scales; IQ1_M's delta part maddubs(1, y) times the scales signed per group of 8 (a table of
// the chunk's 4 delta bits as +-1 words); IQ1_S's through the bsums. The float steps of
// dot_iquants.h's IQ1 kernels (the `_ref` order, quant/iq1_dot.h).
struct DeltaSigns16 {
  alignas(32) int16_t w[16][16];
};
constexpr DeltaSigns16 delta_signs16() {
  DeltaSigns16 t{};
  for (int b = 0; b < 16; ++b) {
    for (int k = 0; k < 16; ++k) t.w[b][k] = (b >> (k / 4)) & 1 ? -1 : 1;
  }
  return t;
}
inline constexpr DeltaSigns16 kDeltaSigns16 = delta_signs16();

template <bool kM>
struct DotIQ1Repacked {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    const auto* w = static_cast<const BlockIQ1_RP*>(wv);
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
    const __m256i ones = _mm256_set1_epi8(1);
    __m256 acc[NT], acc2[NT];
    float acc1[NT];
    for (int t = 0; t < NT; ++t) {
      acc[t] = acc2[t] = _mm256_setzero_ps();
      acc1[t] = 0.0f;
    }
    for (int64_t i = 0; i < n / 256; ++i) {
      const BlockIQ1_RP& b = w[i];
      const __m256i sl = scale_lanes(odd_scales16(b.scales));
      __m256i isum[NT], isum2[NT];
      for (int t = 0; t < NT; ++t) isum[t] = isum2[t] = _mm256_setzero_si256();
      for (int c = 0; c < 8; ++c) {
        const __m256i q = load256(b.qs + 32 * (c % 2));
        const __m256i code = _mm256_and_si256(_mm256_srli_epi16(q, 2 * (c / 2)), _mm256_set1_epi8(3));
        const __m256i sc = chunk_scales(sl, c);
        __m256i ds = sc;
        if constexpr (kM) {
          const int bits = (b.delta[c / 2] >> (4 * (c % 2))) & 0xf;
          ds = _mm256_sign_epi16(sc, _mm256_load_si256(reinterpret_cast<const __m256i*>(kDeltaSigns16.w[bits])));
        }
        for (int t = 0; t < NT; ++t) {
          const __m256i y = load256(a[t][i].qs + 32 * c);
          const __m256i y1 = _mm256_maddubs_epi16(ones, y);
          isum[t] =
              _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_sub_epi16(_mm256_maddubs_epi16(code, y), y1), sc));
          if constexpr (kM) isum2[t] = _mm256_add_epi32(isum2[t], _mm256_madd_epi16(y1, ds));
        }
      }
      __m256i dsc2 = _mm256_setzero_si256();
      if constexpr (!kM) {
        // chunk c's delta (group 4c's bit) and scale (low nibble of scales[c]) for bsums 2c, 2c + 1
        uint32_t d32;
        std::memcpy(&d32, b.delta, 4);
        const __m128i dv = _mm_set1_epi32(static_cast<int>(d32));
        const __m128i one = _mm_set1_epi32(1);
        const __m128i neg = _mm_packs_epi32(_mm_and_si128(_mm_srlv_epi32(dv, _mm_setr_epi32(0, 4, 8, 12)), one),
                                            _mm_and_si128(_mm_srlv_epi32(dv, _mm_setr_epi32(16, 20, 24, 28)), one));
        const __m128i sc8 = _mm_or_si128(
            _mm_slli_epi16(_mm_and_si128(_mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.scales))),
                                         _mm_set1_epi16(0x0f)),
                           1),
            _mm_set1_epi16(1));
        const __m128i m = _mm_sub_epi16(_mm_setzero_si128(), neg);  // all ones where the delta is -1
        const __m128i v = _mm_sub_epi16(_mm_xor_si128(sc8, m), m);  // -x = ~x + 1 there
        dsc2 = _mm256_setr_m128i(_mm_unpacklo_epi16(v, v), _mm_unpackhi_epi16(v, v));
      }
      const float dw = h2f(b.d);
      for (int t = 0; t < NT; ++t) {
        const float d = dw * a[t][i].d;
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(isum[t]), acc[t]);
        if constexpr (kM) {
          acc2[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(isum2[t]), acc2[t]);
        } else {
          const int sumi1 = hsum_epi32(_mm256_madd_epi16(load256(a[t][i].bsums), dsc2));
          acc1[t] =
              _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(d), _mm_set_ss(static_cast<float>(sumi1)), _mm_set_ss(acc1[t])));
        }
      }
    }
    for (int t = 0; t < NT; ++t) {
      const float h = hsum_ps(acc[t]);
      const float delta = kM ? hsum_ps(acc2[t]) : acc1[t];
      out[t] = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(0.125f), _mm_set_ss(delta), _mm_set_ss(h)));
    }
  }
};

using DecIQ3XXS_RP = DecIQ3_RP<kIq3XxsRpLevels, 1>;
using DecIQ3S_RP = DecIQ3_RP<kIq3SRpLevels, 4>;

// Sets vec_dot and gemm of table t for the repacked layouts (the other types keep theirs).
template <class Table>
void patch_iq_repacked(Table& t) {
  switch (t.type) {
    case GgmlType::kIQ2_RP:
      t.vec_dot = &vec_dot_entry<DotIQRepacked<DecIQ2_RP>>;
      t.gemm = &gemm_entry<DotIQRepacked<DecIQ2_RP>>;
      break;
    case GgmlType::kIQ3_XXS_RP:
      t.vec_dot = &vec_dot_entry<DotIQRepacked<DecIQ3XXS_RP>>;
      t.gemm = &gemm_entry<DotIQRepacked<DecIQ3XXS_RP>>;
      break;
    case GgmlType::kIQ3_S_RP:
      t.vec_dot = &vec_dot_entry<DotIQRepacked<DecIQ3S_RP>>;
      t.gemm = &gemm_entry<DotIQRepacked<DecIQ3S_RP>>;
      break;
    case GgmlType::kIQ1_S_RP:
      t.vec_dot = &vec_dot_entry<DotIQ1Repacked<false>>;
      t.gemm = &gemm_entry<DotIQ1Repacked<false>>;
      break;
    case GgmlType::kIQ1_M_RP:
      t.vec_dot = &vec_dot_entry<DotIQ1Repacked<true>>;
      t.gemm = &gemm_entry<DotIQ1Repacked<true>>;
      break;
    default: break;
  }
}

}  // namespace
}  // namespace sniper::x86
