// SPDX-License-Identifier: MIT
// AVX-512 dot-product kernels for the lookup-free i-quant layouts (quant/iq_repack.h: IQ2_RP,
// IQ3_XXS_RP, IQ3_S_RP; IQ1_S_RP and IQ1_M_RP below) against q8_K activations, 64 elements (two 32-element chunks) per
// step:
//  - magnitudes: a table lookup of the code bytes (IQ2_RP pair j = the codes at bits 2j of the
//    64 code bytes, shifted by 2j; IQ3 pair 2h + k = nibble k of code bytes [64h, 64h + 64))
//    into a table that repeats the levels every 4 or 8 bytes (so the sign bit of an IQ3 nibble,
//    bit 3, is repeated over too). Compiled with AVX512_VBMI (x86_avx512/iquants_avx512vbmi.cpp)
//    it is one vpermb of the 64-byte table, which reads the low 6 bits of a byte and so never
//    needs the bits above a code (the next codes, or the next byte after a word shift) masked;
//    without VBMI, an AND of the low nibble and an in-lane vpshufb;
//  - signs: a 64-bit negate mask (IQ2_RP: loaded from the sign bits; IQ3: vptestmb of the nibbles'
//    sign bits), applied to the activations with a masked byte subtract (q8_K from our quantizer
//    is in [-127, 127], so -y never wraps);
//  - scales: the 16 odd scales of the block as i16 words, spread once per pair by a vpermw into
//    the words of the pair (words 8w..8w+7 = the scale of elements 16w..16w+15 of the pair).
// |q| * y pairs are i16 (|q| <= 62, |y| <= 127: at most 15748), times the scales into the i32
// lanes with vpdpwssd (exact). Integer lane k of the superblock is, as in the `_ref` order
// (quant/lane_order.h), elements 4k..4k+3 of every chunk times their scale (the 512-bit lanes
// 0..7 and 8..15 hold the two chunks of a pair and are added), and the float steps are the ref's,
// so every output is bitwise the `_ref` twin's (vec_dot_iq*_rp_q8_K_ref), and hence the source
// type's. Include only from AVX-512 translation units (needs AVX512F/BW/VL and VNNI).
#pragma once

#include <array>
#include <cstring>

#include "kernels/x86/gemm_entry8.h"
#include "kernels/x86/x86_util.h"
#include "quant/iq_repack.h"
#include "quant/q8_k.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_q32.h): compiled once per ISA.
namespace {

// 64 bytes: levels[i % kN], kN dividing 16 (so every 16 bytes are the same).
template <int kN>
constexpr std::array<uint8_t, 64> level_table_bytes(const uint8_t* levels) {
  std::array<uint8_t, 64> t{};
  for (int i = 0; i < 64; ++i) t[static_cast<size_t>(i)] = levels[i % kN];
  return t;
}
alignas(64) inline constexpr std::array<uint8_t, 64> kIq2RpLevels64 = level_table_bytes<4>(kIq2RpLevels);
alignas(64) inline constexpr std::array<uint8_t, 64> kIq3XxsRpLevels64 = level_table_bytes<8>(kIq3XxsRpLevels);
alignas(64) inline constexpr std::array<uint8_t, 64> kIq3SRpLevels64 = level_table_bytes<8>(kIq3SRpLevels);

// The vpermw indices that make pair p's i16 scale words from odd_scale_words: word w = scale
// 4p + w / 8.
constexpr std::array<std::array<uint16_t, 32>, 4> scale_index_words() {
  std::array<std::array<uint16_t, 32>, 4> idx{};
  for (size_t p = 0; p < 4; ++p) {
    for (size_t w = 0; w < 32; ++w) idx[p][w] = static_cast<uint16_t>(4 * p + w / 8);
  }
  return idx;
}
alignas(64) inline constexpr std::array<std::array<uint16_t, 32>, 4> kRepackScaleIndex = scale_index_words();

// The 16 odd scales 2s+1 of a block (nibbles s at scales[0..7], low nibble first) as the low 16
// i16 words of a zmm.
inline __m512i odd_scale_words(const uint8_t* scales) {
  uint64_t s8;
  std::memcpy(&s8, scales, 8);
  const __m128i x = _mm_cvtsi64_si128(static_cast<long long>(s8));
  const __m128i m = _mm_set1_epi8(0x0f);
  const __m128i s = _mm_unpacklo_epi8(_mm_and_si128(x, m), _mm_and_si128(_mm_srli_epi16(x, 4), m));
  return _mm512_zextsi256_si512(_mm256_cvtepu8_epi16(_mm_or_si128(_mm_add_epi8(s, s), _mm_set1_epi8(1))));
}

// table[idx & 15] per byte, for a level_table_bytes table; with VBMI one vpermb (table[idx & 63],
// the same value since the table repeats every 16 bytes).
inline __m512i lookup_levels(__m512i table, __m512i idx) {
#if defined(__AVX512VBMI__)
  return _mm512_permutexvar_epi8(idx, table);
#else
  return _mm512_shuffle_epi8(table, _mm512_and_si512(idx, _mm512_set1_epi8(0x0f)));
#endif
}

// Decoders: load(b) reads the block's codes once; pair(b, state, p, levels, &mag, &neg) gives
// pair p's magnitudes and negate mask. kFactor as the source type's.
struct Dec512IQ2_RP {
  using Block = BlockIQ2_RP;
  static constexpr float kFactor = 0.125f;
  struct State {
    __m512i codes;
  };
  static __m512i levels() { return _mm512_load_si512(kIq2RpLevels64.data()); }
  static State load(const Block& b) { return {_mm512_loadu_si512(b.qs)}; }
  static void pair(const Block& b, const State& s, int p, __m512i lev, __m512i* mag, __mmask64* neg) {
    const __m512i c = p == 0 ? s.codes : _mm512_srli_epi16(s.codes, static_cast<unsigned>(2 * p));
    *mag = lookup_levels(lev, c);
    uint64_t bits;
    std::memcpy(&bits, b.signs + 8 * p, 8);
    *neg = _cvtu64_mask64(bits);
  }
};

template <const std::array<uint8_t, 64>* kLevels, int kFactorQuarters>
struct Dec512IQ3_RP {
  using Block = BlockIQ3_RP;
  static constexpr float kFactor = 0.25f * kFactorQuarters;
  struct State {
    __m512i nib[2];
  };
  static __m512i levels() { return _mm512_load_si512(kLevels->data()); }
  static State load(const Block& b) { return {{_mm512_loadu_si512(b.qs), _mm512_loadu_si512(b.qs + 64)}}; }
  static void pair(const Block&, const State& s, int p, __m512i lev, __m512i* mag, __mmask64* neg) {
    const __m512i x = s.nib[p / 2];
    if (p % 2 == 0) {
      *mag = lookup_levels(lev, x);
      *neg = _mm512_test_epi8_mask(x, _mm512_set1_epi8(0x08));
    } else {
      *mag = lookup_levels(lev, _mm512_srli_epi16(x, 4));
      *neg = _mm512_test_epi8_mask(x, _mm512_set1_epi8(static_cast<char>(0x80)));
    }
  }
};

// Software prefetch distance (bytes past the block being read) and its bound: the one-token
// matvec (gemm_entry8 with one token) prefetches across the rows of its call, as the K-quant
// matvecs do (dot_kquants512.h), never past them.
constexpr int kRepackPrefetchBytes = 3072;
inline void prefetch_block(const void* p, int bytes, const uint8_t* limit) {
  const uint8_t* c = static_cast<const uint8_t*>(p) + kRepackPrefetchBytes;
  if (limit == nullptr || c + bytes > limit) return;
  for (int off = 0; off < bytes; off += 64) _mm_prefetch(reinterpret_cast<const char*>(c + off), _MM_HINT_T0);
}

template <class D>
struct DotIQRepacked512 {
  using Block = typename D::Block;
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out, const uint8_t* pf_limit = nullptr) {
    const auto* w = static_cast<const Block*>(wv);
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
    const __m512i lev = D::levels();
    const __m512i zero = _mm512_setzero_si512();
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; ++i) {
      const Block& b = w[i];
      prefetch_block(&b, static_cast<int>(sizeof(Block)), pf_limit);
      const typename D::State st = D::load(b);
      const __m512i sw = odd_scale_words(b.scales);
      // Each pair's products go to their own accumulator (kChains of them per token, added at the
      // end: exact), so one token's four vpdpwssd do not wait on each other.
      constexpr int kChains = NT == 1 ? 4 : NT <= 2 ? 2 : 1;
      __m512i part[NT][kChains];
      for (int t = 0; t < NT; ++t) {
        for (int c = 0; c < kChains; ++c) part[t][c] = zero;
      }
      for (int p = 0; p < 4; ++p) {
        __m512i mag;
        __mmask64 neg;
        D::pair(b, st, p, lev, &mag, &neg);
        const __m512i sc =
            _mm512_permutexvar_epi16(_mm512_load_si512(kRepackScaleIndex[static_cast<size_t>(p)].data()), sw);
        for (int t = 0; t < NT; ++t) {
          const __m512i y = _mm512_loadu_si512(a[t][i].qs + 64 * p);
          const __m512i ys = _mm512_mask_sub_epi8(y, neg, zero, y);
          part[t][p % kChains] = _mm512_dpwssd_epi32(part[t][p % kChains], _mm512_maddubs_epi16(mag, ys), sc);
        }
      }
      __m512i isum[NT];
      for (int t = 0; t < NT; ++t) {
        isum[t] = part[t][0];
        if constexpr (kChains >= 2) isum[t] = _mm512_add_epi32(isum[t], part[t][1]);
        if constexpr (kChains == 4) isum[t] = _mm512_add_epi32(isum[t], _mm512_add_epi32(part[t][2], part[t][3]));
      }
      const float dw = h2f(b.d);
      for (int t = 0; t < NT; ++t) {
        const __m256i lanes = _mm256_add_epi32(_mm512_castsi512_si256(isum[t]), _mm512_extracti64x4_epi64(isum[t], 1));
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * a[t][i].d), _mm256_cvtepi32_ps(lanes), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = D::kFactor * hsum_ps(acc[t]);
  }
};

// IQ1_S_RP / IQ1_M_RP: codes c = q + 1 (0..2) per element, so a pair's q * y sums are
// maddubs(c, y) - maddubs(1, y) (i16, at most 3 * 2 * 127: exact), times the scales with
// vpdpwssd. IQ1_M's delta part: the activations' byte-pair sums maddubs(1, y) times the scales
// negated where a group of 8 (4 words) has delta -1 (a masked word subtract; the mask from a
// table of each delta byte's bits spread to 4 words each). IQ1_S's delta part (one sign and
// scale per 32): the q8_K bsums times +-scale, one vpmaddwd per block, as in dot_ternary512.h.
// The float steps are those of DotIQ1_S_512 / DotIQ1_M_512, the `_ref` order (quant/iq1_dot.h).
constexpr std::array<uint32_t, 256> delta_word_masks() {
  std::array<uint32_t, 256> t{};
  for (size_t b = 0; b < 256; ++b) {
    for (int g = 0; g < 8; ++g) {
      if ((b >> g) & 1) t[b] |= 0xfu << (4 * g);
    }
  }
  return t;
}
inline constexpr std::array<uint32_t, 256> kDeltaWordMasks = delta_word_masks();

template <bool kM>
struct DotIQ1Repacked512 {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out, const uint8_t* pf_limit = nullptr) {
    const auto* w = static_cast<const BlockIQ1_RP*>(wv);
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
    const __m512i zero = _mm512_setzero_si512();
    const __m512i ones = _mm512_set1_epi8(1);
    const __m512i three = _mm512_set1_epi8(3);
    __m256 acc[NT], acc2[NT];
    float acc1[NT];
    for (int t = 0; t < NT; ++t) {
      acc[t] = acc2[t] = _mm256_setzero_ps();
      acc1[t] = 0.0f;
    }
    for (int64_t i = 0; i < n / 256; ++i) {
      const BlockIQ1_RP& b = w[i];
      prefetch_block(&b, static_cast<int>(sizeof(BlockIQ1_RP)), pf_limit);
      const __m512i codes = _mm512_loadu_si512(b.qs);
      const __m512i sw = odd_scale_words(b.scales);
      __m512i isum[NT], isum2[NT];
      for (int t = 0; t < NT; ++t) isum[t] = isum2[t] = zero;
      for (int p = 0; p < 4; ++p) {
        const __m512i c =
            _mm512_and_si512(p == 0 ? codes : _mm512_srli_epi16(codes, static_cast<unsigned>(2 * p)), three);
        const __m512i sc =
            _mm512_permutexvar_epi16(_mm512_load_si512(kRepackScaleIndex[static_cast<size_t>(p)].data()), sw);
        __m512i ds = zero;
        if constexpr (kM) {
          const __mmask32 neg = _cvtu32_mask32(kDeltaWordMasks[b.delta[p]]);
          ds = _mm512_mask_sub_epi16(sc, neg, zero, sc);
        }
        for (int t = 0; t < NT; ++t) {
          const __m512i y = _mm512_loadu_si512(a[t][i].qs + 64 * p);
          const __m512i y1 = _mm512_maddubs_epi16(ones, y);
          isum[t] = _mm512_dpwssd_epi32(isum[t], _mm512_sub_epi16(_mm512_maddubs_epi16(c, y), y1), sc);
          if constexpr (kM) isum2[t] = _mm512_dpwssd_epi32(isum2[t], y1, ds);
        }
      }
      __m256i dsc2 = _mm256_setzero_si256();
      if constexpr (!kM) {
        // chunk c's delta (group 4c's bit) and scale (low nibble of scales[c]) for bsums 2c, 2c + 1
        uint32_t d32;
        std::memcpy(&d32, b.delta, 4);
        const __m128i dv = _mm_set1_epi32(static_cast<int>(d32));
        const __m128i one = _mm_set1_epi32(1);  // bits 0 and 1 only before the saturating pack
        const __m128i bits = _mm_packs_epi32(_mm_and_si128(_mm_srlv_epi32(dv, _mm_setr_epi32(0, 4, 8, 12)), one),
                                             _mm_and_si128(_mm_srlv_epi32(dv, _mm_setr_epi32(16, 20, 24, 28)), one));
        const __mmask8 m = _mm_test_epi16_mask(bits, bits);
        uint64_t s8;
        std::memcpy(&s8, b.scales, 8);
        const __m128i lo = _mm_and_si128(_mm_cvtsi64_si128(static_cast<long long>(s8)), _mm_set1_epi8(0x0f));
        const __m128i sc8 = _mm_or_si128(_mm_slli_epi16(_mm_cvtepu8_epi16(lo), 1), _mm_set1_epi16(1));
        const __m128i dsc = _mm_mask_sub_epi16(sc8, m, _mm_setzero_si128(), sc8);
        dsc2 = _mm256_setr_m128i(_mm_unpacklo_epi16(dsc, dsc), _mm_unpackhi_epi16(dsc, dsc));
      }
      const float dw = h2f(b.d);
      for (int t = 0; t < NT; ++t) {
        const float d = dw * a[t][i].d;
        const __m256i lanes = _mm256_add_epi32(_mm512_castsi512_si256(isum[t]), _mm512_extracti64x4_epi64(isum[t], 1));
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(lanes), acc[t]);
        if constexpr (kM) {
          const __m256i l2 = _mm256_add_epi32(_mm512_castsi512_si256(isum2[t]), _mm512_extracti64x4_epi64(isum2[t], 1));
          acc2[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(l2), acc2[t]);
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

using Dec512IQ3XXS_RP = Dec512IQ3_RP<&kIq3XxsRpLevels64, 1>;
using Dec512IQ3S_RP = Dec512IQ3_RP<&kIq3SRpLevels64, 4>;

// Sets vec_dot and gemm of table t for the repacked layouts (the other types keep theirs).
template <class Table>
void patch_iq_repacked512(Table& t) {
  switch (t.type) {
    case GgmlType::kIQ2_RP:
      t.vec_dot = &vec_dot_entry<DotIQRepacked512<Dec512IQ2_RP>>;
      t.gemm = &gemm_entry8<DotIQRepacked512<Dec512IQ2_RP>>;
      break;
    case GgmlType::kIQ3_XXS_RP:
      t.vec_dot = &vec_dot_entry<DotIQRepacked512<Dec512IQ3XXS_RP>>;
      t.gemm = &gemm_entry8<DotIQRepacked512<Dec512IQ3XXS_RP>>;
      break;
    case GgmlType::kIQ3_S_RP:
      t.vec_dot = &vec_dot_entry<DotIQRepacked512<Dec512IQ3S_RP>>;
      t.gemm = &gemm_entry8<DotIQRepacked512<Dec512IQ3S_RP>>;
      break;
    case GgmlType::kIQ1_S_RP:
      t.vec_dot = &vec_dot_entry<DotIQ1Repacked512<false>>;
      t.gemm = &gemm_entry8<DotIQ1Repacked512<false>>;
      break;
    case GgmlType::kIQ1_M_RP:
      t.vec_dot = &vec_dot_entry<DotIQ1Repacked512<true>>;
      t.gemm = &gemm_entry8<DotIQ1Repacked512<true>>;
      break;
    default: break;
  }
}

}  // namespace
}  // namespace sniper::x86
