// SPDX-License-Identifier: MIT
// LayerStack: the layers of a forward pass and the one layer step every caller runs (the
// Transformer's main stack, an MTP draft head's block). It owns one block per kind in use
// (model/blocks/block.h: one AttentionBlock serves every attention layer, one MoeFfn every MoE
// layer, ...), the per-layer embedding inputs when the model has them, and runs layer l as
//   xb = rms_norm(x) * attn_norm;  x += Mixer(xb)      (the mixer reads and updates the state)
//   xb = rms_norm(x) * ffn_norm;   x += Ffn(xb)
//   x += PerLayerEmbedding(x)                           (per_layer_dim > 0)
//   x *= layer_output_scale                             (when the layer has one)
// then lets the FFN hint later layers' weights to its source (Ffn::after_layer).
// Thread-compatible: one forward at a time; it uses the ThreadPool inside.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/result.h"
#include "base/thread_pool.h"
#include "kv/sequence_state.h"
#include "model/batch_rows.h"
#include "model/blocks/block.h"
#include "model/blocks/moe_ffn.h"
#include "model/blocks/per_layer_embedding.h"
#include "model/blocks/remote_experts.h"
#include "model/config.h"
#include "model/model_weights.h"
#include "model/tensor_table.h"
#include "weights/expert_source.h"
#include "weights/layer_streamer.h"
#include "weights/streamed_rows.h"

namespace sniper {

// Where tensors that are not resident come from (all optional; null = resident in ModelWeights).
struct WeightSources {
  ExpertSource* experts = nullptr;               // routed experts (null: slices of the resident tensors)
  LayerStreamer* layers = nullptr;               // per-layer tensors whose data is null in ModelWeights
  StreamedRows* embeddings = nullptr;            // token_embd rows when token_embd is not resident
  StreamedRows* per_layer_embeddings = nullptr;  // per_layer_token_embd rows when it is not resident
  RemoteExperts* remote_experts = nullptr;       // expert parallel: other ranks' routed experts (null: none)
};

// One batch's buffers for run_layer (the caller's; blocks see them as a BlockIo).
struct LayerIo {
  int64_t n_tok = 0;              // rows of the batch, 1 <= n_tok <= max_batch
  std::span<const SeqRows> seqs;  // its sequences (model/batch_rows.h), covering rows [0, n_tok)
  bool non_causal = false;        // ChunkInput::non_causal (one sequence): its rows attend both ways
  float* x = nullptr;             // [n_tok, dim] the residual, updated in place
  float* xb = nullptr;            // [n_tok, dim] scratch: a block's normed input
  float* out = nullptr;           // [n_tok, dim] scratch: a block's output
  BlockBuffers* buffers = nullptr;
  ThreadPool* pool = nullptr;
};

class LayerStack {
 public:
  // The blocks of config's layer plan for chunks of up to max_batch tokens. config and weights
  // must outlive the stack; `sources` supply what ModelWeights holds no bytes for.
  LayerStack(const ModelConfig& config, const ModelWeights& weights, int64_t max_batch,
             const WeightSources& sources = {});
  ~LayerStack();

  // Once per forward, before layer 0: the mixers' per-batch state (rope angles of every row's
  // position, from `in`'s rope positions when given: a batch of one sequence) and, for a model
  // with per-layer inputs, those of tokens[0, n_tok) from the embeddings x0 [n_tok, dim].
  // Errors: a failed read of streamed per-layer embedding rows.
  [[nodiscard]] Status begin_batch(const int32_t* tokens, const float* x0, int64_t n_tok, std::span<const SeqRows> seqs,
                                   const ChunkInput& in, BlockBuffers& buffers, ThreadPool& pool);
  // Layer layer_idx with its weights lw over the batch of io (each sequence's mixer state is its
  // SeqRows::state). Errors only from weight sources.
  [[nodiscard]] Status run_layer(int64_t layer_idx, const LayerWeights& lw, const LayerIo& io);

  // Validated by the caller: 1 <= keep <= n_experts_active <= window <= n_experts, or keep 0.
  // (A no-op for a model without routed experts.)
  void set_routing_bias(const RoutingBias& bias);
  const RoutingStats& routing_stats() const;
  // The most tokens one chunk may hold so that every sliding layer's ring still finds the keys
  // of the chunk's first token (model/config.h sliding_ring_slots); 0 = no limit.
  int64_t max_chunk() const { return max_chunk_; }
  // Bytes of scratch the blocks hold.
  size_t scratch_bytes() const;
  // An upper bound of scratch_bytes() after any forward of up to max_batch tokens over a context
  // of n_ctx with a pool of n_threads: the blocks' scratch tables (and their per-thread bounds)
  // for the block kinds config's plan uses.
  static size_t scratch_bound(const ModelConfig& config, int64_t max_batch, int64_t n_ctx, int n_threads);

  // The layer step's own tensors (model/tensor_table.h): the mixer's and the FFN's input norms
  // and the optional output scale.
  static std::span<const LayerTensorSpec> tensor_table();

 private:
  const ModelConfig& config_;
  // One block per kind in use, shared by the layers of that kind; mixers_/ffns_ index them per layer.
  std::vector<std::unique_ptr<MixerBlock>> mixer_blocks_;
  std::vector<std::unique_ptr<FfnBlock>> ffn_blocks_;
  std::vector<MixerBlock*> mixers_;  // [n_layers]
  std::vector<FfnBlock*> ffns_;      // [n_layers]
  MoeFfn* moe_ = nullptr;            // the routed-experts block, if any layer has one
  RoutingStats no_routing_stats_;
  std::unique_ptr<PerLayerEmbedding> per_layer_;  // per-layer inputs (per_layer_dim > 0)
  int64_t max_chunk_ = 0;
};

}  // namespace sniper
