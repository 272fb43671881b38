// SPDX-License-Identifier: MIT
// MoeFfn (FfnKind::kMoe): routed experts, parameterised per layer by its LayerPlan; one instance
// serves every MoE layer. With x the residual entering the FFN and xb = rms(x) * ffn_norm:
//   r      = router input: xb (RouterInput::kFfnInput), or rms(x) * (1 / sqrt(dim)) *
//            ffn_gate_inp.scale (kScaledResidual)
//   p      = softmax(W_router r); the top-k experts (cache-aware routing may swap some, below);
//            their weights renormalised to sum 1 (moe_norm_topk; the sum in double, as ggml_sum_rows)
//   h      = the experts' input: xb, or rms(x) * pre_ffw_norm_2 (expert_input_norm)
//   e_out  = W_down[e] (act(W_gate[e] h) * (W_up[e] h)) [* ffn_down_exps.scale[e] (expert_scale)] * w_e
//            (act: ffn_act; gate and up split, or the halves of ffn_gate_up_exps[e]); summed in slot order
//   routed_post_norm: sum = rms(sum) * post_ffw_norm_2
//   shared expert (SharedExpert): kGated: out = sum + sigmoid(ffn_gate_inp_shexp . xb) * MLP_shexp(xb);
//            kUngated: out = sum + MLP(xb) over ffn_{gate,up,down} (shared_post_norm: rms(MLP) * post_ffw_norm_1)
//   ffn_post_norm: out = rms(out) * post_ffw_norm
// Experts come from an ExpertSource (resident slices, or streamed through the expert cache);
// the block also guesses later layers' experts (their routers applied to this layer's residual)
// for the source to prefetch. The shared expert stays resident and computes while the routed
// experts' reads land. Keeps no sequence state. Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/blocks/block.h"
#include "model/blocks/remote_experts.h"
#include "model/blocks/scratch_table.h"
#include "model/tensor_table.h"
#include "weights/expert_source.h"

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
  // Per layer and forward, summed: the distinct experts the rows chose (each read once for all
  // of them), and the distinct experts of each sequence summed over the sequences (what passes of
  // one sequence each would read). Equal for one sequence; their ratio is the saving a batched
  // pass gets from experts shared across users.
  uint64_t experts_read = 0;
  uint64_t experts_per_sequence = 0;
};

class MoeFfn final : public FfnBlock {
 public:
  // experts: the routed experts' source, or null for slices of the resident ffn_*_exps tensors
  // (CHECKed to be resident). weights must outlive the block.
  MoeFfn(const ModelConfig& config, const ModelWeights& weights, int64_t max_batch, ExpertSource* experts);

  [[nodiscard]] Status forward(int64_t layer_idx, const LayerWeights& lw, const BlockIo& io) override;
  // Guesses the next layers' experts from the residual leaving this layer (when the source
  // wants prefetches).
  void after_layer(int64_t layer_idx, const BlockIo& io) override;
  size_t scratch_bytes() const override;

  // The tensors of an MoE layer (model/tensor_table.h); its ungated shared expert and its post
  // norm read the dense MLP's (DenseFfn::tensor_table). Experts are three 3-D ffn_*_exps tensors
  // (gate and up fused in ffn_gate_up_exps where LayerPlan::expert_fused_gate_up), or one tensor
  // per expert matrix in a packed file (ModelConfig::packed_experts).
  static std::span<const LayerTensorSpec> tensor_table();
  // scratch_bytes() for chunks of up to max_batch tokens (its scratch table).
  static size_t scratch_bound(const ModelConfig& config, int64_t max_batch);

  // Validated by the caller: 1 <= keep <= n_experts_active <= window <= n_experts, or keep 0.
  void set_routing_bias(const RoutingBias& bias) { routing_bias_ = bias; }
  const RoutingStats& routing_stats() const { return routing_stats_; }

  // Expert parallel, front end: routed pairs whose expert remote->owner() places on another rank
  // run there (model/blocks/remote_experts.h); null = every expert here. Must outlive the block.
  void set_remote_experts(RemoteExperts* remote) { remote_ = remote; }
  // Expert parallel, serving side: runs the pairs a front end sent for MoE layer layer_idx over its
  // rows h [n_rows, dim] with this process's experts and writes out [pairs.size(), dim], each
  // pair's output row scaled by the expert scale and its weight, bitwise what the front end would
  // have computed for it. lw: the layer's weights. An error names a pair outside the request's
  // bounds (row, slot, expert, a (row, slot) given twice) or a failed expert read.
  [[nodiscard]] Status serve_pairs(int64_t layer_idx, const LayerWeights& lw, const float* h, int64_t n_rows,
                                   std::span<const ExpertPair> pairs, float* out, BlockBuffers& bufs, ThreadPool& pool);

 private:
  static std::span<const ScratchEntry<MoeFfn>> scratch_table();

  [[nodiscard]] Status moe_ffn(int64_t layer_idx, const LayerWeights& lw, int64_t n_tok, ThreadPool& pool);
  // The router's input for layer lp's weights lw from the residual x (and, for kFfnInput, the
  // layer's normed FFN input xb when it is at hand; null: computed from x and lw.ffn_norm): xb
  // itself, or `buf` [n_tok, dim] filled.
  const float* router_input(const LayerPlan& lp, const LayerWeights& lw, const float* x, const float* xb, int64_t n_tok,
                            float* buf) const;
  // Runs union_'s experts over the routed rows. Front end (serving false): routes sel_ itself,
  // guesses the next layers' experts and computes the shared expert while the reads land;
  // serving: route_start_ / route_tok_ / route_slot_ are filled by the caller.
  [[nodiscard]] Status run_routed(int64_t layer_idx, int64_t n_tok, bool serving, ThreadPool& pool);
  // Expert parallel (moe_ffn_remote.cpp): sends each other rank the rows routed to its experts and
  // keeps this rank's experts in union_; collect_remote() writes their answers to exp_out_.
  [[nodiscard]] Status post_remote(int64_t layer_idx, int64_t n_tok);
  [[nodiscard]] Status collect_remote(int64_t n_tok);
  // The shared expert in two steps: computed into sh_out_ (and the gate's logits sh_logit_)
  // while the routed experts' reads land, then added to out_ after them (the same operations as
  // in one step): out_ += [sigmoid(sh_logit)] * sh_out.
  void compute_shared_expert(const LayerPlan& lp, const LayerWeights& lw, int64_t n_tok, ThreadPool& pool);
  void add_shared_expert(const LayerPlan& lp, int64_t n_tok);
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
  // exp_out_ row `at` (token * k + slot) = expert's output row src [dim], scaled by the expert's
  // scale (expert_scale) and then by the slot's routing weight.
  void weigh_expert_row(int32_t expert, const float* src, int64_t at);
  void predict_next_experts(int64_t layer_idx, int64_t n_tok, ThreadPool& pool);
  void predict_layer_experts(int64_t target_layer, int64_t n_tok, ThreadPool& pool);
  // Replaces sel[0, k) (the true top-k of probs) with the cache-aware choice.
  void bias_routing(int64_t layer_idx, const float* probs, int32_t* sel);

  const ModelConfig& config_;
  const ModelWeights& weights_;
  int64_t max_batch_;
  std::unique_ptr<ResidentExperts> resident_experts_;  // when no source was given
  ExpertSource* experts_ = nullptr;
  RoutingBias routing_bias_;
  RoutingStats routing_stats_;
  RemoteExperts* remote_ = nullptr;
  // Per rank, the pairs posted for the current layer and the (token, slot) each answers.
  struct RankPairs {
    std::vector<ExpertPair> pairs;
    std::vector<int32_t> at;  // [pairs] token * k + slot
    std::vector<float> rows;  // [rows, dim] the experts' input rows sent
    std::vector<float> out;   // [pairs, dim] the answer
  };
  std::vector<RankPairs> rank_pairs_;
  std::vector<int32_t> row_of_;  // [B] a token's row in the request being built (-1: none)
  // The current call's buffers (set by forward / after_layer).
  const float* x_ = nullptr;          // [n_tok, dim] residual
  const float* xb_ = nullptr;         // [n_tok, dim] normed input
  const float* h_ = nullptr;          // [n_tok, dim] the experts' input (xb_ or he_)
  float* out_ = nullptr;              // [n_tok, dim]
  const LayerPlan* lp_ = nullptr;     // the current layer's plan
  const LayerWeights* lw_ = nullptr;  // and weights
  BlockBuffers* bufs_ = nullptr;
  std::span<const SeqRows> seqs_;  // the batch's sequences (the router runs per sequence)
  std::vector<int32_t> window_;    // [window] candidates for cache-aware routing
  std::vector<int32_t> union_;     // experts the chunk routes to, ascending
  std::vector<uint8_t> used_;      // [n_experts] membership scratch
  std::vector<uint32_t> seen_;     // [n_experts] the last sequence stamp that chose each expert
  uint32_t stamp_ = 0;
  std::vector<float> he_;             // [B, dim] the experts' input when normed on its own (expert_input_norm)
  std::vector<float> hb_;             // [B, ff] gate / activation
  std::vector<float> hb2_;            // [B, ff] up
  std::vector<float> router_;         // [B, n_experts]
  std::vector<int32_t> sel_;          // [B, k] selected experts
  std::vector<float> sel_w_;          // [B, k] their weights
  std::vector<float> exp_out_;        // [B, k, dim] per-slot expert outputs, summed in slot order
  std::vector<float> gathered_;       // [B, dim]
  std::vector<float> down_;           // [B, dim]
  std::vector<ReadyExpert> group_;    // a layer's experts run together (run_experts_one_token, run_experts)
  std::vector<int32_t> route_start_;  // [n_experts + 1] route_by_expert: each expert's first row
  std::vector<int32_t> route_next_;   // [n_experts] its fill cursor
  std::vector<int32_t> route_tok_;    // [B, k] the routed (token, slot) pairs, grouped by expert
  std::vector<int32_t> route_slot_;   // [B, k]
  std::vector<float> group_hb_;       // [k, ff] gate then activation, per expert
  std::vector<float> group_hb2_;      // [k, ff] up
  std::vector<float> group_down_;     // [k, dim]
  std::vector<float> sh_hb_;          // [B, shared ff] shared expert gate then activation
  std::vector<float> sh_hb2_;         // [B, shared ff] shared expert up ([B, 2 * shared ff] when fused)
  std::vector<float> sh_out_;         // [B, dim] shared expert output
  std::vector<float> sh_logit_;       // [B] shared expert gate logits
};

}  // namespace sniper
