// SPDX-License-Identifier: MIT
#include "model/blocks/dense_ffn.h"

#include <algorithm>

#include "kernels/activations.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"

namespace sniper {

namespace {

// The layer runs the dense MLP: as its FFN, or as an MoE layer's ungated shared expert.
bool mlp(const ModelConfig&, const LayerPlan& lp) {
  return lp.ffn == FfnKind::kDense || lp.shared_expert == SharedExpert::kUngated;
}
bool split_mlp(const ModelConfig& c, const LayerPlan& lp) { return mlp(c, lp) && !lp.ffn_fused_gate_up; }
bool fused_mlp(const ModelConfig& c, const LayerPlan& lp) { return mlp(c, lp) && lp.ffn_fused_gate_up; }
TensorShape up_shape(const ModelConfig& c, const LayerPlan& lp) { return tensor_shape(c.dim, lp.ffn_dim); }

constexpr LayerTensorSpec kTable[] = {
    {"ffn_gate.weight", &LayerWeights::ffn_gate, up_shape, TensorRole::kDenseFfn, TensorType::kMatrix, false,
     split_mlp},
    {"ffn_up.weight", &LayerWeights::ffn_up, up_shape, TensorRole::kDenseFfn, TensorType::kMatrix, false, split_mlp},
    {"ffn_gate_up.weight", &LayerWeights::ffn_gate_up,
     [](const ModelConfig& c, const LayerPlan& lp) { return tensor_shape(c.dim, 2 * lp.ffn_dim); },
     TensorRole::kDenseFfn, TensorType::kMatrix, false, fused_mlp},
    {"ffn_down.weight", &LayerWeights::ffn_down,
     [](const ModelConfig& c, const LayerPlan& lp) { return tensor_shape(lp.ffn_dim, c.dim); }, TensorRole::kDenseFfn,
     TensorType::kMatrix, false, mlp},
    {"post_ffw_norm.weight", &LayerWeights::post_ffw_norm,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim); }, TensorRole::kAlways, TensorType::kF32,
     false, [](const ModelConfig&, const LayerPlan& lp) { return lp.ffn_post_norm; }},
};

}  // namespace

std::span<const LayerTensorSpec> DenseFfn::tensor_table() { return kTable; }

void gated_activation(Activation act, const float* gate, const float* up, float* out, int64_t n) {
  switch (act) {
    case Activation::kSilu: silu_mul(gate, up, out, n); return;
    case Activation::kGelu: geglu(gate, up, out, n); return;
  }
  CHECK(false, "unknown activation %d", static_cast<int>(act));
}

void run_gated_mlp(const GatedMlpWeights& w, int64_t ff, Activation act, const float* x, int64_t dim, int64_t n_tok,
                   float* hb, float* hb2, float* out, BlockBuffers& buffers, ThreadPool& pool) {
  if (w.gate_up != nullptr) {
    // One product: row t of hb2 is [gate (ff) | up (ff)].
    matmul(*w.gate_up, x, hb2, n_tok, buffers.act, pool);
    for (int64_t t = 0; t < n_tok; ++t) gated_activation(act, hb2 + t * 2 * ff, hb2 + t * 2 * ff + ff, hb + t * ff, ff);
  } else {
    ActCache acts(buffers.act_bufs, 3);
    const MatmulJob gate_up[2] = {{w.gate, acts.get(w.gate->type, x, dim, n_tok, pool), hb, ff},
                                  {w.up, acts.get(w.up->type, x, dim, n_tok, pool), hb2, ff}};
    matmul_q_multi(gate_up, pool, selected_tier(), MatmulOrder::kAuto);
    for (int64_t t = 0; t < n_tok; ++t) gated_activation(act, hb + t * ff, hb2 + t * ff, hb + t * ff, ff);
  }
  matmul(*w.down, hb, out, n_tok, buffers.act, pool);
}

std::span<const ScratchEntry<DenseFfn>> DenseFfn::scratch_table() {
  // The widest dense layer's gate / activation and up rows (up: gate | up when fused).
  static constexpr ScratchEntry<DenseFfn> kScratch[] = {
      {&DenseFfn::hb_, nullptr,
       [](const ModelConfig& c, int64_t B) {
         int64_t ff = 0;
         for (const LayerPlan& lp : c.layers) ff = lp.ffn == FfnKind::kDense ? std::max(ff, lp.ffn_dim) : ff;
         return rows(B, ff);
       }},
      {&DenseFfn::hb2_, nullptr,
       [](const ModelConfig& c, int64_t B) {
         int64_t ff = 0;
         for (const LayerPlan& lp : c.layers) {
           if (lp.ffn == FfnKind::kDense) ff = std::max(ff, lp.ffn_fused_gate_up ? 2 * lp.ffn_dim : lp.ffn_dim);
         }
         return rows(B, ff);
       }},
  };
  return kScratch;
}

size_t DenseFfn::scratch_bound(const ModelConfig& config, int64_t max_batch) {
  return scratch_table_bytes(scratch_table(), config, max_batch);
}

DenseFfn::DenseFfn(const ModelConfig& config, int64_t max_batch) : config_(config) {
  allocate_scratch(*this, scratch_table(), config, max_batch);
}

Status DenseFfn::forward(int64_t layer_idx, const LayerWeights& lw, const BlockIo& io) {
  const LayerPlan& lp = config_.layer(layer_idx);
  const int64_t dim = config_.dim;
  const bool fused = lp.ffn_fused_gate_up;
  const GatedMlpWeights w{.gate = fused ? nullptr : &lw.ffn_gate,
                          .up = fused ? nullptr : &lw.ffn_up,
                          .gate_up = fused ? &lw.ffn_gate_up : nullptr,
                          .down = &lw.ffn_down};
  run_gated_mlp(w, lp.ffn_dim, lp.ffn_act, io.xb, dim, io.n_tok, hb_.data(), hb2_.data(), io.out, *io.buffers,
                *io.pool);
  if (lp.ffn_post_norm) {
    for (int64_t t = 0; t < io.n_tok; ++t) {
      rms_norm(io.out + t * dim, f32_data(lw.post_ffw_norm), io.out + t * dim, dim, config_.norm_eps);
    }
  }
  return ok_status();
}

}  // namespace sniper
