// SPDX-License-Identifier: MIT
#include "kernels/layer_norm.h"

#include <cmath>

#include "base/check.h"
#include "kernels/ggml_math.h"
#include "kernels/kernel_registry.h"
#include "kernels/kernel_set.h"

namespace sniper {

void layer_norm_ref(const float* x, const float* w, const float* b, float* out, int64_t n, float eps) {
  double sum = 0.0;  // ggml_vec_sum_f32: in double, then to float
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
  const float mean = static_cast<float>(sum) / static_cast<float>(n);
  double var = 0.0;
  int64_t i = 0;
  for (; i + 15 < n; i += 16) {
    float sq[16];
    for (int l = 0; l < 16; ++l) {
      const float v = x[i + l] - mean;
      out[i + l] = v;
      sq[l] = v * v;
    }
    var += static_cast<double>(kernels_internal::reduce_add_16(sq));
  }
  for (; i < n; ++i) {
    const float v = x[i] - mean;
    out[i] = v;
    var += static_cast<double>(v * v);
  }
  const float variance = static_cast<float>(var / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(variance + eps);
  for (int64_t j = 0; j < n; ++j) out[j] *= scale;
  if (w != nullptr) {
    for (int64_t j = 0; j < n; ++j) out[j] *= w[j];
  }
  if (b != nullptr) {
    for (int64_t j = 0; j < n; ++j) out[j] += b[j];
  }
}

LayerNormFn find_layer_norm(IsaTier tier) { return get_kernel_set(tier).layer_norm; }

void layer_norm(const float* x, const float* w, const float* b, float* out, int64_t n, float eps) {
  static const LayerNormFn fn = find_layer_norm(selected_tier());
  fn(x, w, b, out, n, eps);
}

}  // namespace sniper
