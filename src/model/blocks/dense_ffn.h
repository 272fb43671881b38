// SPDX-License-Identifier: MIT
// DenseFfn (FfnKind::kDense): a gated MLP, parameterised per layer by its LayerPlan:
//   out = W_down (act(W_gate xb) * (W_up xb))      (ffn_dim wide; act: SiLU or GELU, ffn_act)
//   ffn_post_norm: out = rms(out) * post_ffw_norm
// gate and up are two tensors (ffn_gate, ffn_up) or the two halves of one (ffn_gate_up: per
// output row, the ff gate rows then the ff up rows), whichever the layer's weights hold.
// run_gated_mlp() is the MLP alone, which MoeFfn also runs for its shared expert.
// Keeps no sequence state. Thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/blocks/block.h"
#include "model/blocks/scratch_table.h"
#include "model/tensor_table.h"

namespace sniper {

// The tensors of one gated MLP: gate and up, or gate_up (fused, [dim -> 2 * ff]), and down.
struct GatedMlpWeights {
  const QTensor* gate = nullptr;     // [dim -> ff] (null when fused)
  const QTensor* up = nullptr;       // [dim -> ff] (null when fused)
  const QTensor* gate_up = nullptr;  // [dim -> 2 * ff] (null when split)
  const QTensor* down = nullptr;     // [ff -> dim]
};

// out[n_tok, dim] = down(act(gate x) * (up x)) for x [n_tok, dim]. hb: [n_tok, ff] scratch;
// hb2: [n_tok, ff] scratch, [n_tok, 2 * ff] when fused. gate and up run in one parallel pass
// (the same bits as two matmul_q calls), the activation row by row (ggml's swiglu / geglu split
// each row into SIMD blocks and a scalar tail).
void run_gated_mlp(const GatedMlpWeights& w, int64_t ff, Activation act, const float* x, int64_t dim, int64_t n_tok,
                   float* hb, float* hb2, float* out, BlockBuffers& buffers, ThreadPool& pool);

// act(gate) * up for one row of n (out may alias gate).
void gated_activation(Activation act, const float* gate, const float* up, float* out, int64_t n);

class DenseFfn final : public FfnBlock {
 public:
  DenseFfn(const ModelConfig& config, int64_t max_batch);

  [[nodiscard]] Status forward(int64_t layer_idx, const LayerWeights& lw, const BlockIo& io) override;
  void after_layer(int64_t, const BlockIo&) override {}
  size_t scratch_bytes() const override { return held_scratch_bytes(*this, scratch_table()); }
  // scratch_bytes() for chunks of up to max_batch tokens (its scratch table).
  static size_t scratch_bound(const ModelConfig& config, int64_t max_batch);

  // The dense MLP's tensors and the FFN's post norm (model/tensor_table.h), for kDense layers
  // and for kMoe layers, whose ungated shared expert and post norm are these.
  static std::span<const LayerTensorSpec> tensor_table();

 private:
  static std::span<const ScratchEntry<DenseFfn>> scratch_table();

  const ModelConfig& config_;
  std::vector<float> hb_;   // [B, max ffn_dim] gate / activation
  std::vector<float> hb2_;  // [B, max ffn_dim] up ([B, 2 * max ffn_dim] when some layer's gate_up is fused)
};

}  // namespace sniper
