// SPDX-License-Identifier: MIT
// Dot-product kernels for the i-quants and ternary formats (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
// IQ3_S, IQ1_S, IQ1_M, TQ1_0, TQ2_0) against q8_K activations, as one template over a format
// decoder and an ISA policy. Per 32-element chunk a decoder yields the unsigned magnitudes
// (grid bytes gathered with one 64/32-bit table load per group, or ternary digits), a sign
// vector (applied to the activations with vpsignb) and the chunk's two 16-element scales. The
// integer lane layout equals ggml's AVX2 kernels (int32 lane k = elements 4k..4k+3 of every
// chunk, times the element's scale), and the float steps are theirs, so every output is
// bitwise equal to the `_ref` twins in quant/ (iq1.h, iq2.h, iq3.h, tq.h).
// Every table index is masked to its table's size, so no block can read outside a table.
// Include only from ISA translation units.
#pragma once

#include <cstring>

#include "kernels/x86/x86_util.h"
#include "quant/iq1.h"
#include "quant/iq2.h"
#include "quant/iq3.h"
#include "quant/iq_grids.h"
#include "quant/q8_k.h"
#include "quant/tq.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_q32.h): compiled once per ISA.
namespace {

// How a chunk's scaled byte dot accumulates: maddubs + madd with i16 scales (exact). The
// AVX-512 tier has its own kernels for every type here (dot_iquants512.h, dot_ternary512.h).
struct IqAvx2 {
  static __m256i scale_vec(int lo, int hi) { return scale_pair16(lo, hi); }
  static __m256i scale_vec(int s) { return _mm256_set1_epi16(static_cast<int16_t>(s)); }
  static __m256i dot(__m256i acc, __m256i mag, __m256i ys, __m256i scale) {
    return _mm256_add_epi32(acc, dot_u8s8_scaled(mag, ys, scale));
  }
};

// One decoded 32-element chunk: |q| bytes, sign bytes (negative = negate, 0 = zero, else keep)
// and the i32/i16 scales of elements 0..15 and 16..31.
struct Chunk {
  __m256i mag;
  __m256i sign;
  int scale_lo;
  int scale_hi;
};

inline __m256i grid64x4(const uint64_t* grid, int i0, int i1, int i2, int i3) {
  return _mm256_set_epi64x(static_cast<int64_t>(grid[i3]), static_cast<int64_t>(grid[i2]),
                           static_cast<int64_t>(grid[i1]), static_cast<int64_t>(grid[i0]));
}
// ksigns64 bytes are 0x00 / 0xff; OR 1 makes them +1 / -1 for vpsignb.
inline __m256i signs64x4(uint32_t w) {
  const __m256i s = _mm256_set_epi64x(
      static_cast<int64_t>(kKsigns64[(w >> 21) & 127]), static_cast<int64_t>(kKsigns64[(w >> 14) & 127]),
      static_cast<int64_t>(kKsigns64[(w >> 7) & 127]), static_cast<int64_t>(kKsigns64[w & 127]));
  return _mm256_or_si256(s, _mm256_set1_epi8(1));
}
inline __m256i sign_bits(const uint8_t* p) {
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  return _mm256_or_si256(bits_to_bytes(bits), _mm256_set1_epi8(1));
}
inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

enum class IqFinish { kScaled, kIq1s, kIq1m, kTernary };

struct DecIQ2_XXS {
  using Block = BlockIQ2_XXS;
  static constexpr IqFinish kFinish = IqFinish::kScaled;
  static constexpr bool kOneScale = true;  // true: both halves of a chunk share one scale (one broadcast)
  static constexpr float kFactor = 0.125f;
  static float scale(const Block& b) { return h2f(b.d); }
  static Chunk chunk(const Block& b, int c) {
    const auto* q = reinterpret_cast<const uint8_t*>(b.qs) + 8 * c;
    const uint32_t w = load_u32(q + 4);
    const int s = 2 * static_cast<int>(w >> 28) + 1;
    return {grid64x4(kIq2xxsGrid, q[0], q[1], q[2], q[3]), signs64x4(w), s, s};
  }
};

struct DecIQ2_XS {
  using Block = BlockIQ2_XS;
  static constexpr IqFinish kFinish = IqFinish::kScaled;
  static constexpr bool kOneScale = false;
  static constexpr float kFactor = 0.125f;
  static float scale(const Block& b) { return h2f(b.d); }
  static Chunk chunk(const Block& b, int c) {
    const uint16_t* q = b.qs + 4 * c;
    const __m256i sign =
        _mm256_set_epi64x(static_cast<int64_t>(kKsigns64[q[3] >> 9]), static_cast<int64_t>(kKsigns64[q[2] >> 9]),
                          static_cast<int64_t>(kKsigns64[q[1] >> 9]), static_cast<int64_t>(kKsigns64[q[0] >> 9]));
    return {grid64x4(kIq2xsGrid, q[0] & 511, q[1] & 511, q[2] & 511, q[3] & 511),
            _mm256_or_si256(sign, _mm256_set1_epi8(1)), 2 * (b.scales[c] & 0xf) + 1, 2 * (b.scales[c] >> 4) + 1};
  }
};

struct DecIQ2_S {
  using Block = BlockIQ2_S;
  static constexpr IqFinish kFinish = IqFinish::kScaled;
  static constexpr bool kOneScale = false;
  static constexpr float kFactor = 0.125f;
  static float scale(const Block& b) { return h2f(b.d); }
  static Chunk chunk(const Block& b, int c) {
    const uint8_t* q = b.qs + 4 * c;
    const int h = b.qh[c];
    return {grid64x4(kIq2sGrid, q[0] | ((h << 8) & 0x300), q[1] | ((h << 6) & 0x300), q[2] | ((h << 4) & 0x300),
                     q[3] | ((h << 2) & 0x300)),
            sign_bits(b.qs + 32 + 4 * c), 2 * (b.scales[c] & 0xf) + 1, 2 * (b.scales[c] >> 4) + 1};
  }
};

struct DecIQ3_XXS {
  using Block = BlockIQ3_XXS;
  static constexpr IqFinish kFinish = IqFinish::kScaled;
  static constexpr bool kOneScale = true;  // true: both halves of a chunk share one scale (one broadcast)
  static constexpr float kFactor = 0.25f;
  static float scale(const Block& b) { return h2f(b.d); }
  static Chunk chunk(const Block& b, int c) {
    const uint32_t w = load_u32(b.qs + 64 + 4 * c);
    const __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs + 8 * c)));
    const __m256i mag = _mm256_i32gather_epi32(reinterpret_cast<const int*>(kIq3xxsGrid), idx, 4);
    const int s = 2 * static_cast<int>(w >> 28) + 1;
    return {mag, signs64x4(w), s, s};
  }
};

struct DecIQ3_S {
  using Block = BlockIQ3_S;
  static constexpr IqFinish kFinish = IqFinish::kScaled;
  static constexpr bool kOneScale = true;  // true: both halves of a chunk share one scale (one broadcast)
  static constexpr float kFactor = 1.0f;
  static float scale(const Block& b) { return h2f(b.d); }
  static Chunk chunk(const Block& b, int c) {
    // index k = qs[8c + k] | bit k of qh[c] << 8 (9 bits, < 512)
    const __m256i lo = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs + 8 * c)));
    const __m256i hi = _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32(b.qh[c]), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)), _mm256_set1_epi32(1));
    const __m256i idx = _mm256_or_si256(lo, _mm256_slli_epi32(hi, 8));
    const __m256i mag = _mm256_i32gather_epi32(reinterpret_cast<const int*>(kIq3sGrid), idx, 4);
    const int s = 2 * ((b.scales[c / 2] >> (4 * (c % 2))) & 0xf) + 1;
    return {mag, sign_bits(b.signs + 4 * c), s, s};
  }
};

// Ternary grid values are signed: magnitude |q|, and q itself as the sign vector.
inline Chunk ternary_chunk(__m256i q, int lo, int hi) { return {_mm256_sign_epi8(q, q), q, lo, hi}; }

struct DecIQ1_S {
  using Block = BlockIQ1_S;
  static constexpr IqFinish kFinish = IqFinish::kIq1s;
  static constexpr bool kOneScale = true;  // true: both halves of a chunk share one scale (one broadcast)
  static float scale(const Block& b) { return h2f(b.d); }
  static Chunk chunk(const Block& b, int c) {
    const uint8_t* q = b.qs + 4 * c;
    const int h = b.qh[c];
    const int s = 2 * ((h >> 12) & 7) + 1;
    return ternary_chunk(grid64x4(kIq1sGrid, q[0] | ((h << 8) & 0x700), q[1] | ((h << 5) & 0x700),
                                  q[2] | ((h << 2) & 0x700), q[3] | ((h >> 1) & 0x700)),
                         s, s);
  }
  // i16 word 2c and 2c + 1: (2s+1) * e of chunk c (the delta term, applied through the q8_K
  // bsums of its two halves with one vpmaddwd).
  static __m256i delta_scales(const Block& b) {
    const __m128i qh = load128(b.qh);
    const __m128i sc =
        _mm_or_si128(_mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(qh, 12), _mm_set1_epi16(7)), 1), _mm_set1_epi16(1));
    const __m128i dsc = _mm_sign_epi16(sc, _mm_or_si128(qh, _mm_set1_epi16(1)));  // qh < 0: bit 15, e = -1
    return _mm256_setr_m128i(_mm_unpacklo_epi16(dsc, dsc), _mm_unpackhi_epi16(dsc, dsc));
  }
};

struct DecIQ1_M {
  using Block = BlockIQ1_M;
  static constexpr IqFinish kFinish = IqFinish::kIq1m;
  static constexpr bool kOneScale = false;
  static float scale(const Block& b) { return h2f(iq1_m_scale_bits(b)); }
  static Chunk chunk(const Block& b, int c) {
    const uint8_t* q = b.qs + 4 * c;
    const int h0 = b.qh[2 * c], h1 = b.qh[2 * c + 1];
    uint16_t sc;
    std::memcpy(&sc, b.scales + 2 * (c / 2), 2);
    const int r = 6 * (c % 2);
    return ternary_chunk(grid64x4(kIq1sGrid, q[0] | ((h0 << 8) & 0x700), q[1] | ((h0 << 4) & 0x700),
                                  q[2] | ((h1 << 8) & 0x700), q[3] | ((h1 << 4) & 0x700)),
                         2 * ((sc >> r) & 7) + 1, 2 * ((sc >> (r + 3)) & 7) + 1);
  }
  // The chunk's i16 scale pairs (scale16, as scale_pair16) times the delta sign of each group of
  // 8 (i32 lanes 2l, 2l + 1; group l: bit 3 + 4 (l % 2) of qh[2c + l / 2], set = -1). A group's
  // delta term over 4 elements is then +-scale * sum(y): vpmaddwd of the activations' byte-pair
  // sums with these, no sign work per token.
  static __m256i delta_scales(const Block& b, int c, __m256i scale16) {
    const uint32_t h = static_cast<uint32_t>(b.qh[2 * c]) | static_cast<uint32_t>(b.qh[2 * c + 1]) << 8;
    const __m256i bit = _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(h)), _mm256_setr_epi32(3, 3, 7, 7, 11, 11, 15, 15)),
        _mm256_set1_epi32(1));
    const __m256i neg = _mm256_sub_epi32(_mm256_setzero_si256(), bit);  // all ones where negative
    return _mm256_sub_epi16(_mm256_xor_si256(scale16, neg), neg);       // -x = ~x + 1 per i16 word
  }
};

// TQ1_0 trits of every byte of x: q = x * m mod 256 (m = 3^n, the multiplier of each 16-bit
// word), then t = (q * 3) >> 8. Even bytes: q = low byte of x * m, t = high half of q * 768;
// odd bytes: (x & 0xff00) * m = q << 8 exactly, and q * 3 = its high half times 768, whose high
// byte is t.
inline __m256i trits(__m256i x, __m256i m) {
  const __m256i k768 = _mm256_set1_epi16(768);
  const __m256i q_even = _mm256_and_si256(_mm256_mullo_epi16(x, m), _mm256_set1_epi16(0x00ff));
  const __m256i q_odd = _mm256_mullo_epi16(_mm256_and_si256(x, _mm256_set1_epi16(static_cast<int16_t>(0xff00))), m);
  const __m256i t_odd =
      _mm256_and_si256(_mm256_mulhi_epu16(q_odd, k768), _mm256_set1_epi16(static_cast<int16_t>(0xff00)));
  return _mm256_or_si256(_mm256_mulhi_epu16(q_even, k768), t_odd);
}

// TQ digits (0..3) are unsigned with scale 1: digits(b, d) = chunk c's 32 digits in d[c].
struct DecTQ1_0 {
  using Block = BlockTQ1_0;
  static constexpr IqFinish kFinish = IqFinish::kTernary;
  static float scale(const Block& b) { return h2f(b.d); }
  // FORMATS.md 4.10 order: chunk n < 5 = trit n of qs[0..31]; chunk 5 = trits 0, 1 of
  // qs[32..47]; chunk 6 = trits 2, 3; chunk 7 = trit 4 of qs[32..47], then trit n of qh[m] =
  // element 240 + 4n + m.
  static void digits(const Block& b, __m256i* d) {
    const __m256i x0 = load256(b.qs);
    const __m128i x1 = load128(b.qs + 32);
    const __m256i x11 = _mm256_setr_m128i(x1, x1);
    const __m256i tail = _mm256_setr_m128i(x1, _mm_set1_epi32(static_cast<int>(load_u32(b.qh))));
    d[0] = trits(x0, _mm256_set1_epi16(1));
    d[1] = trits(x0, _mm256_set1_epi16(3));
    d[2] = trits(x0, _mm256_set1_epi16(9));
    d[3] = trits(x0, _mm256_set1_epi16(27));
    d[4] = trits(x0, _mm256_set1_epi16(81));
    d[5] = trits(x11, scale_pair16(1, 3));
    d[6] = trits(x11, scale_pair16(9, 27));
    d[7] = trits(tail, _mm256_setr_epi32(0x00510051, 0x00510051, 0x00510051, 0x00510051, 0x00010001, 0x00030003,
                                         0x00090009, 0x001b001b));
  }
};
struct DecTQ2_0 {
  using Block = BlockTQ2_0;
  static constexpr IqFinish kFinish = IqFinish::kTernary;
  static float scale(const Block& b) { return h2f(b.d); }
  static void digits(const Block& b, __m256i* d) {
    const __m256i m3 = _mm256_set1_epi8(3);
    for (int c = 0; c < 2; ++c) {
      const __m256i x = load256(b.qs + 32 * c);
      for (int n = 0; n < 4; ++n) d[4 * c + n] = _mm256_and_si256(_mm256_srli_epi16(x, 2 * n), m3);
    }
  }
};

template <class Isa, class D>
struct DotIQ {
  using Block = typename D::Block;
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    const auto* w = static_cast<const Block*>(wv);
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
    __m256 acc[NT], acc2[NT];
    float acc1[NT];
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm256_setzero_ps();
      acc2[t] = _mm256_setzero_ps();
      acc1[t] = 0.0f;
    }
    for (int64_t i = 0; i < n / 256; ++i) {
      const Block& b = w[i];
      __m256i isum[NT], isum2[NT];
      for (int t = 0; t < NT; ++t) isum[t] = isum2[t] = _mm256_setzero_si256();
      if constexpr (D::kFinish == IqFinish::kTernary) {
        __m256i dg[8];
        D::digits(b, dg);
        for (int t = 0; t < NT; ++t) {
          // digit * y pairs summed over the 8 chunks stay within i16 (8 * 2 * 3 * 128 = 6144),
          // then one vpmaddwd: the same i32 lanes as a per-chunk sum.
          __m256i s16 = _mm256_maddubs_epi16(dg[0], load256(a[t][i].qs));
          for (int c = 1; c < 8; ++c)
            s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(dg[c], load256(a[t][i].qs + 32 * c)));
          isum[t] = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
        }
      } else {
        for (int c = 0; c < 8; ++c) {
          const Chunk ch = D::chunk(b, c);
          const __m256i scale = D::kOneScale ? Isa::scale_vec(ch.scale_lo) : Isa::scale_vec(ch.scale_lo, ch.scale_hi);
          __m256i dscale = _mm256_setzero_si256();
          if constexpr (D::kFinish == IqFinish::kIq1m)
            dscale = D::delta_scales(b, c, scale_pair16(ch.scale_lo, ch.scale_hi));
          for (int t = 0; t < NT; ++t) {
            const __m256i y = load256(a[t][i].qs + 32 * c);
            isum[t] = Isa::dot(isum[t], ch.mag, _mm256_sign_epi8(y, ch.sign), scale);
            if constexpr (D::kFinish == IqFinish::kIq1m) {
              isum2[t] =
                  _mm256_add_epi32(isum2[t], _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), y), dscale));
            }
          }
        }
      }
      const float dw = D::scale(b);
      __m256i dscale1 = _mm256_setzero_si256();
      if constexpr (D::kFinish == IqFinish::kIq1s) dscale1 = D::delta_scales(b);
      for (int t = 0; t < NT; ++t) {
        const float d = dw * a[t][i].d;
        if constexpr (D::kFinish == IqFinish::kTernary) {
          // lane m -= bsums[2m] + bsums[2m+1] (the "- 1" of every digit)
          const __m256i ysum = _mm256_madd_epi16(load256(a[t][i].bsums), _mm256_set1_epi16(1));
          const __m256i lanes = _mm256_sub_epi32(isum[t], ysum);
          acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lanes), _mm256_set1_ps(d), acc[t]);
        } else {
          acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(isum[t]), acc[t]);
        }
        if constexpr (D::kFinish == IqFinish::kIq1m) {
          acc2[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(isum2[t]), acc2[t]);
        }
        if constexpr (D::kFinish == IqFinish::kIq1s) {
          const int sumi1 = hsum_epi32(_mm256_madd_epi16(load256(a[t][i].bsums), dscale1));
          acc1[t] =
              _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(d), _mm_set_ss(static_cast<float>(sumi1)), _mm_set_ss(acc1[t])));
        }
      }
    }
    for (int t = 0; t < NT; ++t) {
      const float h = hsum_ps(acc[t]);
      if constexpr (D::kFinish == IqFinish::kScaled) {
        out[t] = D::kFactor * h;
      } else if constexpr (D::kFinish == IqFinish::kIq1s) {
        out[t] = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(0.125f), _mm_set_ss(acc1[t]), _mm_set_ss(h)));
      } else if constexpr (D::kFinish == IqFinish::kIq1m) {
        out[t] = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(0.125f), _mm_set_ss(hsum_ps(acc2[t])), _mm_set_ss(h)));
      } else {
        out[t] = h;
      }
    }
  }
};

// Sets vec_dot and gemm of table t for the i-quant / ternary weight types at policy Isa.
template <class Isa, class Table>
void patch_iquants(Table& t) {
  switch (t.type) {
    case GgmlType::kIQ2_XXS:
      t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecIQ2_XXS>>;
      t.gemm = &gemm_entry<DotIQ<Isa, DecIQ2_XXS>>;
      break;
    case GgmlType::kIQ2_XS:
      t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecIQ2_XS>>;
      t.gemm = &gemm_entry<DotIQ<Isa, DecIQ2_XS>>;
      break;
    case GgmlType::kIQ2_S:
      t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecIQ2_S>>;
      t.gemm = &gemm_entry<DotIQ<Isa, DecIQ2_S>>;
      break;
    case GgmlType::kIQ3_XXS:
      t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecIQ3_XXS>>;
      t.gemm = &gemm_entry<DotIQ<Isa, DecIQ3_XXS>>;
      break;
    case GgmlType::kIQ3_S:
      t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecIQ3_S>>;
      t.gemm = &gemm_entry<DotIQ<Isa, DecIQ3_S>>;
      break;
    case GgmlType::kIQ1_S:
      t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecIQ1_S>>;
      t.gemm = &gemm_entry<DotIQ<Isa, DecIQ1_S>>;
      break;
    case GgmlType::kIQ1_M:
      t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecIQ1_M>>;
      t.gemm = &gemm_entry<DotIQ<Isa, DecIQ1_M>>;
      break;
    case GgmlType::kTQ1_0:
      t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecTQ1_0>>;
      t.gemm = &gemm_entry<DotIQ<Isa, DecTQ1_0>>;
      break;
    case GgmlType::kTQ2_0:
      t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecTQ2_0>>;
      t.gemm = &gemm_entry<DotIQ<Isa, DecTQ2_0>>;
      break;
    default: break;
  }
}

}  // namespace
}  // namespace sniper::x86
