// SPDX-License-Identifier: MIT
#include "model/mtp_head.h"

#include <algorithm>
#include <string>

#include "base/check.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "model/tensor_catalog.h"

namespace sniper {

namespace {

constexpr LayerTensorSpec kTable[] = {
    {"nextn.eh_proj.weight", &LayerWeights::nextn_eh_proj,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(2 * c.dim, c.dim); }, TensorRole::kAlways,
     TensorType::kMatrix, false, nullptr},
    {"nextn.enorm.weight", &LayerWeights::nextn_enorm,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim); }, TensorRole::kAlways, TensorType::kF32,
     false, nullptr},
    {"nextn.hnorm.weight", &LayerWeights::nextn_hnorm,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim); }, TensorRole::kAlways, TensorType::kF32,
     false, nullptr},
    {"nextn.embed_tokens.weight", &LayerWeights::nextn_embed,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim, c.vocab_size); }, TensorRole::kAlways,
     TensorType::kMatrix, true, nullptr},
    {"nextn.shared_head_norm.weight", &LayerWeights::nextn_head_norm,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim); }, TensorRole::kAlways, TensorType::kF32,
     true, nullptr},
    {"nextn.shared_head_head.weight", &LayerWeights::nextn_head,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim, c.vocab_size); }, TensorRole::kAlways,
     TensorType::kMatrix, true, nullptr},
};

// Every tensor of the block that its forward reads must have bytes in memory; its routed
// experts only when experts_too (else they come from an ExpertSource).
Status check_resident(const ModelConfig& c, const ModelWeights& w, int64_t block, bool experts_too) {
  for (const TensorUse& u : tensor_uses(c, block)) {
    if (u.layer != 0 || u.role == TensorRole::kUnread || (u.role == TensorRole::kExpert && !experts_too)) continue;
    const QTensor* t = find_bound_tensor(w, u);
    if (t != nullptr && t->row_bytes != 0 && t->data == nullptr) {
      return make_error("the MTP block (blk.%ld) is not loaded: load the model with its MTP layers (--spec-type mtp)",
                        static_cast<long>(block));
    }
  }
  return ok_status();
}

}  // namespace

Result<ModelConfig> mtp_config(const ModelConfig& main) {
  if (main.n_nextn_layers <= 0) {
    return make_error("the model has no multi-token-prediction block (%s.nextn_predict_layers is absent or 0)",
                      main.arch.c_str());
  }
  const auto attn = std::find_if(main.layers.begin(), main.layers.end(),
                                 [](const LayerPlan& lp) { return lp.mixer == MixerKind::kAttention; });
  if (attn == main.layers.end()) {
    return make_error("the model has an MTP block but no full-attention layer to take its shape from");
  }
  ModelConfig c = main;
  c.n_layers = 1;
  c.n_nextn_layers = 0;
  c.mtp_head = true;
  c.layers.assign(1, *attn);
  return c;
}

MtpHead::~MtpHead() = default;

std::span<const LayerTensorSpec> MtpHead::tensor_table() { return kTable; }

Result<std::unique_ptr<MtpHead>> MtpHead::create(const ModelConfig& main, const WeightStore& store, int64_t max_batch,
                                                 StreamedRows* embeddings, ExpertSource* experts) {
  CHECK(max_batch >= 1);
  std::unique_ptr<MtpHead> m(new MtpHead());
  SNIPER_ASSIGN_OR_RETURN(m->config_, mtp_config(main));
  const ModelConfig& c = m->config_;
  const int64_t block = main.n_layers, dim = c.dim;
  auto w = bind_model_weights(c, store, block);
  if (!w.ok()) return make_error("MTP block: %s", w.error().message.c_str());
  m->weights_ = std::move(w).value();  // token_embd, output, output_norm: the target's views
  SNIPER_TRY(check_resident(c, m->weights_, block, experts == nullptr));
  const LayerWeights& lw = m->weights_.layers[0];
  m->eh_proj_ = lw.nextn_eh_proj;
  m->enorm_ = lw.nextn_enorm;
  m->hnorm_ = lw.nextn_hnorm;
  m->embed_ = lw.nextn_embed;
  m->head_norm_ = lw.nextn_head_norm;
  m->head_ = lw.nextn_head;
  if (m->embed_.data == nullptr) m->embed_ = m->weights_.token_embd;
  if (m->head_norm_.data == nullptr) m->head_norm_ = m->weights_.output_norm;
  if (m->head_.data == nullptr) m->head_ = m->weights_.output;
  if (m->embed_.data == nullptr && embeddings == nullptr) {
    return make_error("the MTP head needs token_embd rows: neither resident nor streamed");
  }
  CHECK(m->head_.data != nullptr && m->head_norm_.data != nullptr, "the output head is resident in every plan");
  m->embeddings_ = embeddings;
  m->max_batch_ = max_batch;
  m->stack_ = std::make_unique<LayerStack>(c, m->weights_, max_batch, WeightSources{.experts = experts});
  const size_t B = static_cast<size_t>(max_batch), D = static_cast<size_t>(dim);
  m->e_.resize(B * D);
  m->cat_.resize(2 * B * D);
  m->x_.resize(B * D);
  m->xb_.resize(B * D);
  m->out_.resize(B * D);
  return m;
}

size_t MtpHead::scratch_bytes() const {
  return (e_.size() + cat_.size() + x_.size() + xb_.size() + out_.size()) * sizeof(float) + buffers_.act.capacity() +
         stack_->scratch_bytes();
}

Status MtpHead::forward(const int32_t* tokens, const float* h, int64_t n, int64_t pos0, SequenceState& state,
                        float* h_out, float* logits, ThreadPool& pool, bool all_logits) {
  const ModelConfig& c = config_;
  CHECK(n >= 1 && n <= max_batch_, "n %ld, max_batch %ld", static_cast<long>(n), static_cast<long>(max_batch_));
  CHECK(pos0 >= 0 && pos0 + n <= state.n_ctx());
  const int64_t dim = c.dim;
  for (int64_t t = 0; t < n; ++t) CHECK(tokens[t] >= 0 && tokens[t] < c.vocab_size, "token %d out of range", tokens[t]);
  if (embed_.data != nullptr) {
    const KernelTable& kt = get_kernels(embed_.type);
    for (int64_t t = 0; t < n; ++t) kt.dequant_row(embed_.row(tokens[t]), e_.data() + t * dim, dim);
  } else {
    SNIPER_TRY(embeddings_->read(tokens, n, e_.data()));
  }
  for (int64_t t = 0; t < n; ++t) {
    float* row = cat_.data() + 2 * t * dim;
    rms_norm(e_.data() + t * dim, f32_data(enorm_), row, dim, c.norm_eps);
    rms_norm(h + t * dim, f32_data(hnorm_), row + dim, dim, c.norm_eps);
  }
  matmul(eh_proj_, cat_.data(), x_.data(), n, buffers_.act, pool);

  const LayerIo io{.n_tok = n,
                   .pos0 = pos0,
                   .x = x_.data(),
                   .xb = xb_.data(),
                   .out = out_.data(),
                   .buffers = &buffers_,
                   .pool = &pool};
  SNIPER_TRY(stack_->begin_chunk(tokens, x_.data(), n, pos0, ChunkInput{}, buffers_, pool));
  SNIPER_TRY(stack_->run_layer(0, weights_.layers[0], state, io));
  for (int64_t t = 0; t < n; ++t) rms_norm(x_.data() + t * dim, f32_data(head_norm_), h_out + t * dim, dim, c.norm_eps);
  if (logits != nullptr) {
    const int64_t first = all_logits ? 0 : n - 1;
    matmul(head_, h_out + first * dim, logits, n - first, buffers_.act, pool);
  }
  return ok_status();
}

}  // namespace sniper
