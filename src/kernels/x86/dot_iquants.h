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

// How a chunk's scaled byte dot accumulates (both exact, so both give the same integers):
// AVX2: maddubs + madd with i16 scales; AVX-512 VNNI: vpdpbusd then one i32 multiply.
struct IqAvx2 {
  static __m256i scale_vec(int lo, int hi) { return scale_pair16(lo, hi); }
  static __m256i dot(__m256i acc, __m256i mag, __m256i ys, __m256i scale) {
    return _mm256_add_epi32(acc, dot_u8s8_scaled(mag, ys, scale));
  }
};
struct IqVnni {
  static __m256i scale_vec(int lo, int hi) { return _mm256_setr_m128i(_mm_set1_epi32(lo), _mm_set1_epi32(hi)); }
  static __m256i dot(__m256i acc, __m256i mag, __m256i ys, __m256i scale) {
    return _mm256_add_epi32(acc, _mm256_mullo_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), mag, ys), scale));
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
  const __m256i s = _mm256_set_epi64x(static_cast<int64_t>(kKsigns64[(w >> 21) & 127]),
                                      static_cast<int64_t>(kKsigns64[(w >> 14) & 127]),
                                      static_cast<int64_t>(kKsigns64[(w >> 7) & 127]),
                                      static_cast<int64_t>(kKsigns64[w & 127]));
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
  static constexpr float kFactor = 0.125f;
  static float scale(const Block& b) { return h2f(b.d); }
  static Chunk chunk(const Block& b, int c) {
    const uint16_t* q = b.qs + 4 * c;
    const __m256i sign = _mm256_set_epi64x(
        static_cast<int64_t>(kKsigns64[q[3] >> 9]), static_cast<int64_t>(kKsigns64[q[2] >> 9]),
        static_cast<int64_t>(kKsigns64[q[1] >> 9]), static_cast<int64_t>(kKsigns64[q[0] >> 9]));
    return {grid64x4(kIq2xsGrid, q[0] & 511, q[1] & 511, q[2] & 511, q[3] & 511),
            _mm256_or_si256(sign, _mm256_set1_epi8(1)), 2 * (b.scales[c] & 0xf) + 1, 2 * (b.scales[c] >> 4) + 1};
  }
};

struct DecIQ2_S {
  using Block = BlockIQ2_S;
  static constexpr IqFinish kFinish = IqFinish::kScaled;
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
  static float scale(const Block& b) { return h2f(b.d); }
  static Chunk chunk(const Block& b, int c) {
    const uint8_t* q = b.qs + 4 * c;
    const int h = b.qh[c];
    const int s = 2 * ((h >> 12) & 7) + 1;
    return ternary_chunk(grid64x4(kIq1sGrid, q[0] | ((h << 8) & 0x700), q[1] | ((h << 5) & 0x700),
                                  q[2] | ((h << 2) & 0x700), q[3] | ((h >> 1) & 0x700)),
                         s, s);
  }
  // (2c+1) * e for the chunk (the delta term, applied through the q8_K bsums).
  static int delta_scale(const Block& b, int c) {
    const int h = b.qh[c];
    return (h & 0x8000 ? -1 : 1) * (2 * ((h >> 12) & 7) + 1);
  }
};

struct DecIQ1_M {
  using Block = BlockIQ1_M;
  static constexpr IqFinish kFinish = IqFinish::kIq1m;
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
  // +1 / -1 bytes: the delta sign of each group of 8.
  static __m256i delta(const Block& b, int c) {
    const int h0 = b.qh[2 * c], h1 = b.qh[2 * c + 1];
    // One bit per group of 8 (group l: bit 3 + 4 (l % 2) of qh[2c + l / 2]) spread to its 8 bytes.
    const uint32_t g = ((h0 >> 3) & 1) | ((h0 >> 6) & 2) | ((h1 >> 1) & 4) | ((h1 >> 4) & 8);
    const uint32_t bits = (g & 1 ? 0xffu : 0u) | (g & 2 ? 0xff00u : 0u) | (g & 4 ? 0xff0000u : 0u) | (g & 8 ? 0xff000000u : 0u);
    return _mm256_or_si256(bits_to_bytes(bits), _mm256_set1_epi8(1));
  }
};

// TQ1_0 trit n of every byte of x: q = x * 3^n mod 256 (16-bit multiplies of the even and odd
// bytes), then t = (q * 3) >> 8, which is (q >= 86) + (q >= 171) for a byte q.
inline __m256i trits(__m256i x, int pow3) {
  const __m256i p = _mm256_set1_epi16(static_cast<int16_t>(pow3));
  const __m256i lo = _mm256_and_si256(_mm256_mullo_epi16(x, p), _mm256_set1_epi16(0x00ff));
  const __m256i hi = _mm256_slli_epi16(_mm256_mullo_epi16(_mm256_srli_epi16(x, 8), p), 8);
  const __m256i q = _mm256_or_si256(lo, hi);
  const __m256i ge86 = _mm256_cmpeq_epi8(_mm256_max_epu8(q, _mm256_set1_epi8(86)), q);
  const __m256i ge171 = _mm256_cmpeq_epi8(_mm256_max_epu8(q, _mm256_set1_epi8(static_cast<char>(171))), q);
  return _mm256_sub_epi8(_mm256_sub_epi8(_mm256_setzero_si256(), ge86), ge171);
}

// TQ digits (0..3) are unsigned: no sign vector (+1 bytes), scale 1.
struct DecTQ1_0 {
  using Block = BlockTQ1_0;
  static constexpr IqFinish kFinish = IqFinish::kTernary;
  static float scale(const Block& b) { return h2f(b.d); }
  // Decodes the whole block once (256 digits; FORMATS.md 4.10 order); chunk c = elements 32c..32c+31.
  static void digits(const Block& b, int8_t* t) {
    constexpr int kPow3[5] = {1, 3, 9, 27, 81};
    const __m256i x0 = load256(b.qs);
    alignas(32) uint8_t tail[32] = {};
    std::memcpy(tail, b.qs + 32, 16);
    std::memcpy(tail + 16, b.qh, 4);
    const __m256i x1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(tail));
    for (int n = 0; n < 5; ++n) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(t + 32 * n), trits(x0, kPow3[n]));
      alignas(32) int8_t d[32];
      _mm256_store_si256(reinterpret_cast<__m256i*>(d), trits(x1, kPow3[n]));
      std::memcpy(t + 160 + 16 * n, d, 16);
      if (n < 4) std::memcpy(t + 240 + 4 * n, d + 16, 4);
    }
  }
};
struct DecTQ2_0 {
  using Block = BlockTQ2_0;
  static constexpr IqFinish kFinish = IqFinish::kTernary;
  static float scale(const Block& b) { return h2f(b.d); }
  static void digits(const Block& b, int8_t* t) {
    for (int c = 0; c < 2; ++c) {
      const __m256i x = load256(b.qs + 32 * c);
      const __m256i m3 = _mm256_set1_epi8(3);
      for (int n = 0; n < 4; ++n) {
        const __m256i v = _mm256_and_si256(_mm256_srli_epi16(x, 2 * n), m3);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(t + 128 * c + 32 * n), v);
      }
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
        alignas(32) int8_t digits[256];
        D::digits(b, digits);
        const __m256i one = Isa::scale_vec(1, 1);
        for (int c = 0; c < 8; ++c) {
          const __m256i mag = load256(digits + 32 * c);
          for (int t = 0; t < NT; ++t) isum[t] = Isa::dot(isum[t], mag, load256(a[t][i].qs + 32 * c), one);
        }
      } else {
        for (int c = 0; c < 8; ++c) {
          const Chunk ch = D::chunk(b, c);
          const __m256i scale = Isa::scale_vec(ch.scale_lo, ch.scale_hi);
          __m256i delta = _mm256_setzero_si256();
          if constexpr (D::kFinish == IqFinish::kIq1m) delta = D::delta(b, c);
          for (int t = 0; t < NT; ++t) {
            const __m256i y = load256(a[t][i].qs + 32 * c);
            isum[t] = Isa::dot(isum[t], ch.mag, _mm256_sign_epi8(y, ch.sign), scale);
            if constexpr (D::kFinish == IqFinish::kIq1m) {
              isum2[t] = Isa::dot(isum2[t], _mm256_set1_epi8(1), _mm256_sign_epi8(y, delta), scale);
            }
          }
        }
      }
      const float dw = D::scale(b);
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
          int sumi1 = 0;
          for (int c = 0; c < 8; ++c) {
            sumi1 += (a[t][i].bsums[2 * c] + a[t][i].bsums[2 * c + 1]) * D::delta_scale(b, c);
          }
          acc1[t] = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(d), _mm_set_ss(static_cast<float>(sumi1)), _mm_set_ss(acc1[t])));
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
    case GgmlType::kIQ2_XXS: t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecIQ2_XXS>>; t.gemm = &gemm_entry<DotIQ<Isa, DecIQ2_XXS>>; break;
    case GgmlType::kIQ2_XS: t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecIQ2_XS>>; t.gemm = &gemm_entry<DotIQ<Isa, DecIQ2_XS>>; break;
    case GgmlType::kIQ2_S: t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecIQ2_S>>; t.gemm = &gemm_entry<DotIQ<Isa, DecIQ2_S>>; break;
    case GgmlType::kIQ3_XXS: t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecIQ3_XXS>>; t.gemm = &gemm_entry<DotIQ<Isa, DecIQ3_XXS>>; break;
    case GgmlType::kIQ3_S: t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecIQ3_S>>; t.gemm = &gemm_entry<DotIQ<Isa, DecIQ3_S>>; break;
    case GgmlType::kIQ1_S: t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecIQ1_S>>; t.gemm = &gemm_entry<DotIQ<Isa, DecIQ1_S>>; break;
    case GgmlType::kIQ1_M: t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecIQ1_M>>; t.gemm = &gemm_entry<DotIQ<Isa, DecIQ1_M>>; break;
    case GgmlType::kTQ1_0: t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecTQ1_0>>; t.gemm = &gemm_entry<DotIQ<Isa, DecTQ1_0>>; break;
    case GgmlType::kTQ2_0: t.vec_dot = &vec_dot_entry<DotIQ<Isa, DecTQ2_0>>; t.gemm = &gemm_entry<DotIQ<Isa, DecTQ2_0>>; break;
    default: break;
  }
}

}  // namespace
}  // namespace sniper::x86
