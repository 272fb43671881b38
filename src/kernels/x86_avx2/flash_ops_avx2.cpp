// SPDX-License-Identifier: MIT
// Flash attention's row steps at the AVX2 tier: x86/flash_ops.h instantiated with 8-lane
// vectors (the same template as the AVX-512 tier, so every tier gives the scalar twins' bits).
// The AVX2 tier takes its other row operations from the scalar twins.
#include <immintrin.h>

#include "kernels/kernel_registry.h"
#include "kernels/x86/flash_ops.h"

namespace sniper::kernels_internal {

using x86::F32x8;

void mad_f32_avx2(float* y, const float* x, float v, int64_t n) { x86::mad_f32_t<F32x8>(y, x, v, n); }
void scale_f32_avx2(float* y, float v, int64_t n) { x86::scale_f32_t<F32x8>(y, v, n); }
void mad_f16_avx2(uint16_t* y, const uint16_t* x, float v, int64_t n) { x86::mad_f16_t<F32x8>(y, x, v, n); }
void scale_f16_avx2(uint16_t* y, float v, int64_t n) { x86::scale_f16_t<F32x8>(y, v, n); }
void widen_f16_avx2(const uint16_t* x, float* y, int64_t n) { x86::widen_f16_t<F32x8>(x, y, n); }
void gemm_f32_avx2(float* c, const float* a, const float* b, int64_t m, int64_t k, int64_t n) {
  x86::gemm_f32_t<F32x8>(c, a, b, m, k, n);
}
void softmax_mad_f32_avx2(float* acc, float* m, float* sum, const float* scores, int64_t n, float scale,
                            const float* v, int64_t hd) {
  x86::softmax_mad_f32_t<F32x8>(acc, m, sum, scores, n, scale, v, hd);
}

}  // namespace sniper::kernels_internal
