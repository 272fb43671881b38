// SPDX-License-Identifier: MIT
// The ISA policies the x86 kernel templates are instantiated with: how to accumulate u8*s8
// byte dots, and the float vector type for dot_float.h. Each policy is only usable in a
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

struct Vec256 {
  using T = __m256;
  static constexpr int kWidth = 8;
  static T zero() { return _mm256_setzero_ps(); }
  static T fmadd(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static float hsum(T v) { return hsum_ps(v); }
  static T load_f32(const float* p) { return _mm256_loadu_ps(p); }
  static T load_f16(const uint16_t* p) { return _mm256_cvtph_ps(load128(p)); }
  static T load_bf16(const uint16_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load128(p)), 16));
  }
};

}  // namespace
}  // namespace sniper::x86
