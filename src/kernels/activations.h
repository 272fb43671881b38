// SPDX-License-Identifier: MIT
// Element-wise activations and the small fused gate forms of the hybrid architectures
// (Qwen3.5 / Qwen3-Next delta-net and gated attention, Gemma 4 GELU and softcap), each computing
// the bits of the reference engine's (ggml's) CPU ops for the same inputs:
//   silu    ggml_vec_silu_f32: 16-element blocks from the row start use ggml's vectorised expf,
//           the n % 16 tail libm expf; x / (1 + exp(-x))
//   sigmoid 1 / (1 + expf(-x)) (libm)
//   softplus x > 20 ? x : logf(1 + expf(x)) (libm)
//   l2 norm sum of float squares in double, x * (1 / fmaxf(sqrtf(float(sum)), eps))
//   gelu    tanh approximation through ggml's f16 table (GGML_GELU_FP16): x <= -10 -> 0,
//           x >= 10 -> x, else table[f16(x)] widened, the table holding f16 of
//           (0.5 x) (1 + tanhf((sqrt(2/pi) x) fma(0.044715 x, x, 1))) at every f16 x
//   softcap cap * tanhf(x * (1 / cap)) (ggml_scale, ggml_tanh, ggml_scale)
// Row functions take n >= 0 elements; out may alias an input where stated. Pure and
// thread-compatible (the GELU table is built once, on first use, thread-safely).
#pragma once

#include <cstdint>

#include "base/cpu_features.h"

namespace sniper {

// y[i] = silu(x[i]) for one row (the 16-element blocks count from x[0]). y may alias x.
void silu_row(const float* x, float* y, int64_t n);

// y = x / max(||x||, eps) for one row (a q or k head: eps = the model's rms epsilon, as the
// reference passes it). y may alias x.
void l2_norm(const float* x, float* y, int64_t n, float eps);

// 1 / (1 + expf(-x)) with libm's expf (ggml's sigmoid op).
float sigmoid(float x);
// x > 20 ? x : logf(1 + expf(x)) (ggml's softplus op, threshold included).
float softplus(float x);

// The delta-net gates of one token: beta[j] = sigmoid(b[j]);
// g[j] = softplus(a[j] + dt_bias[j]) * ssm_a[j], for j < n_v_heads. Outputs may alias inputs.
void delta_net_gates(const float* b, const float* a, const float* dt_bias, const float* ssm_a, float* beta, float* g,
                     int64_t n_v_heads);

// The delta-net output gate of one head: out[i] = ((x[i] * s) * w[i]) * silu(z)[i] with
// s = 1 / sqrtf(mean(x^2) + eps) as rms_norm computes it and silu over the row z[0, n).
// out may alias x or z.
void gated_rms_norm(const float* x, const float* w, const float* z, float* out, int64_t n, float eps);

// Gated attention output: x[i] = x[i] * sigmoid(gate[i]).
void sigmoid_gate(const float* gate, float* x, int64_t n);

// Final logit softcap: x[i] = cap * tanhf(x[i] * (1 / cap)). cap > 0.
void softcap(float* x, int64_t n, float cap);

// y[i] = gelu(x[i]) (table form above). y may alias x.
void gelu(const float* x, float* y, int64_t n);
// out[i] = gelu(gate[i]) * up[i] as ggml_vec_geglu_f32: x <= -10 -> 0, x >= 10 -> x * up,
// else table value * up. out may alias gate or up.
void geglu(const float* gate, const float* up, float* out, int64_t n);

// gelu and geglu dispatch (once, at first use) to the selected tier; every tier gives the
// bits of these scalar twins.
void gelu_ref(const float* x, float* y, int64_t n);
void geglu_ref(const float* gate, const float* up, float* out, int64_t n);

// The reference GELU of one f16 value's bits, widened: the table entry the functions use.
float gelu_table_value(uint16_t f16_bits);

// GELU-quick (ggml_gelu_quick / ggml_geglu_quick_split, GGML_GELU_QUICK_FP16: the default FFN
// activation of mtmd's vision encoders, Gemma 4's included): y = table[f16(x)] widened, the
// table holding f16 of x * (1 / (1 + expf(-1.702 x))) at every f16 x; no cut-offs. The gated form
// multiplies by up. Outputs may alias inputs. Every tier gives the scalar twins' bits.
void gelu_quick(const float* x, float* y, int64_t n);
void geglu_quick(const float* gate, const float* up, float* out, int64_t n);
void gelu_quick_ref(const float* x, float* y, int64_t n);
void geglu_quick_ref(const float* gate, const float* up, float* out, int64_t n);
float gelu_quick_table_value(uint16_t f16_bits);

struct GeluOps {
  void (*gelu)(const float* x, float* y, int64_t n);
  void (*geglu)(const float* gate, const float* up, float* out, int64_t n);
  void (*gelu_quick)(const float* x, float* y, int64_t n);
  void (*geglu_quick)(const float* gate, const float* up, float* out, int64_t n);
};
// The GELU kernels of `tier` (ref where the tier has none). CHECKs the host can run the tier.
const GeluOps& find_gelu_ops(IsaTier tier);

}  // namespace sniper
