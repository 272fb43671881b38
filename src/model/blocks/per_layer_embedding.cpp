// SPDX-License-Identifier: MIT
#include "model/blocks/per_layer_embedding.h"

#include <cmath>

#include "base/check.h"
#include "kernels/activations.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"

namespace sniper {

namespace {

constexpr ModelTensorSpec kModelTable[] = {
    {"per_layer_token_embd.weight", &ModelWeights::per_layer_token_embd,
     [](const ModelConfig& c) { return tensor_shape(c.n_layers * c.per_layer_dim, c.vocab_size); },
     TensorRole::kEmbedding, TensorType::kMatrix, false, nullptr},
    {"per_layer_model_proj.weight", &ModelWeights::per_layer_model_proj,
     [](const ModelConfig& c) { return tensor_shape(c.dim, c.n_layers * c.per_layer_dim); }, TensorRole::kAlways,
     TensorType::kMatrix, false, nullptr},
    {"per_layer_proj_norm.weight", &ModelWeights::per_layer_proj_norm,
     [](const ModelConfig& c) { return tensor_shape(c.per_layer_dim); }, TensorRole::kAlways, TensorType::kF32, false,
     nullptr},
};

constexpr LayerTensorSpec kLayerTable[] = {
    {"inp_gate.weight", &LayerWeights::inp_gate,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim, c.per_layer_dim); }, TensorRole::kAlways,
     TensorType::kMatrix, false, nullptr},
    {"proj.weight", &LayerWeights::proj,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.per_layer_dim, c.dim); }, TensorRole::kAlways,
     TensorType::kMatrix, false, nullptr},
    {"post_norm.weight", &LayerWeights::post_norm,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim); }, TensorRole::kAlways, TensorType::kF32,
     false, nullptr},
};

}  // namespace

std::span<const ModelTensorSpec> PerLayerEmbedding::model_tensor_table() { return kModelTable; }
std::span<const LayerTensorSpec> PerLayerEmbedding::layer_tensor_table() { return kLayerTable; }

PerLayerEmbedding::PerLayerEmbedding(const ModelConfig& config, const ModelWeights& weights, int64_t max_batch,
                                     StreamedRows* rows)
    : config_(config), weights_(weights), rows_(rows) {
  allocate_scratch(*this, scratch_table(), config, max_batch);
}

std::span<const ScratchEntry<PerLayerEmbedding>> PerLayerEmbedding::scratch_table() {
  constexpr auto all_layers = [](const ModelConfig& c, int64_t B) { return rows(B, c.n_layers * c.per_layer_dim); };
  static constexpr ScratchEntry<PerLayerEmbedding> kScratch[] = {
      {&PerLayerEmbedding::tok_, nullptr, all_layers},
      {&PerLayerEmbedding::proj_, nullptr, all_layers},
      {&PerLayerEmbedding::gate_, nullptr, [](const ModelConfig& c, int64_t B) { return rows(B, c.per_layer_dim); }},
      {&PerLayerEmbedding::out_, nullptr, [](const ModelConfig& c, int64_t B) { return rows(B, c.dim); }},
  };
  return kScratch;
}

size_t PerLayerEmbedding::scratch_bound(const ModelConfig& config, int64_t max_batch) {
  return scratch_table_bytes(scratch_table(), config, max_batch);
}

Status PerLayerEmbedding::begin_chunk(const int32_t* tokens, const float* x0, int64_t n_tok, BlockBuffers& buffers,
                                      ThreadPool& pool) {
  const ModelConfig& c = config_;
  const int64_t npl = c.per_layer_dim, n = c.n_layers * npl;
  const QTensor& table = weights_.per_layer_token_embd;
  if (table.data != nullptr) {
    const KernelTable& kt = get_kernels(table.type);
    for (int64_t t = 0; t < n_tok; ++t) kt.dequant_row(table.row(tokens[t]), tok_.data() + t * n, n);
  } else {
    CHECK(rows_ != nullptr, "per_layer_token_embd is not resident and no row source was given");
    SNIPER_TRY(rows_->read(tokens, n_tok, tok_.data()));
  }
  matmul(weights_.per_layer_model_proj, x0, proj_.data(), n_tok, buffers.act, pool);
  const float tok_scale = std::sqrt(static_cast<float>(npl));
  const float proj_scale = 1.0f / std::sqrt(static_cast<float>(c.dim));
  const float input_scale = 1.0f / std::sqrt(2.0f);
  const float* norm = f32_data(weights_.per_layer_proj_norm);
  for (int64_t i = 0; i < n_tok * n; ++i) proj_[static_cast<size_t>(i)] *= proj_scale;
  for (int64_t r = 0; r < n_tok * c.n_layers; ++r) {
    float* pp = proj_.data() + r * npl;
    float* e = tok_.data() + r * npl;
    rms_norm(pp, norm, pp, npl, c.norm_eps);
    for (int64_t i = 0; i < npl; ++i) e[i] = (pp[i] + e[i] * tok_scale) * input_scale;
  }
  return ok_status();
}

void PerLayerEmbedding::apply(int64_t layer_idx, const LayerWeights& lw, float* x, int64_t n_tok, BlockBuffers& buffers,
                              ThreadPool& pool) {
  const ModelConfig& c = config_;
  const int64_t npl = c.per_layer_dim, n = c.n_layers * npl, dim = c.dim;
  matmul(lw.inp_gate, x, gate_.data(), n_tok, buffers.act, pool);
  for (int64_t t = 0; t < n_tok; ++t) {
    float* g = gate_.data() + t * npl;
    gelu(g, g, npl);
    const float* pl = tok_.data() + t * n + layer_idx * npl;
    for (int64_t i = 0; i < npl; ++i) g[i] *= pl[i];
  }
  matmul(lw.proj, gate_.data(), out_.data(), n_tok, buffers.act, pool);
  for (int64_t t = 0; t < n_tok; ++t) {
    rms_norm(out_.data() + t * dim, f32_data(lw.post_norm), out_.data() + t * dim, dim, c.norm_eps);
    add_inplace(x + t * dim, out_.data() + t * dim, dim);
  }
}

}  // namespace sniper
