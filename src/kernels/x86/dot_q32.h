// SPDX-License-Identifier: MIT
// Dot-product kernels for the 32-element block formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL)
// as templates over an ISA policy `Isa` that provides
//   static __m256i dot_u8s8(__m256i acc, __m256i u8, __m256i s8);  // acc += 4-way u8*s8 sums
// (maddubs+madd on AVX2, vpdpbusd on AVX-512 VNNI). Integer parts are exact and the float
// operations match the `_ref` twins (quant/lane_order.h) one for one. Include only from ISA
// translation units.
#pragma once

#include "kernels/x86/x86_util.h"
#include "quant/iq4_nl.h"
#include "quant/q4_0.h"
#include "quant/q4_1.h"
#include "quant/q5_0.h"
#include "quant/q5_1.h"
#include "quant/q8_0.h"
#include "quant/q8_1.h"

namespace sniper::x86 {
// Internal linkage on purpose: these are compiled once per ISA with different -m flags, and
// must not be merged across ISA translation units by the linker (ODR).
namespace {

// Format policies: decode one weight block into 32 bytes in element order. kSigned formats
// decode to signed values (activations q8_0); unsigned ones (with a min) pair with q8_1.
struct FmtQ4_0 {
  using W = BlockQ4_0;
  using A = BlockQ8_0;
  static constexpr bool kSigned = true;
  static __m256i decode(const W& b) { return _mm256_sub_epi8(unpack_nibbles(b.qs), _mm256_set1_epi8(8)); }
};

struct FmtQ8_0 {
  using W = BlockQ8_0;
  using A = BlockQ8_0;
  static constexpr bool kSigned = true;
  static __m256i decode(const W& b) { return load256(b.qs); }
};

struct FmtQ5_0 {
  using W = BlockQ5_0;
  using A = BlockQ8_0;
  static constexpr bool kSigned = true;
  static __m256i decode(const W& b) {
    uint32_t qh;
    __builtin_memcpy(&qh, b.qh, 4);
    // Where the 5th bit is clear, set the byte's top nibble: as int8 that is nibble - 16;
    // where it is set the value is nibble + 16 - 16 = nibble.
    const __m256i hi = _mm256_andnot_si256(bits_to_bytes(qh), _mm256_set1_epi8(static_cast<char>(0xF0)));
    return _mm256_or_si256(unpack_nibbles(b.qs), hi);
  }
};

struct FmtIQ4_NL {
  using W = BlockIQ4_NL;
  using A = BlockQ8_0;
  static constexpr bool kSigned = true;
  static __m256i decode(const W& b) {
    const __m256i lut = _mm256_broadcastsi128_si256(load128(kIq4nlValues));
    return _mm256_shuffle_epi8(lut, unpack_nibbles(b.qs));
  }
};

struct FmtQ4_1 {
  using W = BlockQ4_1;
  using A = BlockQ8_1;
  static constexpr bool kSigned = false;
  static __m256i decode(const W& b) { return unpack_nibbles(b.qs); }
};

struct FmtQ5_1 {
  using W = BlockQ5_1;
  using A = BlockQ8_1;
  static constexpr bool kSigned = false;
  static __m256i decode(const W& b) {
    uint32_t qh;
    __builtin_memcpy(&qh, b.qh, 4);
    const __m256i hi = _mm256_and_si256(bits_to_bytes(qh), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(unpack_nibbles(b.qs), hi);
  }
};

// out[t] = hsum8 over blocks of fma(d_w * d_a[t], isum lanes) (+ the min term for Q4_1/Q5_1,
// FMA'd into a scalar): ggml's AVX2 kernel and tinyBLAS_Q0_AVX order, one 8-lane accumulator.
template <class Isa, class F>
struct DotQ32 {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    using W = typename F::W;
    using A = typename F::A;
    const W* w = static_cast<const W*>(wv);
    const A* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const A*>(av[t]);
    const int64_t nb = n / 32;
    __m256 acc[NT];
    float summ[NT];
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm256_setzero_ps();
      summ[t] = 0.0f;
    }
    for (int64_t ib = 0; ib < nb; ++ib) {
      const __m256i q = F::decode(w[ib]);
      const float dw = h2f(w[ib].d);
      for (int t = 0; t < NT; ++t) {
        const __m256i y = load256(a[t][ib].qs);
        __m256i s;
        if constexpr (F::kSigned) {
          s = dot_s8s8<Isa>(_mm256_setzero_si256(), q, y);
        } else {
          s = Isa::dot_u8s8(_mm256_setzero_si256(), q, y);
          summ[t] = __builtin_fmaf(h2f(w[ib].m), h2f(a[t][ib].s), summ[t]);
        }
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * h2f(a[t][ib].d)), _mm256_cvtepi32_ps(s), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = hsum_ps(acc[t]) + summ[t];
  }
};

}  // namespace
}  // namespace sniper::x86
