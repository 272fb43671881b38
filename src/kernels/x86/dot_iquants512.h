// SPDX-License-Identifier: MIT
// AVX-512 dot-product kernels for the grid i-quants with per-16-element odd scales (IQ2_XXS,
// IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) against q8_K activations. Two 32-element chunks per 512-bit
// step: a decoder yields the superblock's unsigned grid magnitudes (IQ2: one vpgatherqq of the
// 8 grid entries of a pair from vectorised indices; IQ3: two 8-lane vpgatherdd, which measured
// faster here than one 16-lane gather or 64 scalar loads through a buffer), a 64-bit
// negate mask per pair (bit j negates element j; applied to the activations with a masked byte
// subtract) and the 16 half-chunk scales as i32 lanes. Integer lane k of the superblock sum is, as in the 256-bit
// kernels of dot_iquants.h, elements 4k..4k+3 of every chunk times their scale (the two 256-bit
// halves of the 512-bit sum are added: exact i32), and the float steps are the same, so every
// output is bitwise equal to the `_ref` twins in quant/ (iq2.h, iq3.h).
// Every table index is masked to its table's size, so no block can read outside a table.
// Include only from AVX-512 translation units (needs AVX512F/BW/VL and VNNI).
#pragma once

#include <cstring>

#include "kernels/x86/gemm_entry8.h"
#include "kernels/x86/x86_util.h"
#include "quant/iq2.h"
#include "quant/iq3.h"
#include "quant/iq_grids.h"
#include "quant/q8_k.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_q32.h): compiled once per ISA.
namespace {

// Negate mask of one chunk from four 7-bit ksigns indices (bits 0..27 of w): byte g = the sign
// byte of group g (kKsignsIq2xs: bit k set = element 8g + k is negative).
inline uint32_t ksigns_mask4(uint32_t w) {
  return static_cast<uint32_t>(kKsignsIq2xs[w & 127]) | static_cast<uint32_t>(kKsignsIq2xs[(w >> 7) & 127]) << 8 |
         static_cast<uint32_t>(kKsignsIq2xs[(w >> 14) & 127]) << 16 |
         static_cast<uint32_t>(kKsignsIq2xs[(w >> 21) & 127]) << 24;
}
inline uint64_t load_u64(const void* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint32_t load_u32le(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// 16 i32 lanes 2 * x + 1.
inline __m512i odd_scale(__m512i x) { return _mm512_or_si512(_mm512_slli_epi32(x, 1), _mm512_set1_epi32(1)); }
// 16 bytes [lo0, hi0, lo1, hi1, ...] of the nibbles of 8 bytes p[0..7], widened to i32.
inline __m512i nibbles16(const uint8_t* p) {
  const __m128i x = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i m = _mm_set1_epi8(0x0f);
  return _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(_mm_and_si128(x, m), _mm_and_si128(_mm_srli_epi16(x, 4), m)));
}

// The 16 u32 grid entries at idx (each < the grid's size), as two 8-lane gathers.
inline __m512i gather16(const uint32_t* grid, __m512i idx) {
  const int* g = reinterpret_cast<const int*>(grid);
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_i32gather_epi32(g, _mm512_castsi512_si256(idx), 4)),
                            _mm256_i32gather_epi32(g, _mm512_extracti64x4_epi64(idx, 1), 4), 1);
}

#if defined(__AVX512VBMI__)
// kKsignsIq2xs as two 64-byte vpermi2b tables.
inline void ksigns_tables(__m512i* lo, __m512i* hi) {
  *lo = _mm512_loadu_si512(kKsignsIq2xs);
  *hi = _mm512_loadu_si512(kKsignsIq2xs + 64);
}
// The negate masks of the four chunk pairs of a block from its eight sign words (u32 word c: four
// 7-bit ksigns indices at bits 7k, k < 4, of chunk c): neg[p] byte j = ksigns of index j % 4 of
// word 2p + j / 4. One vpmultishiftqb moves the indices into bytes (qword p holds words 2p and
// 2p + 1; the 8th bit of each byte is ignored by the lookup), one vpermi2b looks them all up.
inline void ksigns_masks_vbmi(__m256i words, uint64_t* neg) {
  __m512i lo, hi;
  ksigns_tables(&lo, &hi);
  const __m512i idx =
      _mm512_multishift_epi64_epi8(_mm512_set1_epi64(0x352E2720150E0700ll), _mm512_zextsi256_si512(words));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(neg), _mm512_castsi512_si256(_mm512_permutex2var_epi8(lo, idx, hi)));
}
#endif

// One decoded chunk pair (chunks 2p and 2p + 1).
struct Pair {
  __m512i mag;
  __mmask64 neg;
};

// Decoder interface: scales(b) = i32 lane 2c + h: odd scale of chunk c, elements 16h..16h+15;
// pair(b, p) = magnitudes and negate mask of chunks 2p, 2p + 1.
// Decoders that produce a chunk pair at a time (pair(b, p)) get the whole-superblock decode from
// this base: the four pairs stored one after another.
template <class D>
struct PairDecoder {
  template <class Block>
  static void decode(const Block& b, uint8_t* mag, uint64_t* neg) {
    for (int p = 0; p < 4; ++p) {
      const Pair pr = D::pair(b, p);
      _mm512_store_si512(mag + 64 * p, pr.mag);
      neg[p] = pr.neg;
    }
  }
};

struct Dec512IQ2_XXS : PairDecoder<Dec512IQ2_XXS> {
  using Block = BlockIQ2_XXS;
#if defined(__AVX512VBMI__)
  // The grid bytes gathered per pair as below; the signs of the whole block in one go.
  static void decode(const Block& b, uint8_t* mag, uint64_t* neg) {
    const __m512i q = _mm512_loadu_si512(b.qs);
    const __m512i odd_words =
        _mm512_permutexvar_epi32(_mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15), q);
    ksigns_masks_vbmi(_mm512_castsi512_si256(odd_words), neg);
    for (int p = 0; p < 4; ++p) _mm512_store_si512(mag + 64 * p, grid(b, p));
  }
#endif
  static __m512i grid(const Block& b, int p) {
    const auto* q = reinterpret_cast<const uint8_t*>(b.qs) + 16 * p;
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m128i idx8 = _mm_shuffle_epi8(x, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, -1, -1, -1, -1, -1, -1, -1, -1));
    return _mm512_i64gather_epi64(_mm512_cvtepu8_epi64(idx8), reinterpret_cast<const long long*>(kIq2xxsGrid), 8);
  }
  static constexpr float kFactor = 0.125f;
  static __m512i scales(const Block& b) {
    // chunk c = u32 words 2c (grid indices) and 2c + 1 (signs, scale in bits 28..31)
    const __m512i q = _mm512_loadu_si512(b.qs);
    const __m512i w =
        _mm512_permutexvar_epi32(_mm512_setr_epi32(1, 1, 3, 3, 5, 5, 7, 7, 9, 9, 11, 11, 13, 13, 15, 15), q);
    return odd_scale(_mm512_srli_epi32(w, 28));
  }
  static Pair pair(const Block& b, int p) {
    const auto* q = reinterpret_cast<const uint8_t*>(b.qs) + 16 * p;
    const uint64_t neg = ksigns_mask4(load_u32le(q + 4)) | static_cast<uint64_t>(ksigns_mask4(load_u32le(q + 12)))
                                                               << 32;
    return {grid(b, p), neg};
  }
};

struct Dec512IQ2_XS : PairDecoder<Dec512IQ2_XS> {
  using Block = BlockIQ2_XS;
  static constexpr float kFactor = 0.125f;
  static __m512i scales(const Block& b) { return odd_scale(nibbles16(b.scales)); }
#if defined(__AVX512VBMI__)
  // The signs of the whole block in one go: the 32 sign indices (q >> 9) as bytes, one vpermi2b.
  static void decode(const Block& b, uint8_t* mag, uint64_t* neg) {
    __m512i lo, hi;
    ksigns_tables(&lo, &hi);
    const __m256i idx = _mm512_cvtepi16_epi8(_mm512_srli_epi16(_mm512_loadu_si512(b.qs), 9));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(neg),
                        _mm512_castsi512_si256(_mm512_permutex2var_epi8(lo, _mm512_zextsi256_si512(idx), hi)));
    for (int p = 0; p < 4; ++p) _mm512_store_si512(mag + 64 * p, grid(b, p));
  }
#endif
  static __m512i grid(const Block& b, int p) {
    const __m512i idx = _mm512_and_si512(
        _mm512_cvtepu16_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 8 * p))), _mm512_set1_epi64(511));
    return _mm512_i64gather_epi64(idx, reinterpret_cast<const long long*>(kIq2xsGrid), 8);
  }
  static Pair pair(const Block& b, int p) {
    const uint16_t* q = b.qs + 8 * p;
    uint64_t neg = 0;
    for (int g = 0; g < 8; ++g) neg |= static_cast<uint64_t>(kKsignsIq2xs[q[g] >> 9]) << (8 * g);
    return {grid(b, p), neg};
  }
};

struct Dec512IQ2_S : PairDecoder<Dec512IQ2_S> {
  using Block = BlockIQ2_S;
  static constexpr float kFactor = 0.125f;
  static __m512i scales(const Block& b) { return odd_scale(nibbles16(b.scales)); }
  static Pair pair(const Block& b, int p) {
    // group j of the pair: qs[8p + j] | bits 2(j % 4)..2(j % 4)+1 of qh[2p + j / 4] << 8
    const __m512i lo = _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs + 8 * p)));
    uint16_t h;
    std::memcpy(&h, b.qh + 2 * p, 2);
    const __m512i hi = _mm512_and_si512(
        _mm512_srlv_epi64(_mm512_set1_epi64(h), _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14)), _mm512_set1_epi64(3));
    const __m512i idx = _mm512_or_si512(lo, _mm512_slli_epi64(hi, 8));
    const __m512i mag = _mm512_i64gather_epi64(idx, reinterpret_cast<const long long*>(kIq2sGrid), 8);
    return {mag, load_u64(b.qs + 32 + 8 * p)};
  }
};

struct Dec512IQ3_XXS {
  using Block = BlockIQ3_XXS;
  static constexpr float kFactor = 0.25f;
  static __m512i scales(const Block& b) {
    const __m512i w = _mm512_cvtepu32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 64)));
    // lanes 2c and 2c + 1 = w_c (zero-extended to 64 bits, so lane 2c + 1 takes it from lane 2c)
    const __m512i dup = _mm512_or_si512(w, _mm512_slli_epi64(w, 32));
    return odd_scale(_mm512_srli_epi32(dup, 28));
  }
  static void decode(const Block& b, uint8_t* mag, uint64_t* neg) {
#if defined(__AVX512VBMI__)
    ksigns_masks_vbmi(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 64)), neg);
#endif
    for (int p = 0; p < 4; ++p) {
      const __m512i idx = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * p)));
      _mm512_store_si512(mag + 64 * p, gather16(kIq3xxsGrid, idx));
#if !defined(__AVX512VBMI__)
      neg[p] = ksigns_mask4(load_u32le(b.qs + 64 + 8 * p)) |
               static_cast<uint64_t>(ksigns_mask4(load_u32le(b.qs + 68 + 8 * p))) << 32;
#endif
    }
  }
};

struct Dec512IQ3_S {
  using Block = BlockIQ3_S;
  static constexpr float kFactor = 1.0f;
  static __m512i scales(const Block& b) {
    // chunk c: nibble c % 2 of scales[c / 2], for both halves
    uint32_t s4;
    std::memcpy(&s4, b.scales, 4);
    const __m128i x = _mm_cvtsi32_si128(static_cast<int>(s4));
    const __m128i m = _mm_set1_epi8(0x0f);
    const __m128i n = _mm_unpacklo_epi8(_mm_and_si128(x, m), _mm_and_si128(_mm_srli_epi16(x, 4), m));
    return odd_scale(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(n, n)));
  }
  static void decode(const Block& b, uint8_t* mag, uint64_t* neg) {
    // group j of pair p: qs[16p + j] | bit j % 8 of qh[2p + j / 8] << 8 (9 bits)
    for (int p = 0; p < 4; ++p) {
      const __m512i lo = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * p)));
      uint16_t h;
      std::memcpy(&h, b.qh + 2 * p, 2);
      const __m512i hi =
          _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32(h),
                                             _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)),
                           _mm512_set1_epi32(1));
      _mm512_store_si512(mag + 64 * p, gather16(kIq3sGrid, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 8))));
      neg[p] = load_u64(b.signs + 8 * p);
    }
  }
};

template <class D>
struct DotIQ512 {
  using Block = typename D::Block;
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    const auto* w = static_cast<const Block*>(wv);
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    // pair p's scale lanes: 4p + j / 4 of the 16 half-chunk scales
    const __m512i sel = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i zero = _mm512_setzero_si512();
    for (int64_t i = 0; i < n / 256; ++i) {
      const Block& b = w[i];
      const __m512i s16 = D::scales(b);
      alignas(64) uint8_t mag[256];
      uint64_t neg[4];
      D::decode(b, mag, neg);
      // One accumulator per pair for a single token (added at the end: exact), so its four
      // vpdpwssd do not wait on each other; with several tokens their own chains interleave.
      constexpr int kChains = NT == 1 ? 4 : NT <= 2 ? 2 : 1;
      __m512i part[NT][kChains];
      for (int t = 0; t < NT; ++t) {
        for (int c = 0; c < kChains; ++c) part[t][c] = zero;
      }
      for (int p = 0; p < 4; ++p) {
        const __m512i m = _mm512_load_si512(mag + 64 * p);
        const __m512i sc32 = _mm512_permutexvar_epi32(_mm512_add_epi32(sel, _mm512_set1_epi32(4 * p)), s16);
        const __m512i sc = _mm512_or_si512(sc32, _mm512_slli_epi32(sc32, 16));  // both i16 halves = scale
        for (int t = 0; t < NT; ++t) {
          const __m512i y = _mm512_loadu_si512(a[t][i].qs + 64 * p);
          const __m512i ys = _mm512_mask_sub_epi8(y, neg[p], zero, y);
          // |q| * y pairs as i16 (|q| <= 62, |y| <= 128: at most 15872, no saturation), then
          // pairs times the scale into the i32 lanes (vpdpwssd: exact).
          part[t][p % kChains] = _mm512_dpwssd_epi32(part[t][p % kChains], _mm512_maddubs_epi16(m, ys), sc);
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
        const float d = dw * a[t][i].d;
        const __m256i lanes = _mm256_add_epi32(_mm512_castsi512_si256(isum[t]), _mm512_extracti64x4_epi64(isum[t], 1));
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(lanes), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = D::kFactor * hsum_ps(acc[t]);
  }
};

// Sets vec_dot and gemm of table t for IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S (the other
// i-quants keep the kernels patch_iquants set). Compiled with AVX512_VBMI
// (x86_avx512/iquants_avx512vbmi.cpp), IQ2_XXS, IQ2_XS and IQ3_XXS find their signs with one
// vpermi2b per block instead of 32 scalar table loads.
template <class Table>
void patch_iquants512(Table& t) {
  switch (t.type) {
    case GgmlType::kIQ2_XXS:
      t.vec_dot = &vec_dot_entry<DotIQ512<Dec512IQ2_XXS>>;
      t.gemm = &gemm_entry8<DotIQ512<Dec512IQ2_XXS>>;
      break;
    case GgmlType::kIQ2_XS:
      t.vec_dot = &vec_dot_entry<DotIQ512<Dec512IQ2_XS>>;
      t.gemm = &gemm_entry8<DotIQ512<Dec512IQ2_XS>>;
      break;
    case GgmlType::kIQ2_S:
      t.vec_dot = &vec_dot_entry<DotIQ512<Dec512IQ2_S>>;
      t.gemm = &gemm_entry8<DotIQ512<Dec512IQ2_S>>;
      break;
    case GgmlType::kIQ3_XXS:
      t.vec_dot = &vec_dot_entry<DotIQ512<Dec512IQ3_XXS>>;
      t.gemm = &gemm_entry8<DotIQ512<Dec512IQ3_XXS>>;
      break;
    case GgmlType::kIQ3_S:
      t.vec_dot = &vec_dot_entry<DotIQ512<Dec512IQ3_S>>;
      t.gemm = &gemm_entry8<DotIQ512<Dec512IQ3_S>>;
      break;
    default: break;
  }
}

}  // namespace
}  // namespace sniper::x86
