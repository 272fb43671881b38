// SPDX-License-Identifier: MIT
// Forward pass: the embedding rows (times embd_scale when the config has one), the layer step
// of model/layer_stack.h for every layer of the plan, then logits = W_out (rms_norm(x) *
// output_norm), soft-capped when final_softcap > 0. A chunk longer than a sliding ring allows
// runs in parts (forward -> forward_chunk). When weights stream, layer_weights() fills each
// layer's streamed tensors (those the tables mark kAttention / kDenseFfn) from the LayerStreamer.
#include "model/transformer.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "kernels/activations.h"
#include "kernels/attention.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "model/blocks/attention.h"
#include "model/blocks/delta_net.h"
#include "model/blocks/dense_ffn.h"
#include "model/tensor_catalog.h"

namespace sniper {

namespace {

constexpr ModelTensorSpec kTable[] = {
    {"token_embd.weight", &ModelWeights::token_embd,
     [](const ModelConfig& c) { return tensor_shape(c.dim, c.vocab_size); }, TensorRole::kEmbedding,
     TensorType::kMatrix, false, nullptr},
    {"output_norm.weight", &ModelWeights::output_norm, [](const ModelConfig& c) { return tensor_shape(c.dim); },
     TensorRole::kAlways, TensorType::kF32, false, nullptr},
    {"output.weight", &ModelWeights::output, [](const ModelConfig& c) { return tensor_shape(c.dim, c.vocab_size); },
     TensorRole::kAlways, TensorType::kMatrix, false, [](const ModelConfig& c) { return !c.tied_embeddings; }},
    {"rope_freqs.weight", &ModelWeights::rope_freqs, [](const ModelConfig& c) { return tensor_shape(c.rope_dims / 2); },
     TensorRole::kAlways, TensorType::kF32, true, nullptr},
};

}  // namespace

std::span<const ModelTensorSpec> Transformer::tensor_table() { return kTable; }

Transformer::Transformer(const ModelConfig& config, const ModelWeights& weights, int64_t max_batch, int64_t /*n_ctx*/,
                         const WeightSources& sources)
    : config_(config),
      weights_(weights),
      max_batch_(max_batch),
      sources_(sources),
      stack_(config, weights, max_batch, sources),
      max_chunk_(stack_.max_chunk()) {
  const size_t B = static_cast<size_t>(max_batch);
  const size_t dim = static_cast<size_t>(config.dim);
  if (sources.layers != nullptr) {
    // The tensors that may stream (the tables' mixer projections and dense FFN matrices).
    streamed_fields_.resize(static_cast<size_t>(config.n_layers));
    for (const TensorUse& u : tensor_uses(config)) {
      if (u.layer_member == nullptr || (u.role != TensorRole::kAttention && u.role != TensorRole::kDenseFfn)) continue;
      streamed_fields_[static_cast<size_t>(u.layer)].push_back({u.layer_member, u.name});
    }
  }
  x_.resize(B * dim);
  xb_.resize(B * dim);
  out_.resize(B * dim);
}

void Transformer::set_routing_bias(const RoutingBias& bias) { stack_.set_routing_bias(bias); }

const RoutingStats& Transformer::routing_stats() const { return stack_.routing_stats(); }

size_t Transformer::scratch_bytes() const {
  size_t acts = buffers_.act.capacity();
  for (const ActBuffer& b : buffers_.act_bufs) acts += b.capacity();
  return (x_.size() + xb_.size() + out_.size() + part_logits_.capacity()) * sizeof(float) + acts +
         stack_.scratch_bytes();
}

size_t Transformer::estimate_scratch_bytes(const ModelConfig& c, int64_t max_batch, int64_t n_ctx, int n_threads,
                                           int64_t n_logit_rows) {
  const size_t B = static_cast<size_t>(max_batch), dim = static_cast<size_t>(c.dim);
  const size_t vocab = static_cast<size_t>(c.vocab_size);
  // The residual, a block's input and output.
  size_t bytes = 3 * B * dim * sizeof(float);
  // Logits: the rows the session and its caller hold at once (forward() writes only the last
  // token's row, or one per token when all_logits is asked for), plus the row of a part that
  // forward() does not return (chunks split for sliding rings).
  bool sliding = false;
  for (const LayerPlan& lp : c.layers)
    sliding = sliding || (lp.mixer == MixerKind::kAttention && lp.sliding_window > 0);
  bytes += (static_cast<size_t>(std::max<int64_t>(1, n_logit_rows)) + (sliding ? 1 : 0)) * vocab * sizeof(float);
  // Quantized activations: the four buffers (BlockBuffers) each hold at most B rows (a decode
  // step's experts: k rows) of the widest matrix input the tables declare, at 2 bytes an element
  // (f16 / bf16; the block types take less, f32 activations are used in place).
  int64_t widest = c.dim;
  for (const TensorUse& u : tensor_uses(c)) {
    if (u.type == TensorType::kMatrix && u.role != TensorRole::kEmbedding) widest = std::max(widest, u.shape[0]);
  }
  const size_t act_rows = std::max<size_t>(B, static_cast<size_t>(c.n_experts_active));
  bytes += 4 * act_rows * static_cast<size_t>(widest) * 2;
  return bytes + LayerStack::scratch_bound(c, max_batch, n_ctx, n_threads);
}

Status Transformer::forward(const int32_t* tokens, int64_t n_tok, int64_t pos0, SequenceState& state, bool all_logits,
                            float* logits, ThreadPool& pool, float* hidden, const ChunkInput* in) {
  const ChunkInput plain;
  const ChunkInput& input = in != nullptr ? *in : plain;
  // A sliding layer's ring holds the keys of a chunk's first token only for chunks of up to
  // max_chunk_ tokens (model/config.h sliding_ring_slots): longer ones run in parts.
  const int64_t part = max_chunk_ > 0 ? std::min(max_chunk_, max_batch_) : n_tok;
  if (n_tok <= part) return forward_chunk(tokens, n_tok, pos0, state, all_logits, logits, pool, hidden, input);
  CHECK(!input.non_causal, "a chunk of %ld tokens that attends both ways exceeds the %ld a forward takes",
        static_cast<long>(n_tok), static_cast<long>(part));
  for (int64_t t0 = 0; t0 < n_tok; t0 += part) {
    const int64_t n = std::min(part, n_tok - t0);
    const bool last = t0 + n == n_tok;
    float* part_hidden = hidden != nullptr ? hidden + t0 * config_.dim : nullptr;
    ChunkInput part_in = input;
    if (input.embd != nullptr) part_in.embd = input.embd + t0 * config_.dim;
    CHECK(input.rope_pos == nullptr, "2D rope positions for a chunk in parts");
    if (!all_logits && !last) {
      // Only the last part's last token gives logits; the others still need a buffer.
      part_logits_.resize(static_cast<size_t>(config_.vocab_size));
      SNIPER_TRY(
          forward_chunk(tokens + t0, n, pos0 + t0, state, false, part_logits_.data(), pool, part_hidden, part_in));
      continue;
    }
    float* out = all_logits ? logits + t0 * config_.vocab_size : logits;
    SNIPER_TRY(forward_chunk(tokens + t0, n, pos0 + t0, state, all_logits, out, pool, part_hidden, part_in));
  }
  return ok_status();
}

Status Transformer::forward_chunk(const int32_t* tokens, int64_t n_tok, int64_t pos0, SequenceState& state,
                                  bool all_logits, float* logits, ThreadPool& pool, float* hidden,
                                  const ChunkInput& in) {
  const ModelConfig& c = config_;
  CHECK(n_tok >= 1 && n_tok <= max_batch_, "n_tok %ld, max_batch %ld", static_cast<long>(n_tok),
        static_cast<long>(max_batch_));
  CHECK(pos0 >= 0 && pos0 + n_tok <= state.n_ctx(), "positions [%ld, %ld) exceed the context %ld",
        static_cast<long>(pos0), static_cast<long>(pos0 + n_tok), static_cast<long>(state.n_ctx()));
  CHECK(state.n_layers() == c.n_layers, "the sequence state has %ld layers, the model %ld",
        static_cast<long>(state.n_layers()), static_cast<long>(c.n_layers));
  const int64_t dim = c.dim;

  // Embedding rows.
  for (int64_t t = 0; t < n_tok; ++t)
    CHECK(tokens[t] >= 0 && tokens[t] < c.vocab_size, "token %d out of range", tokens[t]);
  if (in.embd != nullptr) {
    // Media rows in place of the lookup, unscaled (llama.cpp scales token embeddings only).
    std::memcpy(x_.data(), in.embd, sizeof(float) * static_cast<size_t>(n_tok * dim));
  } else {
    if (weights_.token_embd.data != nullptr) {
      const KernelTable& embd_kt = get_kernels(weights_.token_embd.type);
      for (int64_t t = 0; t < n_tok; ++t)
        embd_kt.dequant_row(weights_.token_embd.row(tokens[t]), x_.data() + t * dim, dim);
    } else {
      CHECK(sources_.embeddings != nullptr, "token_embd is not resident and no row source was given");
      SNIPER_TRY(sources_.embeddings->read(tokens, n_tok, x_.data()));
    }
    if (c.embd_scale > 0.0f) {
      for (int64_t i = 0; i < n_tok * dim; ++i) x_[static_cast<size_t>(i)] *= c.embd_scale;
    }
  }
  SNIPER_TRY(stack_.begin_chunk(tokens, x_.data(), n_tok, pos0, in, buffers_, pool));
  const LayerIo io{.n_tok = n_tok,
                   .pos0 = pos0,
                   .non_causal = in.non_causal,
                   .x = x_.data(),
                   .xb = xb_.data(),
                   .out = out_.data(),
                   .buffers = &buffers_,
                   .pool = &pool};
  for (int64_t l = 0; l < c.n_layers; ++l) {
    SNIPER_ASSIGN_OR_RETURN(const LayerWeights* lw, layer_weights(l));
    SNIPER_TRY(stack_.run_layer(l, *lw, state, io));
  }

  const int64_t first = all_logits ? 0 : n_tok - 1;
  const int64_t n_out = n_tok - first;
  // The head's input rows: every token's into `hidden` when asked for, else the logit rows'.
  float* normed = hidden != nullptr ? hidden : xb_.data();
  const int64_t from = hidden != nullptr ? 0 : first;
  for (int64_t t = from; t < n_tok; ++t) {
    rms_norm(x_.data() + t * dim, f32_data(weights_.output_norm), normed + (t - from) * dim, dim, c.norm_eps);
  }
  matmul(weights_.output, normed + (first - from) * dim, logits, n_out, buffers_.act, pool);
  if (c.final_softcap > 0.0f) softcap(logits, n_out * c.vocab_size, c.final_softcap);
  return ok_status();
}

Result<const LayerWeights*> Transformer::layer_weights(int64_t layer_idx) {
  const LayerWeights& resident = weights_.layers[static_cast<size_t>(layer_idx)];
  if (sources_.layers == nullptr) return &resident;
  SNIPER_TRY(sources_.layers->acquire(layer_idx));
  streamed_layer_ = resident;
  for (const StreamedField& f : streamed_fields_[static_cast<size_t>(layer_idx)]) {
    QTensor& t = streamed_layer_.*f.member;
    if (t.data != nullptr || t.row_bytes == 0) continue;  // resident, or absent
    const QTensor* v = sources_.layers->find(f.name);
    CHECK(v != nullptr, "layer %ld: tensor %s is neither resident nor streamed", static_cast<long>(layer_idx),
          f.name.c_str());
    t = *v;
  }
  return &streamed_layer_;
}

}  // namespace sniper
