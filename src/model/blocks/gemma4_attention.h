// SPDX-License-Identifier: MIT
// Gemma4Attention (MixerKind::kGemma4Attention), llama.cpp's gemma4 attention per layer plan:
//   q = rms(Wq xb per head) * q_norm;  rope(q)   (NeoX, the layer's rope_dims and rope_base;
//                                                 full layers divide theta by rope_freqs)
//   own-KV layers: k = rms(Wk xb per head) * k_norm, rope(k); v = rms(Wv xb per head) (no
//                  weight; V = the raw K projection when the layer has no attn_v); stored in the
//                  layer's KV slot. Shared-KV layers compute no K/V and read their source's slot.
//   att = softmax(q.K) V with scale 1.0; sliding layers see only the keys p_k > p_q - window;
//   out = rms(Wo att) * post_attention_norm.
// Full layers attend through kernels/attention.h (the reference's order). Sliding layers keep a
// ring (ModelConfig sliding_ring_slots) and attend through the window's slots with the
// reference's f16 roundings (Q and the probabilities); see ring_attend below.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "model/blocks/block.h"

namespace sniper {

class Gemma4Attention final : public MixerBlock {
 public:
  // rope_freqs: the model's frequency factors for full layers (data null when absent).
  Gemma4Attention(const ModelConfig& config, const QTensor& rope_freqs, int64_t max_batch);

  void begin_chunk(int64_t, int64_t, const ChunkInput&) override {}
  [[nodiscard]] Status forward(int64_t layer_idx, const LayerWeights& lw, SequenceState& state,
                               const BlockIo& io) override;
  size_t scratch_bytes() const override;

 private:
  // non_causal: every token of the chunk also sees the chunk's later tokens (a media chunk).
  void attend_window(const LayerPlan& lp, const KvCache& kv, int64_t index, int64_t pos0, int64_t n_tok,
                     bool non_causal, ThreadPool& pool);
  void attend_full(const LayerPlan& lp, const KvCache& kv, int64_t index, int64_t pos0, int64_t n_tok, bool non_causal,
                   ThreadPool& pool);

  const ModelConfig& config_;
  QTensor rope_freqs_;
  std::vector<float> q_;         // [B, q_dim]
  std::vector<float> k_;         // [B, kv_dim]
  std::vector<float> v_;         // [B, kv_dim]
  std::vector<float> att_;       // [B, q_dim]
  std::vector<float> rope_cos_;  // [B, max rope_dims / 2]
  std::vector<float> rope_sin_;
  std::vector<float> ring_scratch_;   // per thread: the window's K^T and V tiles, scores, queries, outputs
  std::vector<uint8_t> att_scratch_;  // per thread attention scratch (full layers)
};

}  // namespace sniper
