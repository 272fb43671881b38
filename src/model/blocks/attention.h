// SPDX-License-Identifier: MIT
// AttentionBlock (MixerKind::kAttention): softmax attention, parameterised per layer by its
// LayerPlan (head shape and the switches below); one instance serves every attention layer.
//   q, k, v = W{q,k,v} xb                         (one parallel pass; a shared-KV layer computes q only;
//                                                  with v_optional and no attn_v, v = k's projection)
//   attn_output_gate: W_q's rows per head are [q | gate]
//   qkv_bias: + attn_{q,k,v}.bias
//   qk_norm: q, k = rms(per head) * attn_{q,k}_norm;  v_norm: v = rms(per head) (no weight)
//   rope(q, k): the layer's rope_dims and rope_base (angles computed once per chunk for each
//               distinct setting of the layers), theta divided by rope_freqs where rope_freqs
//               (M-RoPE models: per-token (t, h, w, e) positions from ChunkInput::rope_pos, e.g. an image)
//   store k, v at the chunk's positions in the layer's KV slot (own-KV layers; a sliding layer's
//   slot is a ring of sliding_ring_slots positions)
//   att = softmax(attn_scale * q.K) V: full layers through kernels/attention.h (the reference's
//         order, any cache layout); sliding layers over the last sliding_window positions through
//         kernels/window_attention.h; a non-causal chunk (BlockIo::non_causal, e.g. an image) also
//         sees its own later tokens
//   out = Wo (att [* sigmoid(gate)]);  attn_post_norm: out = rms(out) * post_attention_norm
// Its sequence state is the layer's KV rows (kKv, or the rows of the layer it shares with).
// Thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/blocks/block.h"
#include "model/blocks/scratch_table.h"
#include "model/tensor_table.h"

namespace sniper {

class AttentionBlock final : public MixerBlock {
 public:
  // rope_freqs: the model's optional frequency factors (data null when absent).
  AttentionBlock(const ModelConfig& config, const QTensor& rope_freqs, int64_t max_batch);

  void begin_chunk(int64_t pos0, int64_t n_tok, const ChunkInput& in) override;
  [[nodiscard]] Status forward(int64_t layer_idx, const LayerWeights& lw, SequenceState& state,
                               const BlockIo& io) override;
  size_t scratch_bytes() const override;

  // The tensors of an attention layer (model/tensor_table.h).
  static std::span<const LayerTensorSpec> tensor_table();
  // An upper bound of scratch_bytes() after any forward of up to max_batch tokens over a context
  // of n_ctx with a pool of n_threads: the scratch table and the widest per-thread attention
  // scratch of its full and sliding layers.
  static size_t scratch_bound(const ModelConfig& config, int64_t max_batch, int64_t n_ctx, int n_threads);

  // A rope setting some attention layer uses (its angles are computed once per chunk).
  struct Rope {
    int64_t dims = 0;
    float base = 0.0f;
    bool freqs = false;  // divided by rope_freqs (when the model has them)
  };

 private:
  static std::span<const ScratchEntry<AttentionBlock>> scratch_table();
  // non_causal: every token of the chunk also sees the chunk's later tokens (BlockIo::non_causal).
  void attend_full(const LayerPlan& lp, const KvCache& kv, int64_t index, int64_t pos0, int64_t n_tok, bool non_causal,
                   ThreadPool& pool);
  void attend_window(const LayerPlan& lp, const KvCache& kv, int64_t index, int64_t pos0, int64_t n_tok,
                     bool non_causal, ThreadPool& pool);

  const ModelConfig& config_;
  QTensor rope_freqs_;
  bool has_rope_freqs_ = false;
  std::vector<Rope> ropes_;            // the distinct settings, in order of first use
  std::vector<int32_t> layer_rope_;    // [n_layers] each attention layer's index into ropes_
  std::vector<float> q_;               // [B, q_dim]
  std::vector<float> qg_;              // [B, 2 * q_dim] W_q's output when gated: per head [q | gate]
  std::vector<float> gate_;            // [B, q_dim] the gate's logits
  std::vector<float> k_;               // [B, kv_dim]
  std::vector<float> v_;               // [B, kv_dim]
  std::vector<float> att_;             // [B, q_dim] attention output
  std::vector<float> rope_cos_;        // [ropes_, B, dims/2] per setting
  std::vector<float> rope_sin_;        // [ropes_, B, dims/2]
  std::vector<size_t> rope_offset_;    // [ropes_] each setting's first float in rope_cos_ / rope_sin_
  std::vector<uint8_t> att_scratch_;   // per thread attention scratch (full layers)
  std::vector<float> window_scratch_;  // per thread window attention scratch (sliding layers)
};

}  // namespace sniper
