// SPDX-License-Identifier: MIT
// One-token matvec (the decode case) of the repacked i-quant layouts (quant/iq_repack.h: IQ2_RP,
// IQ3_XXS_RP, IQ3_S_RP) on the AVX-512 tier with VNNI and VBMI, bitwise equal to
// DotIQRepacked512 (x86/dot_iq_repacked512.h) and so to the `_ref` twins and the source types, in
// about two thirds of its vector instructions per block. Where DotIQRepacked512 spends them, per
// 64-element pair: a maddubs and a vpdpwssd, a vpermw to spread the scales (after seven
// instructions per block that widen them), and for IQ3 a vptestmb and a masked subtract for the
// signs. Here:
//  - Four products per 32-bit lane in one vpdpbusd (unsigned weight bytes times signed
//    activations): lane j of pair p sums elements 64p + 4j .. + 3, the products DotIQRepacked512
//    adds into its lane j before scaling (every element of a lane shares its scale).
//      IQ2_RP: the magnitudes (one vpermb of the code bytes into a table per pair, so only pair 3
//      needs a shift) times the activations negated where the sign bits are set (a masked
//      subtract, as there); |sum| <= 4 * 43 * 127.
//      IQ3_*_RP: a nibble (code | sign << 3) looks up v + O in one vpermb, v its signed value and
//      O the layout's largest magnitude (62 or 15, so every entry is in [0, 2 O]); the lane's
//      accumulator starts at -O times the sum of its 4 activations, laid out once per call, so it
//      ends at exactly the sum of the 4 v * y: no sign mask, no subtract. |sum| <= 4 * 62 * 128.
//  - Both sums fit 16 bits, so two pairs share one vpdpwssd: pair 2h + 1's lanes shifted into
//    the upper words and blended over pair 2h's, times scale words 2 s + 1 made from the 8 scale
//    bytes by one vpmultishiftqb (the byte at bit 4g - 1 of the scales: bits 1..4 are s_g) and
//    one vpternlogd (& 0x1e | 1 per word).
//  - The activations are copied once per call (aligned, with IQ3's lane terms).
// The integer lanes are DotIQRepacked512's (exact: integer sums in any order), the ref's lane k
// is lanes k and k + 8 added, and the float steps are the same (the `_ref` order,
// quant/lane_order.h). Include only from translation units compiled with AVX512_VBMI.
#pragma once

#if !defined(__AVX512VBMI__)
#error "matvec_iq_repacked512.h needs AVX512_VBMI (vpermb, vpmultishiftqb)"
#endif

#include <array>
#include <cstring>

#include "kernels/x86/dot_iq_repacked512.h"
#include "kernels/x86/gemm_entry8.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_q32.h): compiled once per ISA.
namespace {

// Super-blocks a matvec call lays out on the stack (rows up to 128 * 256 elements: every matrix
// of today's models; longer rows go through DotIQRepacked512).
constexpr int kIqMatvecMaxSuperBlocks = 128;

// One q8_K super-block laid out for the matvec.
struct alignas(64) Q8KForIQRepacked {
  int8_t qs[256];
  int32_t lane_terms[64];  // -O * (qs[4j] + .. + qs[4j + 3]) for lane j of the 64 (IQ3 layouts)
  float d;
  uint8_t pad[60];
};
static_assert(sizeof(Q8KForIQRepacked) == 576, "Q8KForIQRepacked must stay a whole number of cache lines");

inline void lay_out_q8k_for_iq_rp(const BlockQ8_K* a, int64_t n_sb, int offset, Q8KForIQRepacked* out) {
  const __m512i o = _mm512_set1_epi8(static_cast<char>(offset));
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t i = 0; i < n_sb; ++i) {
    for (int p = 0; p < 4; ++p) {
      const __m512i y = _mm512_loadu_si512(a[i].qs + 64 * p);
      _mm512_store_si512(out[i].qs + 64 * p, y);
      _mm512_store_si512(out[i].lane_terms + 16 * p, _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, o, y)));
    }
    out[i].d = a[i].d;
  }
}

// 64 bytes: v + kO for nibble i & 15 (v = +-levels[i & 7], negative when bit 3 is set), so that
// a vpermb reads the low nibble of a byte whatever its bits 4 and 5 hold.
template <int kO>
constexpr std::array<uint8_t, 64> offset_level_table(const uint8_t* levels) {
  std::array<uint8_t, 64> t{};
  for (size_t i = 0; i < 64; ++i) {
    const int level = levels[i & 7];
    t[i] = static_cast<uint8_t>(((i & 8) != 0 ? -level : level) + kO);
  }
  return t;
}
alignas(64) inline constexpr std::array<uint8_t, 64> kIq3XxsRpOffsetLevels64 = offset_level_table<62>(kIq3XxsRpLevels);
alignas(64) inline constexpr std::array<uint8_t, 64> kIq3SRpOffsetLevels64 = offset_level_table<15>(kIq3SRpLevels);

// vpmultishiftqb controls of the scale words of pairs 2h and 2h + 1: the low byte of word 2j
// (of dword j) starts at bit 4g - 1 of the scales (mod 64), g = 4 (2h) + j / 4 the 16-element
// group of lane j of pair 2h; word 2j + 1 the same for pair 2h + 1; high bytes are masked off.
constexpr std::array<std::array<uint8_t, 64>, 2> scale_word_controls() {
  std::array<std::array<uint8_t, 64>, 2> c{};
  for (size_t h = 0; h < 2; ++h) {
    for (size_t j = 0; j < 16; ++j) {
      const size_t g_lo = 4 * (2 * h) + j / 4, g_hi = 4 * (2 * h + 1) + j / 4;
      c[h][4 * j] = static_cast<uint8_t>((4 * g_lo + 63) % 64);
      c[h][4 * j + 2] = static_cast<uint8_t>((4 * g_hi + 63) % 64);
    }
  }
  return c;
}
alignas(64) inline constexpr std::array<std::array<uint8_t, 64>, 2> kScaleWordControls = scale_word_controls();

// 64 bytes: the IQ2_RP level of the code at bits 2j..2j+1 of byte i (i < 64), so that a vpermb of
// the code bytes themselves gives pair j's magnitudes (j < 3; bits 6 and 7 are beyond a vpermb).
constexpr std::array<uint8_t, 64> iq2_rp_pair_levels(int j) {
  std::array<uint8_t, 64> t{};
  for (size_t i = 0; i < 64; ++i) t[i] = kIq2RpLevels[(i >> (2 * j)) & 3];
  return t;
}
alignas(64) inline constexpr std::array<std::array<uint8_t, 64>, 3> kIq2RpPairLevels = {
    iq2_rp_pair_levels(0), iq2_rp_pair_levels(1), iq2_rp_pair_levels(2)};

// Decoders: tables() loads a row's constants once; pair_sums(b, a, tables, p) sets p[0..3] to the
// 4-product lane sums of the block's 4 pairs.
struct MatvecIQ2_RP {
  using Block = BlockIQ2_RP;
  static constexpr float kFactor = 0.125f;
  static constexpr int kOffset = 0;
  struct Tables {
    __m512i pair[3];
  };
  static Tables tables() {
    return {{_mm512_load_si512(kIq2RpPairLevels[0].data()), _mm512_load_si512(kIq2RpPairLevels[1].data()),
             _mm512_load_si512(kIq2RpPairLevels[2].data())}};
  }
  [[gnu::always_inline]] static void pair_sums(const Block& b, const Q8KForIQRepacked& a, const Tables& t, __m512i* p) {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i codes = _mm512_loadu_si512(b.qs);
    for (int j = 0; j < 4; ++j) {
      // Pairs 0..2 by their own table; pair 3 (bits 6, 7) shifted down into pair 0's place.
      const __m512i mag = j < 3 ? _mm512_permutexvar_epi8(codes, t.pair[j])
                                : _mm512_permutexvar_epi8(_mm512_srli_epi16(codes, 6), t.pair[0]);
      uint64_t bits;
      std::memcpy(&bits, b.signs + 8 * j, 8);
      const __m512i y = _mm512_load_si512(a.qs + 64 * j);
      p[j] = _mm512_dpbusd_epi32(zero, mag, _mm512_mask_sub_epi8(y, _cvtu64_mask64(bits), zero, y));
    }
  }
};

template <const std::array<uint8_t, 64>* kTable, int kO, int kFactorQuarters>
struct MatvecIQ3_RP {
  using Block = BlockIQ3_RP;
  static constexpr float kFactor = 0.25f * kFactorQuarters;
  static constexpr int kOffset = kO;
  struct Tables {
    __m512i levels;
  };
  static Tables tables() { return {_mm512_load_si512(kTable->data())}; }
  [[gnu::always_inline]] static void pair_sums(const Block& b, const Q8KForIQRepacked& a, const Tables& t, __m512i* p) {
    const __m512i table = t.levels;
    for (int h = 0; h < 2; ++h) {
      // Pair 2h: the low nibbles of code bytes [64h, 64h + 64); pair 2h + 1: the high ones.
      const __m512i x = _mm512_loadu_si512(b.qs + 64 * h);
      p[2 * h] = _mm512_dpbusd_epi32(_mm512_load_si512(a.lane_terms + 32 * h), _mm512_permutexvar_epi8(x, table),
                                     _mm512_load_si512(a.qs + 128 * h));
      p[2 * h + 1] = _mm512_dpbusd_epi32(_mm512_load_si512(a.lane_terms + 32 * h + 16),
                                         _mm512_permutexvar_epi8(_mm512_srli_epi16(x, 4), table),
                                         _mm512_load_si512(a.qs + 128 * h + 64));
    }
  }
};

using MatvecIQ3XXS_RP = MatvecIQ3_RP<&kIq3XxsRpOffsetLevels64, 62, 1>;
using MatvecIQ3S_RP = MatvecIQ3_RP<&kIq3SRpOffsetLevels64, 15, 4>;

// One row of n_sb super-blocks against laid-out activations; prefetches weights up to pf_limit.
template <class D>
inline float iq_rp_row_dot(int64_t n_sb, const typename D::Block* w, const Q8KForIQRepacked* a,
                           const uint8_t* pf_limit) {
  const typename D::Tables tables = D::tables();
  const __m512i ctrl0 = _mm512_load_si512(kScaleWordControls[0].data());
  const __m512i ctrl1 = _mm512_load_si512(kScaleWordControls[1].data());
  const __m512i mask = _mm512_set1_epi16(0x1e);
  const __m512i one = _mm512_set1_epi16(1);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n_sb; ++i) {
    const typename D::Block& b = w[i];
    prefetch_block(&b, static_cast<int>(sizeof(b)), pf_limit);
    uint64_t s8;
    std::memcpy(&s8, b.scales, 8);
    const __m512i s = _mm512_set1_epi64(static_cast<long long>(s8));
    // (x & 0x1e) | 1: vpternlogd truth table 0xea = (A & B) | C.
    const __m512i sc0 = _mm512_ternarylogic_epi32(_mm512_multishift_epi64_epi8(ctrl0, s), mask, one, 0xea);
    const __m512i sc1 = _mm512_ternarylogic_epi32(_mm512_multishift_epi64_epi8(ctrl1, s), mask, one, 0xea);
    __m512i p[4];
    D::pair_sums(b, a[i], tables, p);
    const __m512i both0 = _mm512_mask_blend_epi16(0xAAAAAAAA, p[0], _mm512_slli_epi32(p[1], 16));
    const __m512i both1 = _mm512_mask_blend_epi16(0xAAAAAAAA, p[2], _mm512_slli_epi32(p[3], 16));
    const __m512i isum = _mm512_dpwssd_epi32(_mm512_madd_epi16(both0, sc0), both1, sc1);
    const __m256i lanes = _mm256_add_epi32(_mm512_castsi512_si256(isum), _mm512_extracti64x4_epi64(isum, 1));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(b.d) * a[i].d), _mm256_cvtepi32_ps(lanes), acc);
  }
  return D::kFactor * hsum_ps(acc);
}

// KernelTable::gemm of a repacked layout: one token with rows of up to kIqMatvecMaxSuperBlocks
// super-blocks through the matvec (the activations laid out once, weights prefetched across the
// rows of the call, never past them), everything else through gemm_entry8<K>.
template <class D, class K>
void gemm_iq_rp512(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
                   size_t a_row_bytes, float* out, int64_t out_stride) {
  const int64_t n_sb = n / 256;
  if (n_tok != 1 || n_sb > kIqMatvecMaxSuperBlocks) {
    gemm_entry8<K>(n, n_rows, n_tok, w, w_row_bytes, a, a_row_bytes, out, out_stride);
    return;
  }
  Q8KForIQRepacked laid_out[kIqMatvecMaxSuperBlocks];
  lay_out_q8k_for_iq_rp(static_cast<const BlockQ8_K*>(a), n_sb, D::kOffset, laid_out);
  const auto* wb = static_cast<const uint8_t*>(w);
  const uint8_t* w_end = wb + static_cast<size_t>(n_rows) * w_row_bytes;
  for (int64_t r = 0; r < n_rows; ++r) {
    out[r] = iq_rp_row_dot<D>(
        n_sb, reinterpret_cast<const typename D::Block*>(wb + static_cast<size_t>(r) * w_row_bytes), laid_out, w_end);
  }
}

// Sets gemm of table t for the repacked IQ2 and IQ3 layouts (after patch_iq_repacked512).
template <class Table>
void patch_iq_repacked_matvec512(Table& t) {
  switch (t.type) {
    case GgmlType::kIQ2_RP: t.gemm = &gemm_iq_rp512<MatvecIQ2_RP, DotIQRepacked512<Dec512IQ2_RP>>; break;
    case GgmlType::kIQ3_XXS_RP: t.gemm = &gemm_iq_rp512<MatvecIQ3XXS_RP, DotIQRepacked512<Dec512IQ3XXS_RP>>; break;
    case GgmlType::kIQ3_S_RP: t.gemm = &gemm_iq_rp512<MatvecIQ3S_RP, DotIQRepacked512<Dec512IQ3S_RP>>; break;
    default: break;
  }
}

}  // namespace
}  // namespace sniper::x86
