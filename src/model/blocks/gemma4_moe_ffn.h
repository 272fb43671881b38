// SPDX-License-Identifier: MIT
// Gemma4MoeFfn (FfnKind::kGemma4Moe), gemma4's MoE layer (x1: the residual after attention,
// xb = rms(x1) * ffn_norm):
//   m      = rms(GELU MLP(xb)) * post_ffw_norm_1                 (GeluFfn::gelu_mlp)
//   logits = W_router ((rms(x1) * (1 / sqrt(dim))) * ffn_gate_inp.scale); softmax; top-k;
//            the selected weights renormalised to sum 1
//   he     = rms(x1) * pre_ffw_norm_2
//   e_out  = (W_down[e] (gelu(gate[e] he) * up[e] he)) * ffn_down_exps.scale[e] * w_e
//            (gate, up: the two halves of ffn_gate_up_exps[e]); summed in slot order
//   out    = rms(m + rms(sum) * post_ffw_norm_2) * post_ffw_norm
// Routed experts come from an ExpertSource (resident slices, or streamed through the expert
// cache: a fused expert is one contiguous gate_up read). When the source wants prefetches, the
// block guesses the next layers' experts (their routers applied to this layer's residual) before
// running this layer's experts and again after the layer. Keeps no sequence state.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/blocks/block.h"
#include "model/blocks/gelu_ffn.h"
#include "weights/expert_source.h"

namespace sniper {

class Gemma4MoeFfn final : public FfnBlock {
 public:
  // experts: the routed experts' source, or null for slices of the resident tensors.
  Gemma4MoeFfn(const ModelConfig& config, const ModelWeights& weights, int64_t max_batch, ExpertSource* experts);

  [[nodiscard]] Status forward(int64_t layer_idx, const LayerWeights& lw, const BlockIo& io) override;
  // Guesses the next layers' experts from the residual leaving this layer (when the source wants
  // prefetches).
  void after_layer(int64_t layer_idx, const BlockIo& io) override;
  size_t scratch_bytes() const override;

  // The resident experts of a gemma4 model as views[layer][expert] (gate and up: the halves of
  // ffn_gate_up_exps[e]).
  static std::vector<std::vector<ExpertView>> resident_views(const ModelConfig& config, const ModelWeights& weights);

 private:
  // Runs one expert over the tokens routed to it; writes their scaled, weighted rows to exp_out_.
  void run_expert(const ReadyExpert& ex, const LayerWeights& lw, ThreadPool& pool, BlockBuffers& bufs);
  // Layer L+d's router (d = 1 .. prefetch_depth()) applied to the residual x [n_tok, dim]; the
  // union of each token's top-k goes to the source as a prefetch hint. Uses rin_ and router_.
  void predict_next_experts(int64_t layer_idx, const float* x, int64_t n_tok, BlockBuffers& bufs, ThreadPool& pool);

  const ModelConfig& config_;
  const ModelWeights& weights_;
  GeluFfn mlp_;
  std::unique_ptr<ResidentExperts> resident_;
  ExpertSource* experts_;
  std::vector<float> m_;       // [B, dim] the MLP, then the block's sum
  std::vector<float> he_;      // [B, dim] the experts' input
  std::vector<float> rin_;     // [B, dim] the router's input
  std::vector<float> router_;  // [B, n_experts]
  std::vector<int32_t> sel_;   // [B, k]
  std::vector<float> sel_w_;   // [B, k]
  std::vector<uint8_t> used_;  // [n_experts]
  std::vector<int32_t> union_;
  std::vector<int32_t> predicted_;  // a prefetch hint's experts, ascending
  std::vector<int32_t> rows_tok_;   // tokens routed to the current expert
  std::vector<int32_t> rows_slot_;  // their slots
  std::vector<float> gathered_;     // [B, dim]
  std::vector<float> hg_;           // [B, eff]
  std::vector<float> hu_;           // [B, eff]
  std::vector<float> down_;         // [B, dim]
  std::vector<float> exp_out_;      // [B, k, dim]
  int64_t n_tok_ = 0;
};

}  // namespace sniper
