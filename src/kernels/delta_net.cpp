// SPDX-License-Identifier: MIT
// The gated delta-net recurrence's scalar twin (kernels/delta_net.h), its argument checks and
// its dispatch. The twin follows ggml_gated_delta_net's order of operations; each state row
// (one value channel) only ever meets its own u and output element, so the twin finishes one row
// before the next without changing a bit against ggml's whole-state passes.
#include "kernels/delta_net.h"

#include <cmath>

#include "base/check.h"
#include "kernels/ggml_math.h"
#include "kernels/kernel_registry.h"
#include "kernels/kernel_set.h"

namespace sniper {

namespace kernels_internal {

void check_delta_net_args(const DeltaNetArgs& a, int64_t head_begin, int64_t head_end) {
  CHECK(a.head_dim > 0 && a.n_k_heads > 0 && a.n_v_heads > 0 && a.n_v_heads % a.n_k_heads == 0,
        "delta_net: head_dim=%ld n_k_heads=%ld n_v_heads=%ld", static_cast<long>(a.head_dim),
        static_cast<long>(a.n_k_heads), static_cast<long>(a.n_v_heads));
  CHECK(0 <= head_begin && head_begin <= head_end && head_end <= a.n_v_heads,
        "delta_net: heads [%ld, %ld) outside [0, %ld)", static_cast<long>(head_begin), static_cast<long>(head_end),
        static_cast<long>(a.n_v_heads));
  CHECK(a.n_tokens >= 0, "delta_net: n_tokens=%ld", static_cast<long>(a.n_tokens));
}

}  // namespace kernels_internal

int64_t delta_net_key_head(const DeltaNetArgs& a, int64_t j) {
  return a.key_map == KeyHeadMap::kTiled ? j % a.n_k_heads : j / (a.n_v_heads / a.n_k_heads);
}

void delta_net_ref(const DeltaNetArgs& a, int64_t head_begin, int64_t head_end) {
  kernels_internal::check_delta_net_args(a, head_begin, head_end);
  const int64_t d = a.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t j = head_begin; j < head_end; ++j) {
    const int64_t kh = delta_net_key_head(a, j);
    float* s = a.state + j * d * d;
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      const float* q = a.q + t * a.q_stride + kh * d;
      const float* k = a.k + t * a.k_stride + kh * d;
      const float* v = a.v + t * a.v_stride + j * d;
      const float decay = std::exp(a.g[t * a.gb_stride + j]);
      const float beta = a.beta[t * a.gb_stride + j];
      float* o = a.out + t * a.out_stride + j * d;
      for (int64_t c = 0; c < d; ++c) {
        float* row = s + c * d;  // row c = column c of S
        for (int64_t r = 0; r < d; ++r) row[r] *= decay;
        const float u = (v[c] - kernels_internal::ggml_dot_f32(row, k, d)) * beta;
        for (int64_t r = 0; r < d; ++r) row[r] = std::fma(k[r], u, row[r]);
        o[c] = kernels_internal::ggml_dot_f32(row, q, d) * scale;
      }
    }
  }
}

DeltaNetFn find_delta_net(IsaTier tier) { return get_kernel_set(tier).delta_net; }

void delta_net(const DeltaNetArgs& a, int64_t head_begin, int64_t head_end) {
  static const DeltaNetFn fn = find_delta_net(selected_tier());
  fn(a, head_begin, head_end);
}

}  // namespace sniper
