// SPDX-License-Identifier: MIT
// Scalar f32 row operations (auto-vectorised by the compiler). These are a small share of the
// per-token time next to the matmuls; they follow ggml's formulas for numerical parity.
#include "kernels/ops.h"

#include <cmath>

#include "base/check.h"

namespace sniper {

void rms_norm(const float* x, const float* w, float* out, int64_t n, float eps) {
  double sum = 0.0;  // ggml_float accumulation
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  if (w != nullptr) {
    for (int64_t i = 0; i < n; ++i) out[i] = (x[i] * scale) * w[i];
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale;
  }
}

void rope_angles(int64_t pos, int64_t n_rot, float base, float freq_scale, const float* freq_factors,
                 float* cos_out, float* sin_out) {
  const float theta_scale = std::pow(base, -2.0f / static_cast<float>(n_rot));
  float theta = static_cast<float>(pos);
  for (int64_t i = 0; i < n_rot / 2; ++i) {
    const float ff = freq_factors != nullptr ? freq_factors[i] : 1.0f;
    const float t = freq_scale * (theta / ff);
    cos_out[i] = std::cos(t);
    sin_out[i] = std::sin(t);
    theta *= theta_scale;
  }
}

void rope_apply(float* x, int64_t n_heads, int64_t head_dim, int64_t n_rot, RopeStyle style,
                const float* cos_t, const float* sin_t) {
  DCHECK(n_rot <= head_dim && n_rot % 2 == 0);
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    if (style == RopeStyle::kNorm) {
      for (int64_t i = 0; i < n_rot / 2; ++i) {
        const float x0 = v[2 * i], x1 = v[2 * i + 1];
        v[2 * i] = x0 * cos_t[i] - x1 * sin_t[i];
        v[2 * i + 1] = x0 * sin_t[i] + x1 * cos_t[i];
      }
    } else {
      const int64_t half = n_rot / 2;
      for (int64_t i = 0; i < half; ++i) {
        const float x0 = v[i], x1 = v[i + half];
        v[i] = x0 * cos_t[i] - x1 * sin_t[i];
        v[i + half] = x0 * sin_t[i] + x1 * cos_t[i];
      }
    }
  }
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void softmax(float* x, int64_t n) {
  float max = -INFINITY;
  for (int64_t i = 0; i < n; ++i) max = x[i] > max ? x[i] : max;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float e = x[i] == -INFINITY ? 0.0f : std::exp(x[i] - max);
    x[i] = e;
    sum += static_cast<double>(e);
  }
  const float inv = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void axpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void top_k(const float* x, int64_t n, int64_t k, int32_t* idx) {
  CHECK(k >= 0 && k <= n, "top_k: k=%ld n=%ld", static_cast<long>(k), static_cast<long>(n));
  int64_t filled = 0;
  for (int64_t i = 0; i < n; ++i) {
    // Insertion into the sorted prefix idx[0, filled); strict '>' keeps lower indices first.
    int64_t j = filled < k ? filled : k;
    if (j == k && !(x[i] > x[idx[k - 1]])) continue;
    if (j == k) --j;
    while (j > 0 && x[i] > x[idx[j - 1]]) {
      idx[j] = idx[j - 1];
      --j;
    }
    idx[j] = static_cast<int32_t>(i);
    if (filled < k) ++filled;
  }
}

int32_t argmax(const float* x, int64_t n) {
  int32_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (x[i] > x[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

}  // namespace sniper
