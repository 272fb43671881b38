// SPDX-License-Identifier: MIT
// AVX-512 kernels for float weights: x86/dot_float.h with a 512-bit 16-lane policy; BF16 uses
// the native vdpbf16ps where the host has AVX512_BF16 (it treats denormals as zero; the
// emulation used otherwise, and by the lower tiers, does not). The
// activation quantizers are the shared AVX2-form ones (x86/quantize_acts.h): they are not hot.
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the masked-off source, which trips
// -Wuninitialized/-Wmaybe-uninitialized at -O2+ (a false positive: those lanes are never read).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: Clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/kernel_registry.h"
#include "kernels/x86/dot_float.h"
#include "kernels/x86/gemm_float_block.h"
#include "kernels/x86/isa_policies.h"
#include "kernels/x86/quantize_acts.h"

namespace sniper::kernels_internal {

namespace {

// 16 lanes in one __m512; reduce is _mm512_reduce_add_ps itself.
struct Vec512 {
  using T = __m512;
  static T zero() { return _mm512_setzero_ps(); }
  static T fmadd(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static float reduce(T v) { return _mm512_reduce_add_ps(v); }
  // out[t * stride + m] = reduce(acc[m][t]) for a 4 x 4 block: reduce's tree (lanes i + 8 onto i,
  // then i + 4 onto i, then i + 2, then i + 1) run on the 16 accumulators at once, two of them
  // per shuffled vector, so every sum adds the same two values as reduce does.
  static void reduce_4x4(const T (&acc)[4][4], float* out, int64_t stride) {
    const T* a = &acc[0][0];  // a[4 m + t]
    T b[8], c[4], d[2];
    for (int j = 0; j < 8; ++j) {  // b[j]: a[2j] (lanes 0-7), a[2j + 1] (8-15), 8 lanes each
      b[j] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * j], a[2 * j + 1], 0xEE),
                           _mm512_shuffle_f32x4(a[2 * j], a[2 * j + 1], 0x44));
    }
    for (int j = 0; j < 4; ++j) {  // c[j]: a[4j + q] in quarter q, 4 lanes each
      c[j] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * j], b[2 * j + 1], 0xDD),
                           _mm512_shuffle_f32x4(b[2 * j], b[2 * j + 1], 0x88));
    }
    for (int j = 0; j < 2; ++j) {  // d[j], quarter q: a[8j + q] (lanes 0, 1), a[8j + 4 + q] (2, 3)
      d[j] = _mm512_add_ps(_mm512_shuffle_ps(c[2 * j], c[2 * j + 1], 0x44),
                           _mm512_shuffle_ps(c[2 * j], c[2 * j + 1], 0xEE));
    }
    // Quarter q, lane s: the sum of a[q + 4 s] = acc[s][q], token q's row s.
    const T r = _mm512_add_ps(_mm512_shuffle_ps(d[0], d[1], 0x88), _mm512_shuffle_ps(d[0], d[1], 0xDD));
    _mm_storeu_ps(out, _mm512_castps512_ps128(r));
    _mm_storeu_ps(out + stride, _mm512_extractf32x4_ps(r, 1));
    _mm_storeu_ps(out + 2 * stride, _mm512_extractf32x4_ps(r, 2));
    _mm_storeu_ps(out + 3 * stride, _mm512_extractf32x4_ps(r, 3));
  }
  static T load_f32(const float* p) { return _mm512_loadu_ps(p); }
  static T load_f16(const uint16_t* p) { return _mm512_cvtph_ps(x86::load256(p)); }
  static void store_f32(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T bf16_odd(const uint16_t* p) {
    return _mm512_castsi512_ps(
        _mm512_and_si512(_mm512_loadu_si512(p), _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
  static T bf16_even(const uint16_t* p) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_loadu_si512(p), 16)); }
};

// With AVX512_BF16: the native vdpbf16ps (same per-lane sequence; it also flushes denormals).
struct Vec512Bf16 : Vec512 {
  static T dpbf16(T acc, const uint16_t* w, const uint16_t* a) {
    return _mm512_dpbf16_ps(acc, (__m512bh)_mm512_loadu_si512(w), (__m512bh)_mm512_loadu_si512(a));
  }
};

template <class KVec, class KTiny>
void set(KernelTable& t) {
  t.vec_dot = &x86::vec_dot_entry<KVec>;
  t.gemm = &x86::gemm_entry<KVec>;
  t.gemm_batched = &x86::gemm_entry<KTiny>;
}

}  // namespace

void patch_float_avx512(KernelTable& t, const CpuFeatures& features) {
  switch (t.type) {
    case GgmlType::kF32:
      set<x86::DotFloatVec<Vec512, x86::LoadF32>, x86::DotFloatTiny<Vec512, x86::LoadF32>>(t);
      // Register blocks of 4 rows x 4 tokens (x86/gemm_float_block.h): DotFloatTiny's bits.
      t.gemm_batched = &x86::gemm_tiny_block<Vec512, x86::LoadF32, x86::LoadF32, 4, 4>;
      break;
    case GgmlType::kF16:
      set<x86::DotFloatVec<Vec512, x86::LoadF16>, x86::DotFloatTiny<Vec512, x86::LoadF16>>(t);
      t.gemm_batched = &x86::gemm_tiny_block<Vec512, x86::LoadF16, x86::LoadF16, 4, 4>;
      t.gemm_wide = &x86::gemm_entry<x86::DotFloatVec<Vec512, x86::LoadF16, x86::LoadF32>>;
      t.gemm_batched_wide = &x86::gemm_tiny_block<Vec512, x86::LoadF16, x86::LoadF32, 4, 4>;
      break;
    case GgmlType::kBF16:
      if (features.avx512bf16) {
        set<x86::DotBF16Vec<Vec512Bf16>, x86::DotBF16Tiny<Vec512Bf16>>(t);
      } else {
        set<x86::DotBF16Vec<Vec512>, x86::DotBF16Tiny<Vec512>>(t);
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
