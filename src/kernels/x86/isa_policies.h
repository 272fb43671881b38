// SPDX-License-Identifier: MIT
// The ISA policies the x86 kernel templates are instantiated with: how to accumulate u8*s8
// byte dots (Avx2Int, VnniInt), and the f32 vectors of flash attention's row steps
// (F32x8, F32x16; x86/flash_ops.h). Each policy is only usable in a
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

// f32 vectors of 8 lanes (AVX2 + FMA + F16C). Gemm register block: 4 rows x 2 vectors (8
// accumulators, 2 loads, 1 broadcast of 16 registers).
struct F32x8 {
  using V = __m256;
  static constexpr int64_t kLanes = 8;
  static constexpr int kGemmRows = 4;
  static constexpr int kGemmVecs = 2;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V x) { _mm256_storeu_ps(p, x); }
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V load_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static void store_f16(uint16_t* p, V x) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};

#if defined(__AVX512F__)  // its functions return 512-bit vectors: only in AVX-512 translation units
// f32 vectors of 16 lanes (AVX-512F). Gemm register block: 4 rows x 4 vectors (16 accumulators,
// 4 loads, 1 broadcast of 32 registers), ggml's GEMM_RM x GEMM_RN for AVX-512.
struct F32x16 {
  using V = __m512;
  static constexpr int64_t kLanes = 16;
  static constexpr int kGemmRows = 4;
  static constexpr int kGemmVecs = 4;
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V x) { _mm512_storeu_ps(p, x); }
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void store_f16(uint16_t* p, V x) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};
#endif

}  // namespace
}  // namespace sniper::x86
