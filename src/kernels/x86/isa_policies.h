// SPDX-License-Identifier: MIT
// The ISA policies the x86 kernel templates are instantiated with: how to accumulate u8*s8
// byte dots. Each policy is only usable in a
// translation unit compiled with its ISA's flags (cmake/isa.cmake); templates are instantiated
// lazily, so including this header elsewhere is harmless.
#pragma once

#include "kernels/x86/x86_util.h"

namespace sniper::x86 {
namespace {

// AVX2: maddubs (u8*s8 -> i16 pair sums, saturating; callers keep sums within i16) + madd.
struct Avx2Int {
  static __m256i dot_u8s8(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
  }
};

// AVX-512 VNNI (256-bit form, AVX512VL): vpdpbusd, exact i32 accumulation.
struct VnniInt {
  static __m256i dot_u8s8(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_epi32(acc, u, s); }
};

}  // namespace
}  // namespace sniper::x86
