// SPDX-License-Identifier: MIT
// Dot-product kernels for float weights (F32 x F32, F16 x F16, BF16 x BF16) in the two orders
// the reference engine uses (quant/float.h documents them; the `_ref` twins define them):
//   DotFloatVec / DotBF16Vec:   ggml's AVX-512 vec_dot (single tokens, rejected batch shapes);
//   DotFloatTiny / DotBF16Tiny: ggml's llamafile tinyBLAS (batches of >= 2 tokens).
// Templates over a 16-lane vector policy V (two __m256 in x86_avx2/, one __m512 in
// x86_avx512/) providing
//   using T; zero(); fmadd(a, b, c); add(a, b); reduce(v) (the _mm512_reduce_add_ps tree);
//   load_f32(const float*); load_f16(const uint16_t*);
//   bf16_odd(const uint16_t*), bf16_even(const uint16_t*): the odd/even elements of 32 bf16.
// Every lane sees the same FMAs in the same order as the reference kernel, so results are
// bit-identical to the `_ref` dots for every tile width NT. Include only from ISA TUs.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/x86/x86_util.h"

namespace sniper::x86 {
// Internal linkage on purpose: these are compiled once per ISA with different -m flags, and
// must not be merged across ISA translation units by the linker (ODR).
namespace {

// 16 lanes as two __m256 (AVX2 tier).
struct Vec16x2 {
  struct T {
    __m256 lo, hi;
  };
  static T zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static T fmadd(T a, T b, T c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
  static T add(T a, T b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
  static float reduce(T v) { return hsum_ps(_mm256_add_ps(v.hi, v.lo)); }
  static T load_f32(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static T load_f16(const uint16_t* p) { return {_mm256_cvtph_ps(load128(p)), _mm256_cvtph_ps(load128(p + 8))}; }
  static void store_f32(float* p, T v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
  }
  static T bf16_odd(const uint16_t* p) {
    const __m256i mask = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
    return {_mm256_castsi256_ps(_mm256_and_si256(load256(p), mask)),
            _mm256_castsi256_ps(_mm256_and_si256(load256(p + 16), mask))};
  }
  static T bf16_even(const uint16_t* p) {
    return {_mm256_castsi256_ps(_mm256_slli_epi32(load256(p), 16)),
            _mm256_castsi256_ps(_mm256_slli_epi32(load256(p + 16), 16))};
  }
};

struct LoadF32 {
  using E = float;
  template <class V>
  static typename V::T load(const E* p) {
    return V::load_f32(p);
  }
  static float value(E x) { return x; }
};
struct LoadF16 {
  using E = uint16_t;
  template <class V>
  static typename V::T load(const E* p) {
    return V::load_f16(p);
  }
  static float value(E x) { return h2f(x); }
};

inline float bf16_value(uint16_t h) { return bf2f(h); }

// ggml_vec_dot_f32 / ggml_vec_dot_f16 (AVX-512): 4 x 16 lanes over steps of 64 (f32 also
// folds whole 16-groups of the tail into lane set 0; see quant/float.h). LA loads the
// activations: L itself, or LoadF32 for f16 values the caller widened once (the "wide" gemm:
// widening is exact, so the bits are the same as loading the halves).
template <class V, class L, class LA = L>
struct DotFloatVec {
  static constexpr bool kF32 = sizeof(typename L::E) == 4;
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    using E = typename L::E;
    using EA = typename LA::E;
    using T = typename V::T;
    const E* w = static_cast<const E*>(wv);
    const EA* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const EA*>(av[t]);
    T acc[NT][4];
    for (int t = 0; t < NT; ++t) {
      for (int j = 0; j < 4; ++j) acc[t][j] = V::zero();
    }
    const int64_t np = n - n % 64;
    for (int64_t i = 0; i < np; i += 64) {
      for (int j = 0; j < 4; ++j) {
        const T wj = L::template load<V>(w + i + 16 * j);
        for (int t = 0; t < NT; ++t) acc[t][j] = V::fmadd(wj, LA::template load<V>(a[t] + i + 16 * j), acc[t][j]);
      }
    }
    int64_t np2 = np;
    if constexpr (kF32) {  // whole 16-element groups of the tail go to accumulator 0
      np2 = n - n % 16;
      for (int64_t i = np; i < np2; i += 16) {
        const T wi = L::template load<V>(w + i);
        for (int t = 0; t < NT; ++t) acc[t][0] = V::fmadd(wi, LA::template load<V>(a[t] + i), acc[t][0]);
      }
    }
    for (int t = 0; t < NT; ++t) {
      const float r = V::reduce(V::add(V::add(acc[t][0], acc[t][2]), V::add(acc[t][1], acc[t][3])));
      if constexpr (kF32) {
        float s = r;
        for (int64_t j = np2; j < n; ++j) s = std::fma(w[j], a[t][j], s);
        out[t] = s;
      } else {
        double s = r;
        for (int64_t j = np; j < n; ++j) s += static_cast<double>(L::value(w[j]) * LA::value(a[t][j]));
        out[t] = static_cast<float>(s);
      }
    }
  }
};

// tinyBLAS<16, ...> for f32/f16: one 16-lane accumulator over steps of 16. n % 16 == 0.
// LA as in DotFloatVec.
template <class V, class L, class LA = L>
struct DotFloatTiny {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    using E = typename L::E;
    using EA = typename LA::E;
    using T = typename V::T;
    const E* w = static_cast<const E*>(wv);
    const EA* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const EA*>(av[t]);
    T acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = V::zero();
    for (int64_t i = 0; i < n; i += 16) {
      const T wi = L::template load<V>(w + i);
      for (int t = 0; t < NT; ++t) acc[t] = V::fmadd(wi, LA::template load<V>(a[t] + i), acc[t]);
    }
    for (int t = 0; t < NT; ++t) out[t] = V::reduce(acc[t]);
  }
};

// vdpbf16ps on 32 bf16 elements: lane i += w[2i+1]*a[2i+1], then += w[2i]*a[2i] (exact
// products, so each step equals a fused add). V may override with a native instruction.
template <class V>
inline typename V::T dp_bf16(typename V::T acc, const uint16_t* w, const uint16_t* a) {
  if constexpr (requires { V::dpbf16(acc, w, a); }) {
    return V::dpbf16(acc, w, a);
  } else {
    acc = V::fmadd(V::bf16_odd(w), V::bf16_odd(a), acc);
    return V::fmadd(V::bf16_even(w), V::bf16_even(a), acc);
  }
}

// ggml_vec_dot_bf16 (AVX512_BF16): two accumulators over steps of 64, reduced sums and the tail
// accumulated in double.
template <class V>
struct DotBF16Vec {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    using T = typename V::T;
    const auto* w = static_cast<const uint16_t*>(wv);
    const uint16_t* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const uint16_t*>(av[t]);
    T c1[NT], c2[NT];
    for (int t = 0; t < NT; ++t) c1[t] = c2[t] = V::zero();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
      for (int t = 0; t < NT; ++t) {
        c1[t] = dp_bf16<V>(c1[t], w + i, a[t] + i);
        c2[t] = dp_bf16<V>(c2[t], w + i + 32, a[t] + i + 32);
      }
    }
    for (int t = 0; t < NT; ++t) {
      double s = 0.0;
      s += static_cast<double>(V::reduce(c1[t]));
      s += static_cast<double>(V::reduce(c2[t]));
      for (int64_t j = i; j < n; ++j) s += static_cast<double>(bf16_value(w[j]) * bf16_value(a[t][j]));
      out[t] = static_cast<float>(s);
    }
  }
};

// tinyBLAS<32, __m512, __m512bh, ...>: one accumulator over steps of 32. n % 32 == 0.
template <class V>
struct DotBF16Tiny {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    using T = typename V::T;
    const auto* w = static_cast<const uint16_t*>(wv);
    const uint16_t* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const uint16_t*>(av[t]);
    T acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = V::zero();
    for (int64_t i = 0; i < n; i += 32) {
      for (int t = 0; t < NT; ++t) acc[t] = dp_bf16<V>(acc[t], w + i, a[t] + i);
    }
    for (int t = 0; t < NT; ++t) out[t] = V::reduce(acc[t]);
  }
};

}  // namespace
}  // namespace sniper::x86
