// SPDX-License-Identifier: MIT
// AVX-512 kernels for float weights: 512-bit F32/F16/BF16 dots (x86/dot_float.h with a 512-bit
// vector policy) and, where the host has AVX512_BF16, a vdpbf16ps BF16 dot (pairs of exact
// bf16 products per instruction; like all of AVX512_BF16 it treats denormals as zero). The
// activation quantizers are the shared AVX2-form ones (x86/quantize_acts.h): they are not hot.
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the masked-off source, which trips
// -Wuninitialized/-Wmaybe-uninitialized at -O2+ (a false positive: those lanes are never read).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/kernel_registry.h"
#include "kernels/x86/dot_float.h"
#include "kernels/x86/isa_policies.h"
#include "kernels/x86/quantize_acts.h"

namespace sniper::kernels_internal {

namespace {

struct Vec512 {
  using T = __m512;
  static constexpr int kWidth = 16;
  static T zero() { return _mm512_setzero_ps(); }
  static T fmadd(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static float hsum(T v) {
    return x86::hsum_ps(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
  }
  static T load_f32(const float* p) { return _mm512_loadu_ps(p); }
  static T load_f16(const uint16_t* p) { return _mm512_cvtph_ps(x86::load256(p)); }
  static T load_bf16(const uint16_t* p) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(x86::load256(p)), 16));
  }
};

// BF16 x BF16 with vdpbf16ps: 32 elements per instruction and token.
struct DotBF16Dp {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    const auto* w = static_cast<const uint16_t*>(wv);
    const uint16_t* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const uint16_t*>(av[t]);
    __m512 acc0[NT], acc1[NT];
    for (int t = 0; t < NT; ++t) acc0[t] = acc1[t] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
      const __m512bh w0 = (__m512bh)_mm512_loadu_si512(w + i);
      const __m512bh w1 = (__m512bh)_mm512_loadu_si512(w + i + 32);
      for (int t = 0; t < NT; ++t) {
        acc0[t] = _mm512_dpbf16_ps(acc0[t], w0, (__m512bh)_mm512_loadu_si512(a[t] + i));
        acc1[t] = _mm512_dpbf16_ps(acc1[t], w1, (__m512bh)_mm512_loadu_si512(a[t] + i + 32));
      }
    }
    for (int t = 0; t < NT; ++t) {
      float s = Vec512::hsum(_mm512_add_ps(acc0[t], acc1[t]));
      for (int64_t j = i; j < n; ++j) s += x86::bf2f(w[j]) * x86::bf2f(a[t][j]);
      out[t] = s;
    }
  }
};

template <class K>
void set(KernelTable& t) {
  t.vec_dot = &x86::vec_dot_entry<K>;
  t.gemm = &x86::gemm_entry<K>;
}

}  // namespace

void patch_float_avx512(KernelTable& t, const CpuFeatures& features) {
  switch (t.type) {
    case GgmlType::kF32: set<x86::DotFloat<Vec512, x86::LoadF32>>(t); break;
    case GgmlType::kF16: set<x86::DotFloat<Vec512, x86::LoadF16>>(t); break;
    case GgmlType::kBF16:
      if (features.avx512bf16) {
        set<DotBF16Dp>(t);
      } else {
        set<x86::DotFloat<Vec512, x86::LoadBF16>>(t);
      }
      break;
    default: break;
  }
  switch (t.vec_dot_type) {
    case GgmlType::kF32: t.quantize_act = &x86::quantize_f32; break;
    case GgmlType::kF16: t.quantize_act = &x86::quantize_f16; break;
    case GgmlType::kBF16: t.quantize_act = &x86::quantize_bf16; break;
    case GgmlType::kQ8_0: t.quantize_act = &x86::quantize_q8_0; break;
    case GgmlType::kQ8_1: t.quantize_act = &x86::quantize_q8_1; break;
    case GgmlType::kQ8_K: t.quantize_act = &x86::quantize_q8_K; break;
    default: break;
  }
}

}  // namespace sniper::kernels_internal
