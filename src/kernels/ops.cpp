// SPDX-License-Identifier: MIT
// Scalar f32 row operations (auto-vectorised by the compiler). These are a small share of the
// per-token time next to the matmuls; they follow ggml's formulas for numerical parity.
#include "kernels/ops.h"

#include <cmath>

#include "base/check.h"
#include "base/fp16.h"
#include "kernels/ggml_math.h"
#include "kernels/kernel_registry.h"
#include "kernels/kernel_set.h"
#include "quant/q8_0.h"

namespace sniper {

using kernels_internal::ggml_expf;
using kernels_internal::reduce_add_16;

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

void rope_angles(int64_t pos, int64_t n_rot, float base, float freq_scale, const float* freq_factors, float* cos_out,
                 float* sin_out) {
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

void rope_angles_multi(const int64_t pos[4], const int32_t sections[4], bool interleaved, int64_t n_rot, float base,
                       float freq_scale, const float* freq_factors, float* cos_out, float* sin_out) {
  CHECK(sections[0] >= 0 && sections[1] >= 0 && sections[2] >= 0 && sections[3] >= 0 &&
            sections[0] + sections[1] + sections[2] + sections[3] > 0,
        "rope_angles_multi: sections [%d, %d, %d, %d]", sections[0], sections[1], sections[2], sections[3]);
  const int64_t sect_dims = sections[0] + sections[1] + sections[2] + sections[3];
  const int64_t sec_w = sections[0] + sections[1];  // first w sector (not interleaved)
  const float theta_scale = std::pow(base, -2.0f / static_cast<float>(n_rot));
  float theta[4];  // t, h, w, e
  for (int c = 0; c < 4; ++c) theta[c] = static_cast<float>(pos[c]);
  for (int64_t i = 0; i < n_rot / 2; ++i) {
    const int64_t sector = i % sect_dims;
    int c = 3;
    if (interleaved) {
      if (sector % 3 == 1 && sector < 3 * sections[1]) {
        c = 1;
      } else if (sector % 3 == 2 && sector < 3 * sections[2]) {
        c = 2;
      } else if (sector % 3 == 0 && sector < 3 * sections[0]) {
        c = 0;
      }
    } else {
      c = sector < sections[0] ? 0 : sector < sec_w ? 1 : sector < sec_w + sections[2] ? 2 : 3;
    }
    const float ff = freq_factors != nullptr ? freq_factors[i] : 1.0f;
    const float t = freq_scale * (theta[c] / ff);
    cos_out[i] = std::cos(t);
    sin_out[i] = std::sin(t);
    for (float& th : theta) th *= theta_scale;
  }
}

void rope_angles_vision(const int64_t pos[4], const int32_t sections[4], int64_t head_dim, float base, float* cos_out,
                        float* sin_out) {
  CHECK(sections[0] >= 0 && sections[1] >= 0 && sections[2] >= 0 && sections[3] >= 0 &&
            sections[0] + sections[1] + sections[2] + sections[3] > 0 && head_dim % 2 == 0,
        "rope_angles_vision: sections [%d, %d, %d, %d], head_dim %lld", sections[0], sections[1], sections[2],
        sections[3], static_cast<long long>(head_dim));
  const int64_t sect_dims = sections[0] + sections[1] + sections[2] + sections[3];
  const int64_t sec_w = sections[0] + sections[1], sec_e = sec_w + sections[2];
  const float theta_scale = std::pow(base, -2.0f / static_cast<float>(head_dim / 2));
  float theta[4];  // t, h, w, e
  for (int c = 0; c < 4; ++c) theta[c] = static_cast<float>(pos[c]);
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const int64_t sector = i % sect_dims;
    if (sector == 0) {
      theta[0] = static_cast<float>(pos[0]);
    } else if (sector == sections[0]) {
      theta[1] = static_cast<float>(pos[1]);
    } else if (sector == sec_w) {
      theta[2] = static_cast<float>(pos[2]);
    } else if (sector == sec_e) {
      theta[3] = static_cast<float>(pos[3]);
    }
    const int c = sector < sections[0] ? 0 : sector < sec_w ? 1 : sector < sec_e ? 2 : 3;
    const float t = 1.0f * (theta[c] / 1.0f);
    cos_out[i] = std::cos(t);
    sin_out[i] = std::sin(t);
    for (float& th : theta) th *= theta_scale;
  }
}

void rope_apply(float* x, int64_t n_heads, int64_t head_dim, int64_t n_rot, RopeStyle style, const float* cos_t,
                const float* sin_t) {
  // ggml's rotate_pairs computes x0*cos - x1*sin and x0*sin + x1*cos; the reference build
  // (native -march, the compiler's default FP contraction) fuses the first product of each.
  DCHECK(n_rot <= head_dim && n_rot % 2 == 0);
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    if (style == RopeStyle::kNorm) {
      for (int64_t i = 0; i < n_rot / 2; ++i) {
        const float x0 = v[2 * i], x1 = v[2 * i + 1];
        v[2 * i] = std::fma(x0, cos_t[i], -(x1 * sin_t[i]));
        v[2 * i + 1] = std::fma(x0, sin_t[i], x1 * cos_t[i]);
      }
    } else {
      const int64_t half = n_rot / 2;
      for (int64_t i = 0; i < half; ++i) {
        const float x0 = v[i], x1 = v[i + half];
        v[i] = std::fma(x0, cos_t[i], -(x1 * sin_t[i]));
        v[i + half] = std::fma(x0, sin_t[i], x1 * cos_t[i]);
      }
    }
  }
}

void silu_mul_ref(const float* gate, const float* up, float* out, int64_t n) {
  // ggml_vec_swiglu_f32: 16-wide blocks use ggml's expf, the tail libm expf.
  const int64_t n_vec = n - n % 16;
  for (int64_t i = 0; i < n_vec; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + ggml_expf(0.0f - g)) * up[i];
  }
  for (int64_t i = n_vec; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

double exp_sum_ref(float* x, int64_t n, float max) {
  // ggml_vec_soft_max_f32: blocks of 16 use ggml's expf and a lane-tree sum, the tail libm.
  double sum = 0.0;
  int64_t i = 0;
  for (; i + 15 < n; i += 16) {
    for (int64_t j = i; j < i + 16; ++j) x[j] = ggml_expf(x[j] - max);
    sum += static_cast<double>(reduce_add_16(x + i));
  }
  for (; i < n; ++i) {
    const float e = std::exp(x[i] - max);
    x[i] = e;
    sum += static_cast<double>(e);
  }
  return sum;
}

void gemm_f32_ref(float* c, const float* a, const float* b, int64_t m, int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = c[i * n + j];
      for (int64_t kk = 0; kk < k; ++kk) acc = std::fma(a[i * k + kk], b[kk * n + j], acc);
      c[i * n + j] = acc;
    }
  }
}

void widen_f16_cols_ref(const uint8_t* rows, size_t row_bytes, int64_t n_rows, int64_t n, float* out,
                        int64_t out_stride) {
  for (int64_t t = 0; t < n_rows; ++t) {
    const auto* row = reinterpret_cast<const uint16_t*>(rows + row_bytes * static_cast<size_t>(t));
    for (int64_t d = 0; d < n; ++d) out[d * out_stride + t] = fp16_to_fp32(row[d]);
  }
}

void widen_f16_ref(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

void softmax_ref(float* x, int64_t n) {
  float max = -INFINITY;
  for (int64_t i = 0; i < n; ++i) max = x[i] > max ? x[i] : max;
  const double sum = exp_sum_ref(x, n, max);
  const float inv = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void round_fp16_row_ref(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = round_fp16(x[i]);
}

void attention_weights_ref(float* x, int64_t n_kv, int64_t n_soft, float scale, float* w, int64_t n_dot) {
  for (int64_t i = 0; i < n_kv; ++i) x[i] *= scale;
  for (int64_t i = n_kv; i < n_soft; ++i) x[i] = -INFINITY;
  softmax_ref(x, n_soft);
  round_fp16_row_ref(x, w, n_kv);
  for (int64_t i = n_kv; i < n_dot; ++i) w[i] = 0.0f;
}

void mad_f32_ref(float* y, const float* x, float v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::fma(x[i], v, y[i]);
}

void scale_f32_ref(float* y, float v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= v;
}

void mad_f16_ref(uint16_t* y, const uint16_t* x, float v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(std::fma(fp16_to_fp32(x[i]), v, fp16_to_fp32(y[i])));
}

void scale_f16_ref(uint16_t* y, float v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(fp16_to_fp32(y[i]) * v);
}

void softmax_mad_f32_ref(float* acc, float* m, float* sum, const float* scores, int64_t n, float scale, const float* v,
                         int64_t hd) {
  for (int64_t t = 0; t < n; ++t) {
    const float sc = scores[t] * scale;
    float ms = 1.0f, vs = 1.0f;
    if (sc > *m) {
      const float m_old = *m;
      *m = sc;
      ms = std::exp(m_old - sc);
      if (m_old != -INFINITY) scale_f32_ref(acc, ms, hd);
    } else {
      vs = std::exp(sc - *m);
    }
    mad_f32_ref(acc, v + t * hd, vs, hd);
    *sum = std::fma(*sum, ms, vs);
  }
}

namespace kernels_internal {
const RowOps& ref_row_ops() {
  static const RowOps kRef = {silu_mul_ref,       softmax_ref,   round_fp16_row_ref, attention_weights_ref,
                              mad_f32_ref,        scale_f32_ref, mad_f16_ref,        scale_f16_ref,
                              exp_sum_ref,        widen_f16_ref, gemm_f32_ref,       widen_f16_cols_ref,
                              softmax_mad_f32_ref};
  return kRef;
}
}  // namespace kernels_internal

const RowOps& find_row_ops(IsaTier tier) { return get_kernel_set(tier).rows; }

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  static const RowOps& ops = find_row_ops(selected_tier());
  ops.silu_mul(gate, up, out, n);
}

void softmax(float* x, int64_t n) {
  static const RowOps& ops = find_row_ops(selected_tier());
  ops.softmax(x, n);
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
