// SPDX-License-Identifier: MIT
// DeltaNetBlock (MixerKind::kDeltaNet): gated delta-net linear attention (Qwen3.5, Qwen3-Next),
// nk query/key heads and nv value heads of width d (ModelConfig::delta_net):
//   qkv = W_qkv xb (rows q nk*d | k nk*d | v nv*d); z = W_gate xb (nv*d);
//   beta = sigmoid(W_beta xb); g = softplus(W_alpha xb + dt_bias) * ssm_a      (per value head)
//   c_t = silu(causal depthwise conv over time of qkv, conv_kernel taps, oldest first);
//   q, k heads L2-normalised (x / max(|x|, eps));
//   per value head j (key head j % nk, or j / (nv/nk) when grouped), state S [d x d]:
//     S = exp(g) S; u = (v - S^T k) * beta; S += k u^T; o = S^T q / sqrt(d);
//   o = rms(o) * ssm_norm * silu(z) per head; out = W_out o.
// Tokens of a chunk run one after another through the recurrence (llama.cpp's fused CPU op, not
// the chunked form), so a prompt gives the same state as the same tokens fed one by one.
// The arithmetic is the kernels' (kernels/ssm_conv.h, activations.h, delta_net.h), each the bits
// of ggml's CPU op. Sequence state (kRecurrent), f32: the conv state [conv_kernel - 1][C] (the
// last qkv rows, oldest first; kernels/ssm_conv.h) then S per value head, stored transposed
// ([nv][d][d], kernels/delta_net.h).
// Thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/blocks/block.h"
#include "model/blocks/scratch_table.h"
#include "model/tensor_table.h"

namespace sniper {

class DeltaNetBlock final : public MixerBlock {
 public:
  DeltaNetBlock(const ModelConfig& config, int64_t max_batch);

  void begin_chunk(int64_t, int64_t, const ChunkInput&) override {}
  [[nodiscard]] Status forward(int64_t layer_idx, const LayerWeights& lw, SequenceState& state,
                               const BlockIo& io) override;
  size_t scratch_bytes() const override;

  // The tensors of a delta-net layer (model/tensor_table.h).
  static std::span<const LayerTensorSpec> tensor_table();
  // scratch_bytes() for chunks of up to max_batch tokens (its scratch table).
  static size_t scratch_bound(const ModelConfig& config, int64_t max_batch);

 private:
  static std::span<const ScratchEntry<DeltaNetBlock>> scratch_table();

  const ModelConfig& config_;
  DeltaNetConfig d_;
  std::vector<float> qkv_;   // [B, C] projected q | k | v
  std::vector<float> conv_;  // [B, C] after conv and silu; q and k heads then L2-normalised
  std::vector<float> z_;     // [B, nv*d] output gate
  std::vector<float> beta_;  // [B, nv] beta logits, then sigmoid
  std::vector<float> g_;     // [B, nv] alpha logits, then the log-decay g
  std::vector<float> ba_;    // [B, 2*nv] fused beta/alpha logits (fused_ba)
  std::vector<float> o_;     // [B, nv*d] per-head outputs, then gated and normed
};

}  // namespace sniper
