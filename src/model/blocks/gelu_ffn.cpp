// SPDX-License-Identifier: MIT
#include "model/blocks/gelu_ffn.h"

#include <algorithm>

#include "kernels/activations.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"

namespace sniper {

GeluFfn::GeluFfn(const ModelConfig& config, int64_t max_batch) : config_(config) {
  int64_t ff = 0;
  for (const LayerPlan& lp : config.layers) ff = std::max(ff, lp.ffn_dim);
  const size_t n = static_cast<size_t>(max_batch) * static_cast<size_t>(ff);
  hb_.resize(n);
  hb2_.resize(n);
}

void GeluFfn::gelu_mlp(const LayerWeights& lw, int64_t ff, const BlockIo& io, float* out) {
  const int64_t dim = config_.dim, n_tok = io.n_tok;
  ThreadPool& pool = *io.pool;
  ActCache acts(io.buffers->act_bufs, 3);
  const MatmulJob gate_up[2] = {{&lw.ffn_gate, acts.get(lw.ffn_gate.type, io.xb, dim, n_tok, pool), hb_.data(), ff},
                                {&lw.ffn_up, acts.get(lw.ffn_up.type, io.xb, dim, n_tok, pool), hb2_.data(), ff}};
  matmul_q_multi(gate_up, pool, selected_tier(), MatmulOrder::kAuto);
  for (int64_t t = 0; t < n_tok; ++t) geglu(hb_.data() + t * ff, hb2_.data() + t * ff, hb_.data() + t * ff, ff);
  matmul(lw.ffn_down, hb_.data(), out, n_tok, io.buffers->act, pool);
}

Status GeluFfn::forward(int64_t layer_idx, const LayerWeights& lw, const BlockIo& io) {
  const int64_t dim = config_.dim;
  gelu_mlp(lw, config_.layer(layer_idx).ffn_dim, io, io.out);
  for (int64_t t = 0; t < io.n_tok; ++t) {
    rms_norm(io.out + t * dim, f32_data(lw.post_ffw_norm), io.out + t * dim, dim, config_.norm_eps);
  }
  return ok_status();
}

}  // namespace sniper
