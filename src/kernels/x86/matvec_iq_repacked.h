// SPDX-License-Identifier: MIT
// One-token matvec (the decode case) of the repacked IQ3 layouts (quant/iq_repack.h: IQ3_XXS_RP,
// IQ3_S_RP) on the AVX2 tier, bitwise equal to DotIQRepacked<DecIQ3_RP> (x86/dot_iq_repacked.h)
// and so to the `_ref` twins and the source types, without its sign work: there a chunk's
// nibbles (code | sign << 3) become magnitudes by one vpshufb and +-1 bytes by a second, which a
// vpsignb applies to the activations. Here one vpshufb looks up v + O (v the signed value, O the
// layout's largest magnitude, 62 or 15: every entry in [0, 2 O]), vpmaddubsw multiplies that with
// the activations (|sum| <= 2 * 124 * 127, no saturation), and subtracting O * (y0 + y1), laid
// out once per call, leaves exactly the words v0 y0 + v1 y1 of DotIQRepacked's vpmaddubsw. The
// rest (the scales' vpmaddwd, the lanes, the float steps) is DotIQRepacked's.
// Include only from ISA translation units (AVX2 and up).
#pragma once

#include <array>

#include "kernels/x86/dot_iq_repacked.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_q32.h): compiled once per ISA.
namespace {

// Super-blocks a matvec call lays out on the stack (rows up to 128 * 256 elements; longer rows
// go through DotIQRepacked).
constexpr int kIq3MatvecMaxSuperBlocks = 128;

// One q8_K super-block laid out for the matvec.
struct alignas(32) Q8KForIQ3Repacked {
  int8_t qs[256];
  int16_t pair_terms[128];  // O * (qs[2i] + qs[2i + 1])
  float d;
  uint8_t pad[28];
};
static_assert(sizeof(Q8KForIQ3Repacked) == 544, "Q8KForIQ3Repacked must stay a whole number of 32-byte lines");

inline void lay_out_q8k_for_iq3_rp(const BlockQ8_K* a, int64_t n_sb, int offset, Q8KForIQ3Repacked* out) {
  const __m256i o = _mm256_set1_epi8(static_cast<char>(offset));
  for (int64_t i = 0; i < n_sb; ++i) {
    for (int c = 0; c < 8; ++c) {
      const __m256i y = load256(a[i].qs + 32 * c);
      _mm256_store_si256(reinterpret_cast<__m256i*>(out[i].qs + 32 * c), y);
      // |O * (y0 + y1)| <= 62 * 254: no saturation.
      _mm256_store_si256(reinterpret_cast<__m256i*>(out[i].pair_terms + 16 * c), _mm256_maddubs_epi16(o, y));
    }
    out[i].d = a[i].d;
  }
}

// 16 bytes: v + kO for nibble i (v = +-levels[i & 7], negative when bit 3 is set).
template <int kO>
constexpr std::array<uint8_t, 16> offset_levels16(const uint8_t* levels) {
  std::array<uint8_t, 16> t{};
  for (size_t i = 0; i < 16; ++i) {
    const int level = levels[i & 7];
    t[i] = static_cast<uint8_t>(((i & 8) != 0 ? -level : level) + kO);
  }
  return t;
}

template <const uint8_t* kLevels, int kO, int kFactorQuarters>
struct MatvecIQ3_RP256 {
  static constexpr float kFactor = 0.25f * kFactorQuarters;
  static constexpr int kOffset = kO;
  static constexpr std::array<uint8_t, 16> kTable = offset_levels16<kO>(kLevels);

  // One row of n_sb super-blocks against laid-out activations.
  static float row_dot(int64_t n_sb, const BlockIQ3_RP* w, const Q8KForIQ3Repacked* a) {
    const __m128i t128 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kTable.data()));
    const __m256i table = _mm256_setr_m128i(t128, t128);
    const __m256i low = _mm256_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n_sb; ++i) {
      const BlockIQ3_RP& b = w[i];
      const __m256i sl = scale_lanes(odd_scales16(b.scales));
      __m256i isum = _mm256_setzero_si256();
      for (int c = 0; c < 8; ++c) {
        // chunk 4h + 2k + l: nibble k of bytes 64h + 32l .. (as DecIQ3_RP)
        const __m256i q = load256(b.qs + 64 * (c / 4) + 32 * (c % 2));
        const __m256i nib = _mm256_and_si256((c / 2) % 2 ? _mm256_srli_epi16(q, 4) : q, low);
        const __m256i y = _mm256_load_si256(reinterpret_cast<const __m256i*>(a[i].qs + 32 * c));
        const __m256i terms = _mm256_load_si256(reinterpret_cast<const __m256i*>(a[i].pair_terms + 16 * c));
        const __m256i prod = _mm256_sub_epi16(_mm256_maddubs_epi16(_mm256_shuffle_epi8(table, nib), y), terms);
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(prod, chunk_scales(sl, c)));
      }
      acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(b.d) * a[i].d), _mm256_cvtepi32_ps(isum), acc);
    }
    return kFactor * hsum_ps(acc);
  }
};

using MatvecIQ3XXS_RP256 = MatvecIQ3_RP256<kIq3XxsRpLevels, 62, 1>;
using MatvecIQ3S_RP256 = MatvecIQ3_RP256<kIq3SRpLevels, 15, 4>;

// KernelTable::gemm of a repacked IQ3 layout: one token with rows of up to
// kIq3MatvecMaxSuperBlocks super-blocks through the matvec, everything else through
// gemm_entry<K>.
template <class M, class K>
void gemm_iq3_rp256(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
                    size_t a_row_bytes, float* out, int64_t out_stride) {
  const int64_t n_sb = n / 256;
  if (n_tok != 1 || n_sb > kIq3MatvecMaxSuperBlocks) {
    gemm_entry<K>(n, n_rows, n_tok, w, w_row_bytes, a, a_row_bytes, out, out_stride);
    return;
  }
  Q8KForIQ3Repacked laid_out[kIq3MatvecMaxSuperBlocks];
  lay_out_q8k_for_iq3_rp(static_cast<const BlockQ8_K*>(a), n_sb, M::kOffset, laid_out);
  const auto* wb = static_cast<const uint8_t*>(w);
  for (int64_t r = 0; r < n_rows; ++r) {
    out[r] =
        M::row_dot(n_sb, reinterpret_cast<const BlockIQ3_RP*>(wb + static_cast<size_t>(r) * w_row_bytes), laid_out);
  }
}

// Sets gemm of table t for the repacked IQ3 layouts (after patch_iq_repacked).
template <class Table>
void patch_iq3_repacked_matvec(Table& t) {
  switch (t.type) {
    case GgmlType::kIQ3_XXS_RP: t.gemm = &gemm_iq3_rp256<MatvecIQ3XXS_RP256, DotIQRepacked<DecIQ3XXS_RP>>; break;
    case GgmlType::kIQ3_S_RP: t.gemm = &gemm_iq3_rp256<MatvecIQ3S_RP256, DotIQRepacked<DecIQ3S_RP>>; break;
    default: break;
  }
}

}  // namespace
}  // namespace sniper::x86
