// SPDX-License-Identifier: MIT
#include "media/clamped_linear.h"

#include <algorithm>

#include "kernels/matmul_widened.h"
#include "kernels/ops.h"

namespace sniper {

namespace {

// Tokens per parallel_for chunk for element-wise passes over rows of n floats (~16K floats).
int64_t row_grain(int64_t n) { return std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(n, 1)); }

}  // namespace

void clamped_linear(const QTensor& w, const float* x, int64_t n_tok, float* y, const QTensor* bias,
                    const ClampBounds* clamp, std::vector<float>& clamped, ActBuffer& act, ThreadPool& pool) {
  const int64_t n_in = w.ne[0], n_out = w.n_rows();
  if (clamp != nullptr) {
    if (clamped.size() < static_cast<size_t>(n_tok * n_in)) clamped.resize(static_cast<size_t>(n_tok * n_in));
    float* c = clamped.data();
    pool.parallel_for(n_tok, row_grain(n_in), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin * n_in; i < end * n_in; ++i) c[i] = clamp_ggml(x[i], clamp->in_min, clamp->in_max);
    });
    x = c;
  }
  matmul_widened(w, x, y, n_tok, act, pool);
  const float* b = bias != nullptr && bias->data != nullptr ? f32_view(*bias) : nullptr;
  if (clamp == nullptr && b == nullptr) return;
  pool.parallel_for(n_tok, row_grain(n_out), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      float* yt = y + t * n_out;
      if (clamp != nullptr) {
        for (int64_t i = 0; i < n_out; ++i) yt[i] = clamp_ggml(yt[i], clamp->out_min, clamp->out_max);
      }
      if (b != nullptr) add_inplace(yt, b, n_out);
    }
  });
}

}  // namespace sniper
