// SPDX-License-Identifier: MIT
// AVX-512 dot-product kernels for the ternary-valued formats (IQ1_S, IQ1_M: grid bytes -1/0/+1;
// TQ1_0, TQ2_0: digits 0..2 (3 in TQ2_0's spare code) less 1) against q8_K activations, two
// 32-element chunks per 512-bit step.
//  - IQ1_S / IQ1_M: one vpgatherqq fetches the 8 grid entries of a chunk pair from vectorised
//    indices; |q| = vpabsb, and the grid's own sign bits (vpmovb2m) negate the activations with a
//    masked byte subtract. |q| * y pairs (vpmaddubsw, at most 2 * 128: exact) times the i16 scales
//    accumulate into the i32 lanes with vpdpwssd. The IQ1_M delta term needs no per-token sign
//    work: a group of 8 has one delta sign, so sum(delta * y) over 4 elements is +-sum(y), and the
//    signed scale pairs (+-scale, per i16) multiply the activations' byte-pair sums directly.
//    IQ1_S's delta term (one sign and scale per chunk) is one vpmaddwd of the q8_K bsums.
//  - TQ1_0 / TQ2_0: the digits of a chunk pair come from one broadcast register (per-16-bit
//    multipliers by 3^n for TQ1_0, per-16-bit shifts for TQ2_0), then one vpdpbusd per pair.
// Integer lane k of a superblock is, as in the 256-bit kernels of dot_iquants.h (and ggml's
// AVX2 kernels), elements 4k..4k+3 of every chunk times their scale: the two 256-bit halves of
// the 512-bit sums are added (exact i32), and the float steps are the same, so every output is
// bitwise equal to the `_ref` twins in quant/ (iq1.h, tq.h).
// Every grid index is 11 bits by construction (< 2048, the grid's size).
// Include only from AVX-512 translation units (needs AVX512F/BW/VL and VNNI).
#pragma once

#include <cstring>

#include "kernels/x86/gemm_entry8.h"
#include "kernels/x86/x86_util.h"
#include "quant/iq1.h"
#include "quant/iq_grids.h"
#include "quant/q8_k.h"
#include "quant/tq.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_q32.h): compiled once per ISA.
namespace {

inline uint32_t load_u32_t512(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The 8 grid entries (64 bytes) of a chunk pair from the 8 low index bytes and 8 x 3 high bits
// (group j's bits at hi_shift lane j of h).
inline __m512i iq1_pair_grid(const uint8_t* qs8, uint32_t h, __m512i hi_shift) {
  const __m512i lo = _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs8)));
  // ((h >> s) & 7) << 8 = ((h << 8) >> s) & 0x700; then | lo (vpternlogq 0xEA: (a & b) | c)
  const __m512i hi = _mm512_srlv_epi64(_mm512_set1_epi64(static_cast<int64_t>(h) << 8), hi_shift);
  const __m512i idx = _mm512_ternarylogic_epi64(hi, _mm512_set1_epi64(0x700), lo, 0xEA);
  return _mm512_i64gather_epi64(idx, reinterpret_cast<const long long*>(kIq1sGrid), 8);
}

// Adds the two 256-bit halves of a superblock's 512-bit integer sum: the 8 lanes of dot_iquants.h.
inline __m256i fold_lanes(__m512i v) {
  return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

template <int NT>
inline void load_q8_k_ptrs(const void* const* av, const BlockQ8_K** a) {
  for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
}

struct DotIQ1_S_512 {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    const auto* w = static_cast<const BlockIQ1_S*>(wv);
    const BlockQ8_K* a[NT];
    load_q8_k_ptrs<NT>(av, a);
    __m256 acc[NT];
    float acc1[NT];
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm256_setzero_ps();
      acc1[t] = 0.0f;
    }
    // group j of a pair: bits 3 (j % 4) of qh[2p + j / 4]
    const __m512i hi_shift = _mm512_setr_epi64(0, 3, 6, 9, 16, 19, 22, 25);
    // i16 word w of pair p's scale vector = the scale of chunk 2p + w / 16
    const __m512i sel0 =
        _mm512_set_epi64(0x0001000100010001, 0x0001000100010001, 0x0001000100010001, 0x0001000100010001, 0, 0, 0, 0);
    const __m512i zero = _mm512_setzero_si512();
    for (int64_t i = 0; i < n / 256; ++i) {
      const BlockIQ1_S& b = w[i];
      const __m128i qh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qh));
      // i16 odd scale 2 ((qh >> 12) & 7) + 1 of each chunk, and the same with the delta sign (bit 15)
      const __m128i sc =
          _mm_or_si128(_mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(qh, 12), _mm_set1_epi16(7)), 1), _mm_set1_epi16(1));
      const __m128i dsc = _mm_sign_epi16(sc, _mm_or_si128(qh, _mm_set1_epi16(1)));
      // delta scale per bsums pair: word 2c and 2c + 1 = dsc[c]
      const __m256i dsc2 = _mm256_setr_m128i(_mm_unpacklo_epi16(dsc, dsc), _mm_unpackhi_epi16(dsc, dsc));
      const __m512i sc512 = _mm512_castsi128_si512(sc);
      __m512i isum[NT];
      for (int t = 0; t < NT; ++t) isum[t] = zero;
      for (int p = 0; p < 4; ++p) {
        const __m512i g = iq1_pair_grid(b.qs + 8 * p, load_u32_t512(b.qh + 2 * p), hi_shift);
        const __m512i mag = _mm512_abs_epi8(g);
        const __mmask64 neg = _mm512_movepi8_mask(g);
        const __m512i s =
            _mm512_permutexvar_epi16(_mm512_add_epi16(sel0, _mm512_set1_epi16(static_cast<short>(2 * p))), sc512);
        for (int t = 0; t < NT; ++t) {
          const __m512i y = _mm512_loadu_si512(a[t][i].qs + 64 * p);
          const __m512i ys = _mm512_mask_sub_epi8(y, neg, zero, y);
          isum[t] = _mm512_dpwssd_epi32(isum[t], _mm512_maddubs_epi16(mag, ys), s);
        }
      }
      const float dw = h2f(b.d);
      for (int t = 0; t < NT; ++t) {
        const float d = dw * a[t][i].d;
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(fold_lanes(isum[t])), acc[t]);
        const int sumi1 = hsum_epi32(_mm256_madd_epi16(load256(a[t][i].bsums), dsc2));
        acc1[t] =
            _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(d), _mm_set_ss(static_cast<float>(sumi1)), _mm_set_ss(acc1[t])));
      }
    }
    for (int t = 0; t < NT; ++t) {
      out[t] = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(0.125f), _mm_set_ss(acc1[t]), _mm_set_ss(hsum_ps(acc[t]))));
    }
  }
};

struct DotIQ1_M_512 {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    const auto* w = static_cast<const BlockIQ1_M*>(wv);
    const BlockQ8_K* a[NT];
    load_q8_k_ptrs<NT>(av, a);
    __m256 acc[NT], acc2[NT];
    for (int t = 0; t < NT; ++t) acc[t] = acc2[t] = _mm256_setzero_ps();
    // group j of pair p: index bits 8..10 = bits 4j..4j+2 of the u32 qh[4p..4p+3], delta sign bit 4j+3
    const __m512i hi_shift = _mm512_setr_epi64(0, 4, 8, 12, 16, 20, 24, 28);
    // The block's 16 scale fields (field f: bits 3 (f % 4) of the u16 scales[f / 4]) as odd i32
    // lanes; i32 lane k of pair p (elements 4 (k % 8).. of chunk 2p + k / 8) takes field 4p + k / 4,
    // and its delta sign is bit 4 (k / 2) + 3 of the pair's qh word.
    const __m512i field_word = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i field_shift = _mm512_setr_epi32(0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9);
    const __m512i pair_sel = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i delta_bit =
        _mm512_setr_epi32(1 << 3, 1 << 3, 1 << 7, 1 << 7, 1 << 11, 1 << 11, 1 << 15, 1 << 15, 1 << 19, 1 << 19, 1 << 23,
                          1 << 23, 1 << 27, 1 << 27, static_cast<int>(0x80000000u), static_cast<int>(0x80000000u));
    const __m512i zero = _mm512_setzero_si512();
    const __m512i ones = _mm512_set1_epi8(1);
    for (int64_t i = 0; i < n / 256; ++i) {
      const BlockIQ1_M& b = w[i];
      __m512i isum[NT], isum2[NT];
      for (int t = 0; t < NT; ++t) isum[t] = isum2[t] = zero;
      const __m512i words =
          _mm512_zextsi128_si512(_mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.scales))));
      const __m512i fields = _mm512_and_si512(
          _mm512_srlv_epi32(_mm512_permutexvar_epi32(field_word, words), field_shift), _mm512_set1_epi32(7));
      // both i16 halves of each lane = 2 field + 1 (at most 15: no carry into the high half)
      const __m512i odd = _mm512_or_si512(_mm512_slli_epi32(fields, 1), _mm512_set1_epi32(1));
      const __m512i scales16 = _mm512_or_si512(odd, _mm512_slli_epi32(odd, 16));
      for (int p = 0; p < 4; ++p) {
        const uint32_t h = load_u32_t512(b.qh + 4 * p);
        const __m512i g = iq1_pair_grid(b.qs + 8 * p, h, hi_shift);
        const __m512i mag = _mm512_abs_epi8(g);
        const __mmask64 neg = _mm512_movepi8_mask(g);
        const __m512i s = _mm512_permutexvar_epi32(_mm512_add_epi32(pair_sel, _mm512_set1_epi32(4 * p)), scales16);
        // -s in both i16 halves where the lane's delta sign is set: (s ^ m) - m, m = -1 per i16
        const __m512i m = _mm512_movm_epi32(_mm512_test_epi32_mask(_mm512_set1_epi32(static_cast<int>(h)), delta_bit));
        const __m512i ds = _mm512_sub_epi16(_mm512_xor_si512(s, m), m);
        for (int t = 0; t < NT; ++t) {
          const __m512i y = _mm512_loadu_si512(a[t][i].qs + 64 * p);
          const __m512i ys = _mm512_mask_sub_epi8(y, neg, zero, y);
          isum[t] = _mm512_dpwssd_epi32(isum[t], _mm512_maddubs_epi16(mag, ys), s);
          isum2[t] = _mm512_dpwssd_epi32(isum2[t], _mm512_maddubs_epi16(ones, y), ds);
        }
      }
      const float dw = h2f(iq1_m_scale_bits(b));
      for (int t = 0; t < NT; ++t) {
        const __m256 d = _mm256_set1_ps(dw * a[t][i].d);
        acc[t] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(fold_lanes(isum[t])), acc[t]);
        acc2[t] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(fold_lanes(isum2[t])), acc2[t]);
      }
    }
    for (int t = 0; t < NT; ++t) {
      out[t] =
          _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(0.125f), _mm_set_ss(hsum_ps(acc2[t])), _mm_set_ss(hsum_ps(acc[t]))));
    }
  }
};

// Byte-wise trits: t = floor(3 q / 256) with q = x * m mod 256, m the multiplier of each 16-bit
// word (both its bytes). The high byte of (x & 0xff00) * m is (x_hi * m) mod 256, the low byte of
// x * m is (x_lo * m) mod 256. t = (q >= 86) + (q >= 171).
inline __m512i trits512(__m512i x, __m512i m) {
  const __m512i lo = _mm512_and_si512(_mm512_mullo_epi16(x, m), _mm512_set1_epi16(0x00ff));
  const __m512i hi = _mm512_mullo_epi16(_mm512_and_si512(x, _mm512_set1_epi16(static_cast<short>(0xff00))), m);
  const __m512i q = _mm512_or_si512(lo, hi);
  const __m512i one = _mm512_set1_epi8(1);
  const __m512i t = _mm512_maskz_mov_epi8(_mm512_cmpge_epu8_mask(q, _mm512_set1_epi8(86)), one);
  return _mm512_mask_add_epi8(t, _mm512_cmpge_epu8_mask(q, _mm512_set1_epi8(static_cast<char>(171))), t, one);
}

// TQ1_0 / TQ2_0: digits(b, p) = the 64 digits of chunks 2p, 2p + 1.
struct Dec512TQ1_0 {
  using Block = BlockTQ1_0;
  static void digits(const Block& b, __m512i* d) {
    // chunk n < 5: trit n of qs[0..31]; chunk 5: trits 0, 1 of qs[32..47]; chunk 6: trits 2, 3;
    // chunk 7: trit 4 of qs[32..47], then trit n of qh[m] = element 240 + 4n + m.
    const __m512i x0 = _mm512_broadcast_i64x4(load256(b.qs));
    const __m128i x1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 32));
    const __m128i qh = _mm_set1_epi32(static_cast<int>(load_u32_t512(b.qh)));
    const __m512i x1v = _mm512_broadcast_i32x4(x1);
    const __m512i mix = _mm512_inserti32x4(_mm512_inserti32x4(x0, x1, 2), x1, 3);  // [x0 lo, x0 hi, x1, x1]
    const __m512i tail = _mm512_inserti32x4(x1v, qh, 3);                           // [x1, x1, x1, qh x 4]
    auto m = [](int a, int b) {
      return _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(a)), _mm256_set1_epi16(static_cast<short>(b)), 1);
    };
    d[0] = trits512(x0, m(1, 3));
    d[1] = trits512(x0, m(9, 27));
    d[2] = trits512(
        mix, _mm512_inserti64x4(_mm512_set1_epi16(81), _mm256_setr_m128i(_mm_set1_epi16(1), _mm_set1_epi16(3)), 1));
    d[3] = trits512(tail, _mm512_setr_epi32(0x00090009, 0x00090009, 0x00090009, 0x00090009, 0x001b001b, 0x001b001b,
                                            0x001b001b, 0x001b001b, 0x00510051, 0x00510051, 0x00510051, 0x00510051,
                                            0x00010001, 0x00030003, 0x00090009, 0x001b001b));
  }
};
struct Dec512TQ2_0 {
  using Block = BlockTQ2_0;
  static void digits(const Block& b, __m512i* d) {
    const __m512i m3 = _mm512_set1_epi8(3);
    for (int c = 0; c < 2; ++c) {
      const __m512i x = _mm512_broadcast_i64x4(load256(b.qs + 32 * c));
      // pair 2c + h: shifts 4h (chunk 4c + 2h) and 4h + 2 (chunk 4c + 2h + 1)
      d[2 * c] = _mm512_and_si512(
          _mm512_srlv_epi16(x, _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1)), m3);
      d[2 * c + 1] =
          _mm512_and_si512(_mm512_srlv_epi16(x, _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1)), m3);
    }
  }
};

template <class D>
struct DotTQ512 {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    const auto* w = static_cast<const typename D::Block*>(wv);
    const BlockQ8_K* a[NT];
    load_q8_k_ptrs<NT>(av, a);
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; ++i) {
      const typename D::Block& b = w[i];
      __m512i dg[4];
      D::digits(b, dg);
      const float dw = h2f(b.d);
      for (int t = 0; t < NT; ++t) {
        __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), dg[0], _mm512_loadu_si512(a[t][i].qs));
        for (int p = 1; p < 4; ++p) isum = _mm512_dpbusd_epi32(isum, dg[p], _mm512_loadu_si512(a[t][i].qs + 64 * p));
        // lane m -= bsums[2m] + bsums[2m+1] (the "- 1" of every digit)
        const __m256i ysum = _mm256_madd_epi16(load256(a[t][i].bsums), _mm256_set1_epi16(1));
        const __m256i lanes = _mm256_sub_epi32(fold_lanes(isum), ysum);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lanes), _mm256_set1_ps(dw * a[t][i].d), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = hsum_ps(acc[t]);
  }
};

// Sets vec_dot and gemm of table t for IQ1_S, IQ1_M, TQ1_0 and TQ2_0 (the other types keep theirs).
template <class Table>
void patch_ternary512(Table& t) {
  switch (t.type) {
    case GgmlType::kIQ1_S:
      t.vec_dot = &vec_dot_entry<DotIQ1_S_512>;
      t.gemm = &gemm_entry8<DotIQ1_S_512>;
      break;
    case GgmlType::kIQ1_M:
      t.vec_dot = &vec_dot_entry<DotIQ1_M_512>;
      t.gemm = &gemm_entry8<DotIQ1_M_512>;
      break;
    case GgmlType::kTQ1_0:
      t.vec_dot = &vec_dot_entry<DotTQ512<Dec512TQ1_0>>;
      t.gemm = &gemm_entry8<DotTQ512<Dec512TQ1_0>>;
      break;
    case GgmlType::kTQ2_0:
      t.vec_dot = &vec_dot_entry<DotTQ512<Dec512TQ2_0>>;
      t.gemm = &gemm_entry8<DotTQ512<Dec512TQ2_0>>;
      break;
    default: break;
  }
}

}  // namespace
}  // namespace sniper::x86
