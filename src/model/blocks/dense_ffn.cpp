// SPDX-License-Identifier: MIT
#include "model/blocks/dense_ffn.h"

#include "kernels/kernels.h"
#include "kernels/ops.h"

namespace sniper {

DenseFfn::DenseFfn(const ModelConfig& config, int64_t max_batch) : config_(config) {
  const size_t n = static_cast<size_t>(max_batch) * static_cast<size_t>(config.hidden_dim);
  hb_.resize(n);
  hb2_.resize(n);
}

Status DenseFfn::forward(int64_t, const LayerWeights& lw, const BlockIo& io) {
  const int64_t dim = config_.dim, ff = config_.hidden_dim, n_tok = io.n_tok;
  ThreadPool& pool = *io.pool;
  ActCache acts(io.buffers->act_bufs, 3);
  // gate and up in one parallel pass (one hand-out and barrier instead of two); the same bits as
  // two matmul_q calls.
  const MatmulJob gate_up[2] = {{&lw.ffn_gate, acts.get(lw.ffn_gate.type, io.xb, dim, n_tok, pool), hb_.data(), ff},
                                {&lw.ffn_up, acts.get(lw.ffn_up.type, io.xb, dim, n_tok, pool), hb2_.data(), ff}};
  matmul_q_multi(gate_up, pool, selected_tier(), MatmulOrder::kAuto);
  // Row by row: ggml's swiglu splits each row into 16-wide SIMD blocks and a scalar tail.
  for (int64_t t = 0; t < n_tok; ++t) silu_mul(hb_.data() + t * ff, hb2_.data() + t * ff, hb_.data() + t * ff, ff);
  matmul(lw.ffn_down, hb_.data(), io.out, n_tok, io.buffers->act, pool);
  return ok_status();
}

}  // namespace sniper
