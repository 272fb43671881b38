// SPDX-License-Identifier: MIT
// A runtime count (heads, tokens) as a template argument, for kernels whose register tiles are
// sized at compile time. Include only from ISA translation units.
#pragma once

#include <type_traits>

namespace sniper::x86 {
// Internal linkage on purpose (see dot_q32.h): compiled once per ISA.
namespace {

// Calls f(std::integral_constant<int, N>{}) with N = n clamped to [1, kMax].
template <int kMax, class F>
inline void with_count(int n, F&& f) {
  if constexpr (kMax > 1) {
    if (n < kMax) {
      with_count<kMax - 1>(n, f);
      return;
    }
  }
  f(std::integral_constant<int, kMax>{});
}

}  // namespace
}  // namespace sniper::x86
