// SPDX-License-Identifier: MIT
// AVX-512 twin of layer_norm_ref (kernels/layer_norm.h): ggml_vec_cvar_f32's own AVX-512 loop.
#if defined(__GNUC__) && !defined(__clang__)  // GCC 12's _mm512_reduce_add_ps trips -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <cmath>

#include "kernels/kernel_registry.h"
#include "kernels/layer_norm.h"

namespace sniper::kernels_internal {

void layer_norm_avx512(const float* x, const float* w, const float* b, float* out, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
  const float mean = static_cast<float>(sum) / static_cast<float>(n);
  const __m512 vmean = _mm512_set1_ps(mean);
  double var = 0.0;
  int64_t i = 0;
  for (; i + 15 < n; i += 16) {
    const __m512 v = _mm512_sub_ps(_mm512_loadu_ps(x + i), vmean);
    _mm512_storeu_ps(out + i, v);
    var += static_cast<double>(_mm512_reduce_add_ps(_mm512_mul_ps(v, v)));
  }
  for (; i < n; ++i) {
    const float v = x[i] - mean;
    out[i] = v;
    var += static_cast<double>(v * v);
  }
  const float variance = static_cast<float>(var / static_cast<double>(n));
  const __m512 scale = _mm512_set1_ps(1.0f / std::sqrt(variance + eps));
  int64_t j = 0;
  for (; j + 15 < n; j += 16) {
    __m512 y = _mm512_mul_ps(_mm512_loadu_ps(out + j), scale);
    if (w != nullptr) y = _mm512_mul_ps(y, _mm512_loadu_ps(w + j));
    if (b != nullptr) y = _mm512_add_ps(y, _mm512_loadu_ps(b + j));
    _mm512_storeu_ps(out + j, y);
  }
  const float s = _mm512_cvtss_f32(scale);
  for (; j < n; ++j) {
    float y = out[j] * s;
    if (w != nullptr) y *= w[j];
    if (b != nullptr) y += b[j];
    out[j] = y;
  }
}

}  // namespace sniper::kernels_internal
