// SPDX-License-Identifier: MIT
// A projector's linear layer as mtmd's build_mm computes it: the input clamped (ggml_clamp makes a
// new tensor, so every linear clamps its shared input on its own), the matmul, the output clamped,
// then the bias. Shared by the vision and audio encoders (Gemma 4's clippable linears; a null clamp
// for the projectors without them).
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/matmul.h"
#include "media/projector.h"

namespace sniper {

// ggml_clamp: MAX(MIN(x, hi), lo), with the macros' NaN behaviour.
inline float clamp_ggml(float x, float lo, float hi) {
  const float m = x < hi ? x : hi;
  return m > lo ? m : lo;
}

// y[n_tok][n_out] = clamp_out(w * clamp_in(x[n_tok][n_in])) + bias. `clamped` holds the clamped
// input (grown when short), `act` the quantized (or widened: kernels/matmul_widened.h)
// activations.
void clamped_linear(const QTensor& w, const float* x, int64_t n_tok, float* y, const QTensor* bias,
                    const ClampBounds* clamp, std::vector<float>& clamped, ActBuffer& act, ThreadPool& pool);

}  // namespace sniper
