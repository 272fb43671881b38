// SPDX-License-Identifier: MIT
// Scalar activations and gate forms (kernels/activations.h), the `_ref` twins of the GELU
// kernels, the f16 GELU table and the GELU dispatch.
#include "kernels/activations.h"

#include <cmath>

#include "base/check.h"
#include "base/fp16.h"
#include "kernels/ggml_math.h"
#include "kernels/kernel_registry.h"
#include "kernels/kernel_set.h"

namespace sniper {

namespace {

constexpr float kGeluCoefA = 0.044715f;
constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;  // sqrt(2 / pi)

// ggml_gelu_f32 as the reference's C build compiles it (GCC contracts 1 + (a x) x into one FMA).
float gelu_tanh_f32(float x) {
  return (0.5f * x) * (1.0f + std::tanh((kSqrt2OverPi * x) * std::fma(kGeluCoefA * x, x, 1.0f)));
}

// The GELU of every f16 value, rounded to f16 and widened back to f32 (ggml_table_gelu_f16).
struct GeluTable {
  float v[1 << 16];
  GeluTable() {
    for (uint32_t h = 0; h < (1u << 16); ++h) v[h] = round_fp16(gelu_tanh_f32(fp16_to_fp32(static_cast<fp16_t>(h))));
  }
};

const GeluTable& gelu_table() {
  static const GeluTable table;
  return table;
}

// ggml_gelu_quick_f32: x * (1 / (1 + expf(-1.702 x))) (libm expf), tabulated at every f16 x and
// rounded to f16 as ggml's GGML_GELU_QUICK_FP16 table.
constexpr float kGeluQuickCoef = -1.702f;

struct GeluQuickTable {
  float v[1 << 16];
  GeluQuickTable() {
    for (uint32_t h = 0; h < (1u << 16); ++h) {
      const float x = fp16_to_fp32(static_cast<fp16_t>(h));
      v[h] = round_fp16(x * (1.0f / (1.0f + std::exp(kGeluQuickCoef * x))));
    }
  }
};

const GeluQuickTable& gelu_quick_table() {
  static const GeluQuickTable table;
  return table;
}

}  // namespace

namespace kernels_internal {
const float* gelu_table_f32() { return gelu_table().v; }
const float* gelu_quick_table_f32() { return gelu_quick_table().v; }
}  // namespace kernels_internal

float gelu_table_value(uint16_t f16_bits) { return gelu_table().v[f16_bits]; }

void silu_row(const float* x, float* y, int64_t n) {
  const int64_t n_vec = n - n % 16;
  for (int64_t i = 0; i < n_vec; ++i) y[i] = x[i] / (1.0f + kernels_internal::ggml_expf(0.0f - x[i]));
  for (int64_t i = n_vec; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}

void l2_norm(const float* x, float* y, int64_t n, float eps) {
  double sum = 0.0;  // ggml_float
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float scale = 1.0f / std::fmax(std::sqrt(static_cast<float>(sum)), eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

float softplus(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }

void delta_net_gates(const float* b, const float* a, const float* dt_bias, const float* ssm_a, float* beta, float* g,
                     int64_t n_v_heads) {
  for (int64_t j = 0; j < n_v_heads; ++j) {
    const float bj = b[j], gj = softplus(a[j] + dt_bias[j]) * ssm_a[j];
    beta[j] = sigmoid(bj);
    g[j] = gj;
  }
}

void gated_rms_norm(const float* x, const float* w, const float* z, float* out, int64_t n, float eps) {
  double sum = 0.0;  // rms_norm's ggml_float accumulation
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  const int64_t n_vec = n - n % 16;  // silu_row's blocks
  for (int64_t i = 0; i < n; ++i) {
    const float zi = z[i];
    const float silu = zi / (1.0f + (i < n_vec ? kernels_internal::ggml_expf(0.0f - zi) : std::exp(-zi)));
    out[i] = ((x[i] * scale) * w[i]) * silu;
  }
}

void sigmoid_gate(const float* gate, float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] * sigmoid(gate[i]);
}

void softcap(float* x, int64_t n, float cap) {
  CHECK(cap > 0.0f, "softcap: cap=%g", static_cast<double>(cap));
  const float inv = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i] * inv) * cap;
}

void gelu_ref(const float* x, float* y, int64_t n) {
  const float* table = gelu_table().v;
  for (int64_t i = 0; i < n; ++i) {
    const float xi = x[i];
    y[i] = xi <= -10.0f ? 0.0f : xi >= 10.0f ? xi : table[fp32_to_fp16(xi)];
  }
}

void geglu_ref(const float* gate, const float* up, float* out, int64_t n) {
  const float* table = gelu_table().v;
  for (int64_t i = 0; i < n; ++i) {
    const float xi = gate[i];
    out[i] = xi <= -10.0f ? 0.0f : xi >= 10.0f ? xi * up[i] : table[fp32_to_fp16(xi)] * up[i];
  }
}

void gelu_quick_ref(const float* x, float* y, int64_t n) {
  const float* table = gelu_quick_table().v;
  for (int64_t i = 0; i < n; ++i) y[i] = table[fp32_to_fp16(x[i])];
}

void geglu_quick_ref(const float* gate, const float* up, float* out, int64_t n) {
  const float* table = gelu_quick_table().v;
  for (int64_t i = 0; i < n; ++i) out[i] = table[fp32_to_fp16(gate[i])] * up[i];
}

float gelu_quick_table_value(uint16_t f16_bits) { return gelu_quick_table().v[f16_bits]; }

const GeluOps& find_gelu_ops(IsaTier tier) { return get_kernel_set(tier).gelu; }

void gelu(const float* x, float* y, int64_t n) {
  static const GeluOps& ops = find_gelu_ops(selected_tier());
  ops.gelu(x, y, n);
}

void geglu(const float* gate, const float* up, float* out, int64_t n) {
  static const GeluOps& ops = find_gelu_ops(selected_tier());
  ops.geglu(gate, up, out, n);
}

}  // namespace sniper

namespace sniper {

void gelu_quick(const float* x, float* y, int64_t n) {
  static const GeluOps& ops = find_gelu_ops(selected_tier());
  ops.gelu_quick(x, y, n);
}

void geglu_quick(const float* gate, const float* up, float* out, int64_t n) {
  static const GeluOps& ops = find_gelu_ops(selected_tier());
  ops.geglu_quick(gate, up, out, n);
}

}  // namespace sniper
