// SPDX-License-Identifier: MIT
// PerLayerEmbedding: gemma4 E-models' per-layer inputs (ModelConfig::per_layer_dim = n_pl > 0).
// begin_chunk(), once per forward from the scaled embeddings x0 [n_tok, dim]:
//   e  = per_layer_token_embd[token] * sqrt(n_pl)           (L * n_pl per token; slice l)
//   pp = (per_layer_model_proj x0) * (1 / sqrt(dim));  pp_l = rms(pp_l) * per_layer_proj_norm
//   pl_l = (pp_l + e_l) * (1 / sqrt(2))
// apply(), after layer l's FFN joined the residual y:
//   y += rms(W_proj (gelu(W_inp_gate y) * pl_l)) * post_norm
// per_layer_token_embd rows come from the resident tensor or, when it is not resident, from a
// StreamedRows (read by rows, as the token embeddings). Thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/blocks/block.h"
#include "model/blocks/scratch_table.h"
#include "model/tensor_table.h"
#include "weights/streamed_rows.h"

namespace sniper {

class PerLayerEmbedding {
 public:
  // rows: per_layer_token_embd's row source when the tensor is not resident (else null).
  PerLayerEmbedding(const ModelConfig& config, const ModelWeights& weights, int64_t max_batch, StreamedRows* rows);

  [[nodiscard]] Status begin_chunk(const int32_t* tokens, const float* x0, int64_t n_tok, BlockBuffers& buffers,
                                   ThreadPool& pool);
  // x [n_tok, dim] += layer l's branch.
  void apply(int64_t layer_idx, const LayerWeights& lw, float* x, int64_t n_tok, BlockBuffers& buffers,
             ThreadPool& pool);
  // Its tensors (model/tensor_table.h): the model-level table and projection, each layer's gate,
  // projection and norm. per_layer_token_embd is read one row per token (streamable by rows).
  static std::span<const ModelTensorSpec> model_tensor_table();
  static std::span<const LayerTensorSpec> layer_tensor_table();

  size_t scratch_bytes() const { return held_scratch_bytes(*this, scratch_table()); }
  // scratch_bytes() for chunks of up to max_batch tokens (its scratch table).
  static size_t scratch_bound(const ModelConfig& config, int64_t max_batch);

 private:
  static std::span<const ScratchEntry<PerLayerEmbedding>> scratch_table();

  const ModelConfig& config_;
  const ModelWeights& weights_;
  StreamedRows* rows_;
  std::vector<float> tok_;   // [B, L * n_pl] token rows, then the per-layer inputs pl
  std::vector<float> proj_;  // [B, L * n_pl] the projection
  std::vector<float> gate_;  // [B, n_pl]
  std::vector<float> out_;   // [B, dim]
};

}  // namespace sniper
