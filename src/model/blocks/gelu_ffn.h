// SPDX-License-Identifier: MIT
// GeluFfn (FfnKind::kGeluDense), gemma4's dense MLP:
//   out = rms(W_down (gelu(W_gate xb) * (W_up xb))) * post_ffw_norm
// gelu is ggml's f16-table form (kernels/activations.h geglu); the width is the layer's
// ffn_dim. gelu_mlp() is the MLP alone (gemma4's MoE layers run it beside the experts).
// Keeps no sequence state. Thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "model/blocks/block.h"

namespace sniper {

class GeluFfn final : public FfnBlock {
 public:
  GeluFfn(const ModelConfig& config, int64_t max_batch);

  [[nodiscard]] Status forward(int64_t layer_idx, const LayerWeights& lw, const BlockIo& io) override;
  void after_layer(int64_t, const BlockIo&) override {}
  size_t scratch_bytes() const override { return (hb_.size() + hb2_.size()) * sizeof(float); }

  // out[n_tok, dim] = W_down (gelu(W_gate xb) * (W_up xb)), ff wide (no norm).
  void gelu_mlp(const LayerWeights& lw, int64_t ff, const BlockIo& io, float* out);

 private:
  const ModelConfig& config_;
  std::vector<float> hb_;   // [B, max ffn_dim] gate / activation
  std::vector<float> hb2_;  // [B, max ffn_dim] up
};

}  // namespace sniper
