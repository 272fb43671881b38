// SPDX-License-Identifier: MIT
// The shared decoder-only transformer forward pass used by every registered architecture
// (llama, qwen2, qwen3, qwen3moe; Mixtral is llama with experts). Architecture differences are
// switches in ModelConfig (rope style, q/k norm, qkv bias, MoE). A forward call processes a
// chunk of tokens at consecutive positions through matrix-matrix kernels, writes their K/V to
// the cache and returns logits for the last token or for every token.
// Thread-compatible: one forward at a time per Transformer; it uses the ThreadPool inside.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/result.h"
#include "base/thread_pool.h"
#include "kernels/matmul.h"
#include "kv/kv_cache.h"
#include "model/config.h"
#include "model/model_weights.h"
#include "weights/expert_source.h"
#include "weights/layer_streamer.h"
#include "weights/streamed_rows.h"

namespace sniper {

// Cache-aware routing (opt-in; changes outputs): each token keeps its true top-`keep` experts
// and fills the remaining slots with experts already in memory from its top-`window`, falling
// back to the true ranking where none is cached. keep == 0 disables it.
struct RoutingBias {
  int64_t keep = 0;
  int64_t window = 0;
};

struct RoutingStats {
  uint64_t selections = 0;  // (token, slot) choices made
  uint64_t changed = 0;     // of those, experts that differ from the true top-k
};

// Where tensors that are not resident come from (all optional; null = resident in ModelWeights).
struct WeightSources {
  ExpertSource* experts = nullptr;       // routed experts (null: slices of the resident tensors)
  LayerStreamer* layers = nullptr;       // per-layer tensors whose data is null in ModelWeights
  StreamedRows* embeddings = nullptr;    // token_embd rows when token_embd is not resident
};

class Transformer {
 public:
  // max_batch: the most tokens one forward() call takes (prefill chunk size). `sources` supply
  // the tensors ModelWeights holds no bytes for.
  Transformer(const ModelConfig& config, const ModelWeights& weights, int64_t max_batch, int64_t n_ctx,
              const WeightSources& sources = {});

  // Runs tokens[0, n_tok) at positions pos0.. through the model. Requires 1 <= n_tok <= max_batch,
  // pos0 + n_tok <= kv.n_ctx() and every token < vocab_size (CHECKed: callers validate input).
  // logits: [n_tok, vocab] when all_logits, else [1, vocab] for the last token.
  // Errors come only from weight sources (a failed or short read); the KV rows of this chunk are
  // then unusable and the caller must not count the chunk as evaluated.
  [[nodiscard]] Status forward(const int32_t* tokens, int64_t n_tok, int64_t pos0, KvCache& kv, bool all_logits, float* logits,
               ThreadPool& pool);

  const ModelConfig& config() const { return config_; }
  // Validated by the caller: 1 <= keep <= n_experts_active <= window <= n_experts, or keep 0.
  void set_routing_bias(const RoutingBias& bias) { routing_bias_ = bias; }
  const RoutingStats& routing_stats() const { return routing_stats_; }
  int64_t max_batch() const { return max_batch_; }
  // Bytes of activation scratch this instance holds.
  size_t scratch_bytes() const;
  // Upper bound of scratch_bytes() for a shape, before construction (memory planning), with
  // logits for every token of a full batch.
  static size_t estimate_scratch_bytes(const ModelConfig& config, int64_t max_batch, int64_t n_ctx, int n_threads);

 private:
  void attention_block(int64_t layer_idx, const LayerWeights& lw, int64_t n_tok, int64_t pos0, KvCache& kv,
                       ThreadPool& pool);
  // Layer l's weights with streamed tensors filled in from the LayerStreamer.
  Result<const LayerWeights*> layer_weights(int64_t layer_idx);
  void dense_ffn(const LayerWeights& lw, int64_t n_tok, ThreadPool& pool);
  [[nodiscard]] Status moe_ffn(int64_t layer_idx, const LayerWeights& lw, int64_t n_tok, ThreadPool& pool);
  // route_tok_/route_slot_: the routed (token, slot) pairs of sel_'s first n_tok tokens,
  // grouped by expert (token-major within one), each expert's from route_start_[e].
  void route_by_expert(int64_t n_tok);
  // Runs `experts` (views valid for the call) over the tokens routed to them (route_by_expert),
  // in groups whose rows fit the [B] buffers, each group in five parallel passes (quantize, gate
  // and up of every expert together, SiLU, quantize, every down); outputs to exp_out_.
  void run_experts(std::span<const ReadyExpert> experts, ThreadPool& pool);
  // One token, all of its experts together: gate and up of every expert in one parallel pass,
  // down of every expert in a second, the token's row quantized once. Results are bitwise those
  // of run_experts() per expert.
  void run_experts_one_token(std::span<const ReadyExpert> experts, ThreadPool& pool);
  void predict_next_experts(int64_t layer_idx, int64_t n_tok, ThreadPool& pool);
  void predict_layer_experts(int64_t target_layer, int64_t n_tok, ThreadPool& pool);
  // Replaces sel[0, k) (the true top-k of probs) with the cache-aware choice.
  void bias_routing(int64_t layer_idx, const float* probs, int32_t* sel);

  const ModelConfig& config_;
  const ModelWeights& weights_;
  int64_t max_batch_;
  int64_t n_ctx_;
  std::unique_ptr<ResidentExperts> resident_experts_;  // when no source was given
  ExpertSource* experts_ = nullptr;
  WeightSources sources_;
  RoutingBias routing_bias_;
  RoutingStats routing_stats_;
  std::vector<int32_t> window_;  // [window] candidates for cache-aware routing
  LayerWeights streamed_layer_;  // layer_weights() result when tensors stream
  std::vector<int32_t> union_;  // experts the chunk routes to, ascending
  std::vector<uint8_t> used_;   // [n_experts] membership scratch
  ActBuffer act_;               // single-use activations (matmul())
  ActBuffer act_bufs_[3];       // activations reused across weights (ActCache)
  std::vector<float> x_;        // [B, dim] residual stream
  std::vector<float> xb_;       // [B, dim] normed input of a block
  std::vector<float> q_;        // [B, q_dim]
  std::vector<float> k_;        // [B, kv_dim]
  std::vector<float> v_;        // [B, kv_dim]
  std::vector<float> att_;      // [B, q_dim] attention output
  std::vector<float> hb_;       // [B, ff] gate / activation
  std::vector<float> hb2_;      // [B, ff] up
  std::vector<float> ffn_out_;  // [B, dim]
  std::vector<float> rope_cos_; // [B, rope_dims/2]
  std::vector<float> rope_sin_; // [B, rope_dims/2]
  std::vector<float> router_;   // [B, n_experts]
  std::vector<int32_t> sel_;    // [B, k] selected experts
  std::vector<float> sel_w_;    // [B, k] their weights
  std::vector<float> exp_out_;  // [B, k, dim] per-slot expert outputs, summed in slot order
  std::vector<float> gathered_; // [B, dim]
  std::vector<float> down_;     // [B, dim]
  std::vector<ReadyExpert> group_;  // a layer's experts run together (run_experts_one_token, run_experts)
  std::vector<int32_t> route_start_;  // [n_experts + 1] route_by_expert: each expert's first row
  std::vector<int32_t> route_next_;   // [n_experts] its fill cursor
  std::vector<int32_t> route_tok_;    // [B, k] the routed (token, slot) pairs, grouped by expert
  std::vector<int32_t> route_slot_;   // [B, k]
  std::vector<float> group_hb_;     // [k, ff] gate then activation, per expert
  std::vector<float> group_hb2_;    // [k, ff] up
  std::vector<float> group_down_;   // [k, dim]
  std::vector<uint8_t> att_scratch_;  // per thread attention scratch
  size_t att_scratch_stride_ = 0;
};

}  // namespace sniper
