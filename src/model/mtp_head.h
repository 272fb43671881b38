// SPDX-License-Identifier: MIT
// MtpHead: a Qwen3.5-family multi-token-prediction block (nextn_predict_layers), run as a draft
// head beside the main stack, as llama.cpp's MTP graph computes it. For a token x_p at position
// p and the target's final normed hidden state h_{p-1} of the position before (the row that
// predicted x_p; Transformer::forward's `hidden`):
//   e = rms_norm(embed(x_p)) * enorm;  g = rms_norm(h_{p-1}) * hnorm
//   x = eh_proj [e | g]                                   ([2 dim] -> [dim])
//   x = the layer step of model/layer_stack.h            (a full-attention layer with its own KV,
//                                                          then the main layers' FFN kind)
//   h_p' = rms_norm(x) * (shared_head_norm or output_norm); logits = (shared_head_head or output) h_p'
// The logits predict x_{p+2}; h_p' stands in for the target's h_p when the head drafts further.
// The block's tensors are blk.<n_layers>.* of the file; they must be resident (the memory plan
// loads them when asked to: PlanRequest::load_mtp), apart from its routed experts, which may
// come from an ExpertSource (the model's expert cache). Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/result.h"
#include "base/thread_pool.h"
#include "kv/sequence_state.h"
#include "model/blocks/block.h"
#include "model/config.h"
#include "model/layer_stack.h"
#include "model/model_weights.h"
#include "model/tensor_table.h"
#include "weights/streamed_rows.h"
#include "weights/weight_store.h"

namespace sniper {

// The most tokens one head forward takes (an MTP draft runs prompt chunks in parts of this), and
// the target hidden rows it keeps for rollbacks (a verification batch of 1 + 256 drafts and the
// row before it).
inline constexpr int64_t kMtpHeadBatch = 256;
inline constexpr int64_t kMtpHiddenRows = 260;

// The one-layer config of the model's first MTP block: the main config with the plan of its
// full-attention layers and its FFN kind. Errors: the model has no MTP block, or no
// full-attention layer to take the shape from.
Result<ModelConfig> mtp_config(const ModelConfig& main);

class MtpHead {
 public:
  // Binds blk.<main.n_layers>.* and the nextn tensors from `store` (every one resident: an
  // Error names the first that is not), beside the target's token_embd, output and output_norm
  // from the same store; embeddings: token_embd's row reader when it is not resident; experts:
  // the block's routed experts as layer 0 when they are not resident (Model::mtp_experts()).
  // max_batch: the most tokens one forward() takes.
  static Result<std::unique_ptr<MtpHead>> create(const ModelConfig& main, const WeightStore& store, int64_t max_batch,
                                                 StreamedRows* embeddings, ExpertSource* experts = nullptr);
  ~MtpHead();

  // The head's sequence state: a state made from layer_state_specs(config()).
  const ModelConfig& config() const { return config_; }
  int64_t max_batch() const { return max_batch_; }
  // Runs tokens[0, n) at positions pos0.. with h[n, dim] (row t: the hidden state before token
  // t). Writes h_out[n, dim] and, when logits is non-null, the last row's logits [vocab] (every
  // row's, [n, vocab], with all_logits). Requires 1 <= n <= max_batch and pos0 + n <=
  // state.n_ctx(). Errors: a failed embedding read.
  [[nodiscard]] Status forward(const int32_t* tokens, const float* h, int64_t n, int64_t pos0, SequenceState& state,
                               float* h_out, float* logits, ThreadPool& pool, bool all_logits = false);
  // Bytes of scratch this head holds.
  size_t scratch_bytes() const;

  // The block's own tensors beside its layer's (model/tensor_table.h): blk.N.nextn.* (the
  // embedding and hidden-state norms and their projection; optional own embeddings and head).
  static std::span<const LayerTensorSpec> tensor_table();

 private:
  MtpHead() = default;

  ModelConfig config_;
  int64_t max_batch_ = 0;
  ModelWeights weights_;  // layers[0] = the MTP block; the rest are the target's views
  QTensor eh_proj_, enorm_, hnorm_, embed_, head_norm_, head_;
  StreamedRows* embeddings_ = nullptr;
  std::unique_ptr<LayerStack> stack_;  // the block's one layer
  BlockBuffers buffers_;
  std::vector<float> e_;    // [B, dim] embeddings
  std::vector<float> cat_;  // [B, 2 dim] [e | g]
  std::vector<float> x_;    // [B, dim] residual
  std::vector<float> xb_;   // [B, dim] normed block input
  std::vector<float> out_;  // [B, dim] block output
};

}  // namespace sniper
