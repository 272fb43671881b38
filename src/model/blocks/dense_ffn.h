// SPDX-License-Identifier: MIT
// DenseFfn (FfnKind::kDense): SwiGLU, out = W_down (silu(W_gate xb) * (W_up xb)), hidden_dim
// wide. Keeps no sequence state. Thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "model/blocks/block.h"

namespace sniper {

class DenseFfn final : public FfnBlock {
 public:
  DenseFfn(const ModelConfig& config, int64_t max_batch);

  [[nodiscard]] Status forward(int64_t layer_idx, const LayerWeights& lw, const BlockIo& io) override;
  void after_layer(int64_t, const BlockIo&) override {}
  size_t scratch_bytes() const override { return (hb_.size() + hb2_.size()) * sizeof(float); }

 private:
  const ModelConfig& config_;
  std::vector<float> hb_;   // [B, hidden_dim] gate / activation
  std::vector<float> hb2_;  // [B, hidden_dim] up
};

}  // namespace sniper
