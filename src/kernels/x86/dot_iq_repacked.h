// SPDX-License-Identifier: MIT
// AVX2 dot-product kernels for the lookup-free i-quant layouts (quant/iq_repack.h: IQ2_RP,
// IQ3_XXS_RP, IQ3_S_RP) against q8_K activations, one 32-element chunk per step: the chunk's
// codes (IQ2_RP: bits 2j of code bytes [32h, 32h + 32) for chunk 2j + h; IQ3: nibble k of code
// bytes [64h + 32l, +32) for chunk 4h + 2k + l) become magnitudes through one vpshufb, the sign
// bits (IQ2_RP: 32 bits expanded to bytes; IQ3: the nibble's bit 3 through a second vpshufb)
// become +-1 bytes for vpsignb on the activations, and maddubs + madd with the chunk's two i16
// scales give the 8 i32 lanes: lane k = elements 4k..4k+3 of every chunk times their scale, the
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
    default: break;
  }
}

}  // namespace
}  // namespace sniper::x86
