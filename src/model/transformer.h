// SPDX-License-Identifier: MIT
// The decoder-only forward pass used by every registered architecture: embedding, then the
// layer step of model/layer_stack.h for each layer of the plan (ModelConfig::layers; see
// model/blocks/block.h for the block interface and docs/model-layer.md for how to add a block or
// an architecture), then the output norm and head. A forward call processes a chunk of tokens at consecutive
// positions through matrix-matrix kernels, updates the sequence state (KV rows, recurrent
// state) and returns logits for the last token or for every token.
// Thread-compatible: one forward at a time per Transformer; it uses the ThreadPool inside.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/thread_pool.h"
#include "kernels/matmul.h"
#include "kv/sequence_state.h"
#include "model/blocks/block.h"
#include "model/config.h"
#include "model/layer_stack.h"
#include "model/model_weights.h"
#include "model/tensor_table.h"

namespace sniper {

class Transformer {
 public:
  // max_batch: the most tokens one forward() call takes (prefill chunk size). `sources` supply
  // the tensors ModelWeights holds no bytes for.
  Transformer(const ModelConfig& config, const ModelWeights& weights, int64_t max_batch, int64_t n_ctx,
              const WeightSources& sources = {});

  // Runs tokens[0, n_tok) at positions pos0.. through the model. Requires 1 <= n_tok <= max_batch,
  // pos0 + n_tok <= state.n_ctx(), a state made from layer_state_specs(config) and every token
  // < vocab_size (CHECKed: callers validate input).
  // logits: [n_tok, vocab] when all_logits, else [1, vocab] for the last token. hidden, when
  // non-null: [n_tok, dim] every token's final normed state (rms_norm(x) * output_norm, the
  // rows the head multiplies), which an MTP draft head reads (model/mtp_head.h).
  // Errors come only from weight sources (a failed or short read); the state of this chunk is
  // then unusable and the caller must not count the chunk as evaluated (and must reset a
  // recurrent state).
  // `in` carries media input (model/blocks/block.h ChunkInput: embeddings in place of the token
  // lookup, M-RoPE positions, attention both ways inside the chunk); null: plain tokens. A
  // non-causal chunk runs in one part: n_tok <= max_chunk() (CHECKed: callers validate).
  [[nodiscard]] Status forward(const int32_t* tokens, int64_t n_tok, int64_t pos0, SequenceState& state,
                               bool all_logits, float* logits, ThreadPool& pool, float* hidden = nullptr,
                               const ChunkInput* in = nullptr);
  // The most tokens one chunk that attends both ways may hold (max_batch, or less when a sliding
  // ring is smaller: model/config.h widen_rings_for_chunks).
  int64_t max_chunk() const { return max_chunk_ > 0 ? std::min(max_chunk_, max_batch_) : max_batch_; }

  const ModelConfig& config() const { return config_; }
  // Validated by the caller: 1 <= keep <= n_experts_active <= window <= n_experts, or keep 0.
  // (A no-op for a model without routed experts.)
  void set_routing_bias(const RoutingBias& bias);
  const RoutingStats& routing_stats() const;
  int64_t max_batch() const { return max_batch_; }
  // Bytes of activation scratch this instance holds.
  size_t scratch_bytes() const;
  // The model-level tensors (model/tensor_table.h): embeddings, output norm and head (absent:
  // tied to the embeddings), rope frequency factors (optional).
  static std::span<const ModelTensorSpec> tensor_table();
  // Upper bound of scratch_bytes() for a shape, before construction (memory planning), with a
  // pool of n_threads, plus n_logit_rows rows of logits held beside it (at least 1: a session's
  // last-token row; a caller asking for all_logits of k tokens holds k more).
  static size_t estimate_scratch_bytes(const ModelConfig& config, int64_t max_batch, int64_t n_ctx, int n_threads,
                                       int64_t n_logit_rows = 1);

 private:
  // forward() for a chunk whose keys fit every sliding layer's ring (see sliding_ring_slots).
  [[nodiscard]] Status forward_chunk(const int32_t* tokens, int64_t n_tok, int64_t pos0, SequenceState& state,
                                     bool all_logits, float* logits, ThreadPool& pool, float* hidden,
                                     const ChunkInput& in);
  // Layer l's weights with streamed tensors filled in from the LayerStreamer.
  Result<const LayerWeights*> layer_weights(int64_t layer_idx);

  const ModelConfig& config_;
  const ModelWeights& weights_;
  int64_t max_batch_;
  WeightSources sources_;
  LayerStack stack_;
  int64_t max_chunk_ = 0;  // the most tokens forward_chunk() takes (sliding rings), 0 = max_batch
  // Per layer, the tensors a LayerStreamer may hold: where they bind and their names.
  struct StreamedField {
    QTensor LayerWeights::*member;
    std::string name;
  };
  std::vector<std::vector<StreamedField>> streamed_fields_;  // [n_layers] (when sources.layers is set)
  LayerWeights streamed_layer_;                              // layer_weights() result when tensors stream
  BlockBuffers buffers_;
  std::vector<float> x_;            // [B, dim] residual stream
  std::vector<float> xb_;           // [B, dim] normed input of a block
  std::vector<float> out_;          // [B, dim] a block's output
  std::vector<float> part_logits_;  // [vocab] logits of a part forward() does not return (counted in scratch_bytes)
};

}  // namespace sniper
