// SPDX-License-Identifier: MIT
#include "model/layer_stack.h"

#include <algorithm>

#include "base/check.h"
#include "kernels/ops.h"
#include "model/blocks/attention.h"
#include "model/blocks/delta_net.h"
#include "model/blocks/dense_ffn.h"
#include "model/blocks/per_layer_embedding.h"

namespace sniper {

namespace {

TensorShape dim_only(const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim); }

constexpr LayerTensorSpec kTable[] = {
    {"attn_norm.weight", &LayerWeights::attn_norm, dim_only, TensorRole::kAlways, TensorType::kF32, false, nullptr},
    {"ffn_norm.weight", &LayerWeights::ffn_norm, dim_only, TensorRole::kAlways, TensorType::kF32, false,
     [](const ModelConfig& c, const LayerPlan&) { return !c.ffn_norm_post_attention; }},
    // The qwen35 family names the FFN's input norm post_attention_norm.
    {"post_attention_norm.weight", &LayerWeights::ffn_norm, dim_only, TensorRole::kAlways, TensorType::kF32, false,
     [](const ModelConfig& c, const LayerPlan&) { return c.ffn_norm_post_attention; }},
    {"layer_output_scale.weight", &LayerWeights::out_scale,
     [](const ModelConfig&, const LayerPlan&) { return tensor_shape(1); }, TensorRole::kAlways, TensorType::kF32, true,
     nullptr},
};

// The block for a kind (one instance serves every layer of that kind).
std::unique_ptr<MixerBlock> make_mixer(MixerKind kind, const ModelConfig& c, const ModelWeights& w, int64_t max_batch) {
  switch (kind) {
    case MixerKind::kAttention: return std::make_unique<AttentionBlock>(c, w.rope_freqs, max_batch);
    case MixerKind::kDeltaNet: return std::make_unique<DeltaNetBlock>(c, max_batch);
  }
  CHECK(false, "unknown mixer kind %d", static_cast<int>(kind));
  return nullptr;
}

std::unique_ptr<FfnBlock> make_ffn(FfnKind kind, const ModelConfig& c, const ModelWeights& w, int64_t max_batch,
                                   const WeightSources& sources) {
  switch (kind) {
    case FfnKind::kDense: return std::make_unique<DenseFfn>(c, max_batch);
    case FfnKind::kMoe: return std::make_unique<MoeFfn>(c, w, max_batch, sources.experts);
  }
  CHECK(false, "unknown FFN kind %d", static_cast<int>(kind));
  return nullptr;
}

}  // namespace

LayerStack::LayerStack(const ModelConfig& config, const ModelWeights& weights, int64_t max_batch,
                       const WeightSources& sources)
    : config_(config) {
  CHECK(max_batch >= 1);
  CHECK(static_cast<int64_t>(config.layers.size()) == config.n_layers, "the config has no layer plan");
  // Blocks are made in order of first use, one per kind.
  std::vector<MixerKind> mixer_kinds;
  std::vector<FfnKind> ffn_kinds;
  for (const LayerPlan& lp : config.layers) {
    auto m = std::find(mixer_kinds.begin(), mixer_kinds.end(), lp.mixer);
    if (m == mixer_kinds.end()) {
      mixer_kinds.push_back(lp.mixer);
      mixer_blocks_.push_back(make_mixer(lp.mixer, config, weights, max_batch));
      m = mixer_kinds.end() - 1;
    }
    mixers_.push_back(mixer_blocks_[static_cast<size_t>(m - mixer_kinds.begin())].get());
    auto f = std::find(ffn_kinds.begin(), ffn_kinds.end(), lp.ffn);
    if (f == ffn_kinds.end()) {
      ffn_kinds.push_back(lp.ffn);
      ffn_blocks_.push_back(make_ffn(lp.ffn, config, weights, max_batch, sources));
      if (lp.ffn == FfnKind::kMoe) {
        moe_ = static_cast<MoeFfn*>(ffn_blocks_.back().get());
        moe_->set_remote_experts(sources.remote_experts);
      }
      f = ffn_kinds.end() - 1;
    }
    ffns_.push_back(ffn_blocks_[static_cast<size_t>(f - ffn_kinds.begin())].get());
    if (lp.mixer == MixerKind::kAttention && lp.sliding_window > 0) {
      const int64_t fits = sliding_ring_slots(lp) - lp.sliding_window + 1;
      max_chunk_ = max_chunk_ == 0 ? fits : std::min(max_chunk_, fits);
    }
  }
  if (config.per_layer_dim > 0) {
    per_layer_ = std::make_unique<PerLayerEmbedding>(config, weights, max_batch, sources.per_layer_embeddings);
  }
}

LayerStack::~LayerStack() = default;

std::span<const LayerTensorSpec> LayerStack::tensor_table() { return kTable; }

void LayerStack::set_routing_bias(const RoutingBias& bias) {
  if (moe_ != nullptr) moe_->set_routing_bias(bias);
}

const RoutingStats& LayerStack::routing_stats() const {
  return moe_ != nullptr ? moe_->routing_stats() : no_routing_stats_;
}

size_t LayerStack::scratch_bytes() const {
  size_t bytes = 0;
  for (const auto& b : mixer_blocks_) bytes += b->scratch_bytes();
  for (const auto& b : ffn_blocks_) bytes += b->scratch_bytes();
  if (per_layer_ != nullptr) bytes += per_layer_->scratch_bytes();
  return bytes;
}

size_t LayerStack::scratch_bound(const ModelConfig& c, int64_t max_batch, int64_t n_ctx, int n_threads) {
  bool attention = false, delta = false, dense = false, moe = false;
  for (const LayerPlan& lp : c.layers) {
    attention = attention || lp.mixer == MixerKind::kAttention;
    delta = delta || lp.mixer == MixerKind::kDeltaNet;
    dense = dense || lp.ffn == FfnKind::kDense;
    moe = moe || lp.ffn == FfnKind::kMoe;
  }
  size_t bytes = 0;
  if (attention) bytes += AttentionBlock::scratch_bound(c, max_batch, n_ctx, n_threads);
  if (delta) bytes += DeltaNetBlock::scratch_bound(c, max_batch);
  if (dense) bytes += DenseFfn::scratch_bound(c, max_batch);
  if (moe) bytes += MoeFfn::scratch_bound(c, max_batch);
  if (c.per_layer_dim > 0) bytes += PerLayerEmbedding::scratch_bound(c, max_batch);
  return bytes;
}

Status LayerStack::begin_batch(const int32_t* tokens, const float* x0, int64_t n_tok, std::span<const SeqRows> seqs,
                               const ChunkInput& in, BlockBuffers& buffers, ThreadPool& pool) {
  if (per_layer_ != nullptr) SNIPER_TRY(per_layer_->begin_chunk(tokens, x0, n_tok, seqs, buffers, pool));
  for (const auto& b : mixer_blocks_) b->begin_batch(seqs, in);
  return ok_status();
}

Status LayerStack::run_layer(int64_t layer_idx, const LayerWeights& lw, const LayerIo& lio) {
  const ModelConfig& c = config_;
  const int64_t dim = c.dim, n_tok = lio.n_tok;
  float* x = lio.x;
  float* xb = lio.xb;
  const BlockIo io{.n_tok = n_tok,
                   .seqs = lio.seqs,
                   .non_causal = lio.non_causal,
                   .x = x,
                   .xb = xb,
                   .out = lio.out,
                   .buffers = lio.buffers,
                   .pool = lio.pool};
  for (int64_t t = 0; t < n_tok; ++t) rms_norm(x + t * dim, f32_data(lw.attn_norm), xb + t * dim, dim, c.norm_eps);
  SNIPER_TRY(mixers_[static_cast<size_t>(layer_idx)]->forward(layer_idx, lw, io));
  for (int64_t t = 0; t < n_tok; ++t) add_inplace(x + t * dim, io.out + t * dim, dim);
  for (int64_t t = 0; t < n_tok; ++t) rms_norm(x + t * dim, f32_data(lw.ffn_norm), xb + t * dim, dim, c.norm_eps);
  FfnBlock& ffn = *ffns_[static_cast<size_t>(layer_idx)];
  SNIPER_TRY(ffn.forward(layer_idx, lw, io));
  for (int64_t t = 0; t < n_tok; ++t) add_inplace(x + t * dim, io.out + t * dim, dim);
  if (per_layer_ != nullptr) per_layer_->apply(layer_idx, lw, x, n_tok, *io.buffers, *io.pool);
  if (lw.out_scale.data != nullptr) {
    const float s = f32_data(lw.out_scale)[0];
    for (int64_t i = 0; i < n_tok * dim; ++i) x[i] *= s;
  }
  ffn.after_layer(layer_idx, io);
  return ok_status();
}

}  // namespace sniper
