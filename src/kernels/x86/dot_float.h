// SPDX-License-Identifier: MIT
// Dot-product kernels for float weights (F32 x F32, F16 x F16, BF16 x BF16) as templates over
// a vector policy V (256-bit in x86_avx2/, 512-bit in x86_avx512/) that provides
//   using T; static constexpr int kWidth; zero(); fmadd(a, b, c); add(a, b); hsum(v);
//   load_f32(const float*); load_f16(const uint16_t*); load_bf16(const uint16_t*).
// Products of widened halves are exact in float; sums run in two accumulators per token, then a
// scalar tail in index order, the same for every NT. Include only from ISA translation units.
#pragma once

#include <cstdint>

#include "kernels/x86/x86_util.h"

namespace sniper::x86 {
// Internal linkage on purpose: these are compiled once per ISA with different -m flags, and
// must not be merged across ISA translation units by the linker (ODR).
namespace {

struct LoadF32 {
  using E = float;
  template <class V> static typename V::T load(const E* p) { return V::load_f32(p); }
  static float scalar(E x) { return x; }
};
struct LoadF16 {
  using E = uint16_t;
  template <class V> static typename V::T load(const E* p) { return V::load_f16(p); }
  static float scalar(E x) { return h2f(x); }
};
struct LoadBF16 {
  using E = uint16_t;
  template <class V> static typename V::T load(const E* p) { return V::load_bf16(p); }
  static float scalar(E x) { return bf2f(x); }
};

template <class V, class L>
struct DotFloat {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    using E = typename L::E;
    using T = typename V::T;
    constexpr int kW = V::kWidth;
    const E* w = static_cast<const E*>(wv);
    const E* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const E*>(av[t]);
    T acc0[NT], acc1[NT];
    for (int t = 0; t < NT; ++t) acc0[t] = acc1[t] = V::zero();
    int64_t i = 0;
    for (; i + 2 * kW <= n; i += 2 * kW) {
      const T w0 = L::template load<V>(w + i);
      const T w1 = L::template load<V>(w + i + kW);
      for (int t = 0; t < NT; ++t) {
        acc0[t] = V::fmadd(w0, L::template load<V>(a[t] + i), acc0[t]);
        acc1[t] = V::fmadd(w1, L::template load<V>(a[t] + i + kW), acc1[t]);
      }
    }
    for (int t = 0; t < NT; ++t) {
      float s = V::hsum(V::add(acc0[t], acc1[t]));
      for (int64_t j = i; j < n; ++j) s += L::scalar(w[j]) * L::scalar(a[t][j]);
      out[t] = s;
    }
  }
};

}  // namespace
}  // namespace sniper::x86
