// SPDX-License-Identifier: MIT
// AVX2 twin of layer_norm_ref (kernels/layer_norm.h): the reference's 16-lane variance blocks as
// two 8-lane halves, reduced in _mm512_reduce_add_ps's order (halves, then quarters, then pairs).
#include <immintrin.h>

#include <cmath>

#include "kernels/kernel_registry.h"
#include "kernels/layer_norm.h"

namespace sniper::kernels_internal {

namespace {

// _mm512_reduce_add_ps's tree over the 16 lanes lo (0-7) and hi (8-15).
inline float reduce_add_16_avx2(__m256 lo, __m256 hi) {
  const __m256 t3 = _mm256_add_ps(hi, lo);                                                 // v[i + 8] + v[i]
  const __m128 t6 = _mm_add_ps(_mm256_extractf128_ps(t3, 1), _mm256_castps256_ps128(t3));  // t3[i + 4] + t3[i]
  const __m128 t8 = _mm_add_ps(t6, _mm_movehl_ps(t6, t6));  // t6[0] + t6[2], t6[1] + t6[3]
  return _mm_cvtss_f32(_mm_add_ss(t8, _mm_shuffle_ps(t8, t8, 1)));
}

}  // namespace

void layer_norm_avx2(const float* x, const float* w, const float* b, float* out, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
  const float mean = static_cast<float>(sum) / static_cast<float>(n);
  const __m256 vmean = _mm256_set1_ps(mean);
  double var = 0.0;
  int64_t i = 0;
  for (; i + 15 < n; i += 16) {
    const __m256 lo = _mm256_sub_ps(_mm256_loadu_ps(x + i), vmean);
    const __m256 hi = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vmean);
    _mm256_storeu_ps(out + i, lo);
    _mm256_storeu_ps(out + i + 8, hi);
    var += static_cast<double>(reduce_add_16_avx2(_mm256_mul_ps(lo, lo), _mm256_mul_ps(hi, hi)));
  }
  for (; i < n; ++i) {
    const float v = x[i] - mean;
    out[i] = v;
    var += static_cast<double>(v * v);
  }
  const float variance = static_cast<float>(var / static_cast<double>(n));
  const float s = 1.0f / std::sqrt(variance + eps);
  const __m256 scale = _mm256_set1_ps(s);
  int64_t j = 0;
  for (; j + 7 < n; j += 8) {
    __m256 y = _mm256_mul_ps(_mm256_loadu_ps(out + j), scale);
    if (w != nullptr) y = _mm256_mul_ps(y, _mm256_loadu_ps(w + j));
    if (b != nullptr) y = _mm256_add_ps(y, _mm256_loadu_ps(b + j));
    _mm256_storeu_ps(out + j, y);
  }
  for (; j < n; ++j) {
    float y = out[j] * s;
    if (w != nullptr) y *= w[j];
    if (b != nullptr) y += b[j];
    out[j] = y;
  }
}

}  // namespace sniper::kernels_internal
