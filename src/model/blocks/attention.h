// SPDX-License-Identifier: MIT
// AttentionBlock (MixerKind::kAttention): softmax attention with the layer's own head shape
// (LayerPlan n_heads / n_kv_heads / head_dim):
//   q,k,v = W{q,k,v} xb (+ bias); [per-head RMS norm of q and k]; rope(q, k);
//   store k,v at the chunk's positions in the layer's KV slot; att = softmax(q.K / sqrt(hd)) V;
//   out = Wo att, or with an output gate (LayerPlan::attn_output_gate, Qwen3.5: W_q's rows per
//   head are [q | gate]) out = Wo (att * sigmoid(gate)).
// Its sequence state is the layer's KV rows (kKv, or the rows of the layer it shares with).
// Thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "model/blocks/block.h"

namespace sniper {

class AttentionBlock final : public MixerBlock {
 public:
  // rope_freqs: the model's optional frequency factors (data null when absent).
  AttentionBlock(const ModelConfig& config, const QTensor& rope_freqs, int64_t max_batch);

  void begin_chunk(int64_t pos0, int64_t n_tok, const ChunkInput& in) override;
  [[nodiscard]] Status forward(int64_t layer_idx, const LayerWeights& lw, SequenceState& state,
                               const BlockIo& io) override;
  size_t scratch_bytes() const override;

 private:
  const ModelConfig& config_;
  QTensor rope_freqs_;
  std::vector<float> q_;              // [B, q_dim]
  std::vector<float> qg_;             // [B, 2 * q_dim] W_q's output when gated: per head [q | gate]
  std::vector<float> gate_;           // [B, q_dim] the gate's logits
  std::vector<float> k_;              // [B, kv_dim]
  std::vector<float> v_;              // [B, kv_dim]
  std::vector<float> att_;            // [B, q_dim] attention output
  std::vector<float> rope_cos_;       // [B, rope_dims/2]
  std::vector<float> rope_sin_;       // [B, rope_dims/2]
  std::vector<uint8_t> att_scratch_;  // per thread attention scratch
};

}  // namespace sniper
