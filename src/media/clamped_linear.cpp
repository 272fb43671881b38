// SPDX-License-Identifier: MIT
#include "media/clamped_linear.h"

#include "kernels/ops.h"

namespace sniper {

void clamped_linear(const QTensor& w, const float* x, int64_t n_tok, float* y, const QTensor* bias,
                    const ClampBounds* clamp, std::vector<float>& clamped, ActBuffer& act, ThreadPool& pool) {
  const int64_t n_in = w.ne[0], n_out = w.n_rows();
  if (clamp != nullptr) {
    if (clamped.size() < static_cast<size_t>(n_tok * n_in)) clamped.resize(static_cast<size_t>(n_tok * n_in));
    for (int64_t i = 0; i < n_tok * n_in; ++i)
      clamped[static_cast<size_t>(i)] = clamp_ggml(x[i], clamp->in_min, clamp->in_max);
    x = clamped.data();
  }
  matmul(w, x, y, n_tok, act, pool);
  if (clamp != nullptr) {
    for (int64_t i = 0; i < n_tok * n_out; ++i) y[i] = clamp_ggml(y[i], clamp->out_min, clamp->out_max);
  }
  if (bias != nullptr && bias->data != nullptr) {
    const float* b = f32_view(*bias);
    for (int64_t t = 0; t < n_tok; ++t) add_inplace(y + t * n_out, b, n_out);
  }
}

}  // namespace sniper
