// SPDX-License-Identifier: MIT
// Flash attention's row steps at the AVX-512 tier: x86/flash_ops.h instantiated with 16-lane
// vectors (the same template as the AVX2 tier, which the tests run on AVX2-only hosts).
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the masked-off source, which trips
// -Wuninitialized/-Wmaybe-uninitialized at -O2+ (a false positive: those lanes are never read).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: Clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include "kernels/kernel_registry.h"
#include "kernels/x86/flash_ops.h"

namespace sniper::kernels_internal {

using x86::F32x16;

void mad_f32_avx512(float* y, const float* x, float v, int64_t n) { x86::mad_f32_t<F32x16>(y, x, v, n); }
void scale_f32_avx512(float* y, float v, int64_t n) { x86::scale_f32_t<F32x16>(y, v, n); }
void mad_f16_avx512(uint16_t* y, const uint16_t* x, float v, int64_t n) { x86::mad_f16_t<F32x16>(y, x, v, n); }
void scale_f16_avx512(uint16_t* y, float v, int64_t n) { x86::scale_f16_t<F32x16>(y, v, n); }
void widen_f16_avx512(const uint16_t* x, float* y, int64_t n) { x86::widen_f16_t<F32x16>(x, y, n); }
void gemm_f32_avx512(float* c, const float* a, const float* b, int64_t m, int64_t k, int64_t n) {
  x86::gemm_f32_t<F32x16>(c, a, b, m, k, n);
}
void softmax_mad_f32_avx512(float* acc, float* m, float* sum, const float* scores, int64_t n, float scale,
                            const float* v, int64_t hd) {
  x86::softmax_mad_f32_t<F32x16>(acc, m, sum, scores, n, scale, v, hd);
}

}  // namespace sniper::kernels_internal
