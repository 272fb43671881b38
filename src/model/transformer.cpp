// SPDX-License-Identifier: MIT
// Forward pass. Per layer:
//   xb = rms_norm(x) * attn_norm; q,k,v = W{q,k,v} xb (+ bias); [qk_norm]; rope(q, k);
//   cache k,v; att = softmax(q.K / sqrt(head_dim)) V; x += Wo att;
//   xb = rms_norm(x) * ffn_norm; x += FFN(xb)   (dense SwiGLU, or routed experts)
// and finally logits = W_out (rms_norm(x) * output_norm).
#include "model/transformer.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/attention.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "model/tensor_names.h"
#include "quant/quant.h"

namespace sniper {

namespace {

// Activations quantized once per vec_dot_type and reused by every weight of that type that
// reads the same input (q/k/v, gate/up). Slots are invalidated by reset().
class ActCache {
 public:
  ActCache(ActBuffer* bufs, int n_bufs) : bufs_(bufs), n_bufs_(n_bufs) {}
  const QuantizedActs& get(GgmlType weight_type, const float* x, int64_t n, int64_t n_tok, ThreadPool& pool) {
    const GgmlType t = vec_dot_type(weight_type);
    for (int i = 0; i < used_; ++i) {
      if (acts_[i].type == t) return acts_[i];
    }
    CHECK(used_ < n_bufs_, "ActCache: more than %d activation types for one input", n_bufs_);
    acts_[used_] = quantize_acts(t, x, n, n_tok, n, bufs_[used_], pool);
    return acts_[used_++];
  }
  void reset() { used_ = 0; }

 private:
  ActBuffer* bufs_;
  int n_bufs_;
  int used_ = 0;
  QuantizedActs acts_[3];
};

void add_bias(float* y, const QTensor& bias, int64_t n_tok, int64_t n) {
  if (bias.data == nullptr) return;
  const float* b = reinterpret_cast<const float*>(bias.data);
  for (int64_t t = 0; t < n_tok; ++t) add_inplace(y + t * n, b, n);
}

const float* f32_data(const QTensor& t) { return reinterpret_cast<const float*>(t.data); }

}  // namespace

Transformer::Transformer(const ModelConfig& config, const ModelWeights& weights, int64_t max_batch, int64_t n_ctx,
                         const WeightSources& sources)
    : config_(config), weights_(weights), max_batch_(max_batch), n_ctx_(n_ctx), experts_(sources.experts),
      sources_(sources) {
  CHECK(max_batch >= 1);
  const size_t B = static_cast<size_t>(max_batch);
  const size_t dim = static_cast<size_t>(config.dim);
  const int64_t ff = config.is_moe() ? config.expert_hidden_dim : config.hidden_dim;
  x_.resize(B * dim);
  xb_.resize(B * dim);
  q_.resize(B * static_cast<size_t>(config.q_dim()));
  k_.resize(B * static_cast<size_t>(config.kv_dim()));
  v_.resize(B * static_cast<size_t>(config.kv_dim()));
  att_.resize(B * static_cast<size_t>(config.q_dim()));
  hb_.resize(B * static_cast<size_t>(ff));
  hb2_.resize(B * static_cast<size_t>(ff));
  ffn_out_.resize(B * dim);
  rope_cos_.resize(B * static_cast<size_t>(config.rope_dims / 2));
  rope_sin_.resize(B * static_cast<size_t>(config.rope_dims / 2));
  if (config.is_moe()) {
    const size_t k = static_cast<size_t>(config.n_experts_active);
    router_.resize(B * static_cast<size_t>(config.n_experts));
    sel_.resize(B * k);
    sel_w_.resize(B * k);
    exp_out_.resize(B * k * dim);
    gathered_.resize(B * dim);
    down_.resize(B * dim);
    group_.reserve(static_cast<size_t>(config.n_experts));
    route_start_.resize(static_cast<size_t>(config.n_experts) + 1);
    route_next_.resize(static_cast<size_t>(config.n_experts));
    route_tok_.resize(B * k);
    route_slot_.resize(B * k);
    group_hb_.resize(k * static_cast<size_t>(ff));
    group_hb2_.resize(k * static_cast<size_t>(ff));
    group_down_.resize(k * dim);
    union_.reserve(static_cast<size_t>(config.n_experts));
    used_.resize(static_cast<size_t>(config.n_experts));
    if (experts_ == nullptr) {
      std::vector<std::vector<ExpertView>> views(weights.layers.size());
      for (size_t l = 0; l < weights.layers.size(); ++l) {
        const LayerWeights& lw = weights.layers[l];
        CHECK(lw.gate_exps.data != nullptr, "layer %zu: experts are not resident and no expert source was given", l);
        for (int64_t e = 0; e < config.n_experts; ++e) {
          views[l].push_back({lw.gate_exps.matrix(e), lw.up_exps.matrix(e), lw.down_exps.matrix(e)});
        }
      }
      resident_experts_ = std::make_unique<ResidentExperts>(std::move(views));
      experts_ = resident_experts_.get();
    }
  }
}

size_t Transformer::scratch_bytes() const {
  size_t floats = x_.size() + xb_.size() + q_.size() + k_.size() + v_.size() + att_.size() + hb_.size() +
                  hb2_.size() + ffn_out_.size() + rope_cos_.size() + rope_sin_.size() + router_.size() +
                  sel_w_.size() + exp_out_.size() + gathered_.size() + down_.size() + group_hb_.size() +
                  group_hb2_.size() + group_down_.size();
  const size_t ints =
      sel_.size() + route_start_.size() + route_next_.size() + route_tok_.size() + route_slot_.size();
  return floats * sizeof(float) + ints * sizeof(int32_t) +
         att_scratch_.size() + act_.capacity();
}

size_t Transformer::estimate_scratch_bytes(const ModelConfig& c, int64_t max_batch, int64_t n_ctx, int n_threads) {
  const size_t B = static_cast<size_t>(max_batch);
  const size_t ff = static_cast<size_t>(c.is_moe() ? c.expert_hidden_dim : c.hidden_dim);
  const size_t dim = static_cast<size_t>(c.dim), k = static_cast<size_t>(c.n_experts_active);
  size_t floats = B * (6 * dim + 2 * static_cast<size_t>(c.q_dim()) + 2 * static_cast<size_t>(c.kv_dim()) + 2 * ff +
                       static_cast<size_t>(c.rope_dims) + static_cast<size_t>(c.n_experts) + 2 * k + k * dim);
  floats += k * (2 * ff + dim);  // one decode step's experts together
  floats += 2 * B * k + 2 * static_cast<size_t>(c.n_experts) + 1;  // expert routing lists (int32)
  floats += B * static_cast<size_t>(c.vocab_size);  // logits of a full batch
  // Quantized activation buffers (at most ~1.2 bytes per float for any type, four buffers) and
  // attention scratch per thread (scores over the context plus a row).
  const size_t acts = 4 * B * std::max(dim, ff) * 2;
  const size_t attention = static_cast<size_t>(n_threads) * (static_cast<size_t>(n_ctx) * 4 + 4 * static_cast<size_t>(c.head_dim) + 256);
  return floats * sizeof(float) + acts + attention;
}

Status Transformer::forward(const int32_t* tokens, int64_t n_tok, int64_t pos0, KvCache& kv, bool all_logits,
                            float* logits, ThreadPool& pool) {
  const ModelConfig& c = config_;
  CHECK(n_tok >= 1 && n_tok <= max_batch_, "n_tok %ld, max_batch %ld", static_cast<long>(n_tok),
        static_cast<long>(max_batch_));
  CHECK(pos0 >= 0 && pos0 + n_tok <= kv.n_ctx(), "positions [%ld, %ld) exceed the context %ld",
        static_cast<long>(pos0), static_cast<long>(pos0 + n_tok), static_cast<long>(kv.n_ctx()));
  const int64_t dim = c.dim;

  // Embedding rows.
  for (int64_t t = 0; t < n_tok; ++t) CHECK(tokens[t] >= 0 && tokens[t] < c.vocab_size, "token %d out of range", tokens[t]);
  if (weights_.token_embd.data != nullptr) {
    const KernelTable& embd_kt = get_kernels(weights_.token_embd.type);
    for (int64_t t = 0; t < n_tok; ++t) embd_kt.dequant_row(weights_.token_embd.row(tokens[t]), x_.data() + t * dim, dim);
  } else {
    CHECK(sources_.embeddings != nullptr, "token_embd is not resident and no row source was given");
    SNIPER_TRY(sources_.embeddings->read(tokens, n_tok, x_.data()));
  }
  // Rotation angles for each position of the chunk (shared by all layers).
  const int64_t half = c.rope_dims / 2;
  const float* freq_factors = weights_.rope_freqs.data ? f32_data(weights_.rope_freqs) : nullptr;
  for (int64_t t = 0; t < n_tok; ++t) {
    rope_angles(pos0 + t, c.rope_dims, c.rope_base, c.rope_freq_scale, freq_factors, rope_cos_.data() + t * half,
                rope_sin_.data() + t * half);
  }

  for (int64_t l = 0; l < c.n_layers; ++l) {
    SNIPER_ASSIGN_OR_RETURN(const LayerWeights* lwp, layer_weights(l));
    const LayerWeights& lw = *lwp;
    for (int64_t t = 0; t < n_tok; ++t) {
      rms_norm(x_.data() + t * dim, f32_data(lw.attn_norm), xb_.data() + t * dim, dim, c.norm_eps);
    }
    attention_block(l, lw, n_tok, pos0, kv, pool);
    for (int64_t t = 0; t < n_tok; ++t) {
      rms_norm(x_.data() + t * dim, f32_data(lw.ffn_norm), xb_.data() + t * dim, dim, c.norm_eps);
    }
    if (c.is_moe()) {
      SNIPER_TRY(moe_ffn(l, lw, n_tok, pool));
    } else {
      dense_ffn(lw, n_tok, pool);
    }
    for (int64_t t = 0; t < n_tok; ++t) add_inplace(x_.data() + t * dim, ffn_out_.data() + t * dim, dim);
    if (c.is_moe() && l + 1 < c.n_layers && experts_->wants_prefetch()) predict_next_experts(l, n_tok, pool);
  }

  const int64_t first = all_logits ? 0 : n_tok - 1;
  const int64_t n_out = n_tok - first;
  for (int64_t t = first; t < n_tok; ++t) {
    rms_norm(x_.data() + t * dim, f32_data(weights_.output_norm), xb_.data() + (t - first) * dim, dim, c.norm_eps);
  }
  matmul(weights_.output, xb_.data(), logits, n_out, act_, pool);
  return ok_status();
}

Result<const LayerWeights*> Transformer::layer_weights(int64_t layer_idx) {
  const LayerWeights& resident = weights_.layers[static_cast<size_t>(layer_idx)];
  if (sources_.layers == nullptr) return &resident;
  SNIPER_TRY(sources_.layers->acquire(layer_idx));
  streamed_layer_ = resident;
  struct Field {
    QTensor LayerWeights::*member;
    LayerTensor kind;
  };
  static constexpr Field kFields[] = {
      {&LayerWeights::wq, LayerTensor::kAttnQ},         {&LayerWeights::wk, LayerTensor::kAttnK},
      {&LayerWeights::wv, LayerTensor::kAttnV},         {&LayerWeights::wo, LayerTensor::kAttnOutput},
      {&LayerWeights::ffn_gate, LayerTensor::kFfnGate}, {&LayerWeights::ffn_up, LayerTensor::kFfnUp},
      {&LayerWeights::ffn_down, LayerTensor::kFfnDown},
  };
  for (const Field& f : kFields) {
    QTensor& t = streamed_layer_.*f.member;
    if (t.data != nullptr) continue;
    const QTensor* v = sources_.layers->find(layer_tensor_name(layer_idx, f.kind));
    CHECK(v != nullptr, "layer %ld: tensor %s is neither resident nor streamed", static_cast<long>(layer_idx),
          layer_tensor_name(layer_idx, f.kind).c_str());
    t = *v;
  }
  return &streamed_layer_;
}

void Transformer::attention_block(int64_t layer_idx, const LayerWeights& lw, int64_t n_tok, int64_t pos0, KvCache& kv,
                                  ThreadPool& pool) {
  const ModelConfig& c = config_;
  const int64_t dim = c.dim, q_dim = c.q_dim(), kv_dim = c.kv_dim(), hd = c.head_dim;
  ActCache acts(act_bufs_, 3);
  // q, k and v in one parallel pass (k and v are small: alone, each would pay a pass's
  // hand-out and barrier for a few chunks); results equal three matmul_q calls bit for bit.
  const MatmulJob qkv[3] = {{&lw.wq, acts.get(lw.wq.type, xb_.data(), dim, n_tok, pool), q_.data(), q_dim},
                            {&lw.wk, acts.get(lw.wk.type, xb_.data(), dim, n_tok, pool), k_.data(), kv_dim},
                            {&lw.wv, acts.get(lw.wv.type, xb_.data(), dim, n_tok, pool), v_.data(), kv_dim}};
  matmul_q_multi(qkv, pool, selected_tier(), MatmulOrder::kAuto);
  add_bias(q_.data(), lw.bq, n_tok, q_dim);
  add_bias(k_.data(), lw.bk, n_tok, kv_dim);
  add_bias(v_.data(), lw.bv, n_tok, kv_dim);

  const int64_t half = c.rope_dims / 2;
  for (int64_t t = 0; t < n_tok; ++t) {
    float* qt = q_.data() + t * q_dim;
    float* kt = k_.data() + t * kv_dim;
    if (c.qk_norm) {
      for (int64_t h = 0; h < c.n_heads; ++h) rms_norm(qt + h * hd, f32_data(lw.q_norm), qt + h * hd, hd, c.norm_eps);
      for (int64_t h = 0; h < c.n_kv_heads; ++h) rms_norm(kt + h * hd, f32_data(lw.k_norm), kt + h * hd, hd, c.norm_eps);
    }
    rope_apply(qt, c.n_heads, hd, c.rope_dims, c.rope_style, rope_cos_.data() + t * half, rope_sin_.data() + t * half);
    rope_apply(kt, c.n_kv_heads, hd, c.rope_dims, c.rope_style, rope_cos_.data() + t * half, rope_sin_.data() + t * half);
    kv.store(layer_idx, pos0 + t, kt, v_.data() + t * kv_dim);
  }

  // Attention: one work item per (token, kv head): the query heads sharing a kv head read its K
  // and V once. Items are spread over the pool.
  const AttentionLayout& layout = kv.layout();
  const AttentionBatch batch = attention_batch(layout, pos0, n_tok);
  const int64_t group = c.n_heads / c.n_kv_heads;
  const size_t need = attention_scratch_bytes(layout, batch.n_kv_padded, group);
  const size_t stride = (need + 63) / 64 * 64;
  const size_t n_threads = static_cast<size_t>(pool.n_threads());
  if (att_scratch_.size() < stride * n_threads + 64) att_scratch_.resize(stride * n_threads + 64);
  uint8_t* scratch_base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(att_scratch_.data()) + 63) & ~uintptr_t{63});
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const uint8_t* k_rows = kv.k_rows(layer_idx);
  const uint8_t* v_rows = kv.v_rows(layer_idx);
  const int64_t n_items = n_tok * c.n_kv_heads;
  std::atomic<int64_t> next{0};
  pool.run([&](int thread_idx, int) {
    uint8_t* scratch = scratch_base + stride * static_cast<size_t>(thread_idx);
    for (;;) {
      const int64_t item = next.fetch_add(1, std::memory_order_relaxed);
      if (item >= n_items) break;
      const int64_t t = item / c.n_kv_heads, kvh = item % c.n_kv_heads;
      const int64_t off = t * q_dim + kvh * group * hd;
      attend_group(layout, batch, q_.data() + off, k_rows, v_rows, kvh, group, pos0 + t + 1, scale, att_.data() + off,
                   scratch);
    }
  });

  matmul(lw.wo, att_.data(), ffn_out_.data(), n_tok, act_, pool);
  for (int64_t t = 0; t < n_tok; ++t) add_inplace(x_.data() + t * dim, ffn_out_.data() + t * dim, dim);
}

void Transformer::dense_ffn(const LayerWeights& lw, int64_t n_tok, ThreadPool& pool) {
  const int64_t dim = config_.dim, ff = config_.hidden_dim;
  ActCache acts(act_bufs_, 3);
  // gate and up in one parallel pass (one hand-out and barrier instead of two); the same bits as
  // two matmul_q calls.
  const MatmulJob gate_up[2] = {{&lw.ffn_gate, acts.get(lw.ffn_gate.type, xb_.data(), dim, n_tok, pool), hb_.data(), ff},
                                {&lw.ffn_up, acts.get(lw.ffn_up.type, xb_.data(), dim, n_tok, pool), hb2_.data(), ff}};
  matmul_q_multi(gate_up, pool, selected_tier(), MatmulOrder::kAuto);
  // Row by row: ggml's swiglu splits each row into 16-wide SIMD blocks and a scalar tail.
  for (int64_t t = 0; t < n_tok; ++t) silu_mul(hb_.data() + t * ff, hb2_.data() + t * ff, hb_.data() + t * ff, ff);
  matmul(lw.ffn_down, hb_.data(), ffn_out_.data(), n_tok, act_, pool);
}

Status Transformer::moe_ffn(int64_t layer_idx, const LayerWeights& lw, int64_t n_tok, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const int64_t dim = c.dim, n_exp = c.n_experts, k = c.n_experts_active;
  // Routing: softmax over all experts, top-k, renormalise the selected weights.
  matmul(lw.router, xb_.data(), router_.data(), n_tok, act_, pool);
  std::fill(used_.begin(), used_.end(), 0);
  for (int64_t t = 0; t < n_tok; ++t) {
    float* probs = router_.data() + t * n_exp;
    softmax(probs, n_exp);
    int32_t* sel = sel_.data() + t * k;
    float* w = sel_w_.data() + t * k;
    top_k(probs, n_exp, k, sel);
    if (routing_bias_.keep > 0) bias_routing(layer_idx, probs, sel);
    double sum = 0.0;
    for (int64_t i = 0; i < k; ++i) {
      w[i] = probs[sel[i]];
      sum += static_cast<double>(w[i]);
      used_[static_cast<size_t>(sel[i])] = 1;
    }
    if (c.moe_norm_topk) {
      const float s = static_cast<float>(sum);
      for (int64_t i = 0; i < k; ++i) w[i] /= s;
    }
  }
  union_.clear();
  for (int64_t e = 0; e < n_exp; ++e) {
    if (used_[static_cast<size_t>(e)]) union_.push_back(static_cast<int32_t>(e));
  }
  // Each expert runs once over the tokens routed to it, in whatever order the source delivers
  // them; outputs land in their (token, slot) and are summed in slot order below, so the result
  // does not depend on the delivery order.
  // A decode step over views that stay valid runs all its experts together (two parallel passes).
  // So does a chunk (run_experts); views that change with each next_ready() run one by one.
  const bool together = experts_->views_stable();
  if (!together || n_tok > 1) route_by_expert(n_tok);
  group_.clear();
  SNIPER_TRY(experts_->begin_layer(layer_idx, union_));
  // A decode step guesses the next layer's experts now, from the residual entering this FFN,
  // so their reads queue behind this layer's and land while its experts compute (guessing only
  // after the FFN left the SSD idle for the whole expert compute). The guess after the FFN
  // below still adds what this one missed. A chunk's union covers most experts and its reads
  // would compete with this layer's for slots, so chunks guess only after the FFN.
  if (n_tok == 1 && layer_idx + 1 < c.n_layers && experts_->wants_prefetch()) predict_next_experts(layer_idx, n_tok, pool);
  for (;;) {
    auto ready = experts_->next_ready();
    if (!ready.ok()) {
      experts_->end_layer();
      return ready.error();
    }
    if (ready->expert < 0) break;
    if (together) {
      group_.push_back(*ready);
    } else {
      const ReadyExpert one = *ready;
      run_experts(std::span<const ReadyExpert>(&one, 1), pool);
    }
  }
  if (together && n_tok == 1) run_experts_one_token(group_, pool);
  if (together && n_tok > 1) run_experts(group_, pool);
  experts_->end_layer();
  for (int64_t t = 0; t < n_tok; ++t) {
    float* out = ffn_out_.data() + t * dim;
    std::memcpy(out, exp_out_.data() + t * k * dim, sizeof(float) * static_cast<size_t>(dim));
    for (int64_t i = 1; i < k; ++i) add_inplace(out, exp_out_.data() + (t * k + i) * dim, dim);
  }
  return ok_status();
}

void Transformer::bias_routing(int64_t layer_idx, const float* probs, int32_t* sel) {
  const int64_t k = config_.n_experts_active, keep = routing_bias_.keep, window = routing_bias_.window;
  window_.resize(static_cast<size_t>(window));
  top_k(probs, config_.n_experts, window, window_.data());
  int32_t chosen[64];
  int64_t n = 0;
  auto taken = [&](int32_t e) { return std::find(chosen, chosen + n, e) != chosen + n; };
  for (int64_t i = 0; i < keep; ++i) chosen[n++] = sel[i];
  for (int64_t i = keep; i < window && n < k; ++i) {
    const int32_t e = window_[static_cast<size_t>(i)];
    if (!taken(e) && experts_->is_cached(layer_idx, e)) chosen[n++] = e;
  }
  for (int64_t i = keep; i < k && n < k; ++i) {
    if (!taken(sel[i])) chosen[n++] = sel[i];
  }
  for (int64_t i = 0; i < k; ++i) {
    routing_stats_.selections++;
    if (std::find(sel, sel + k, chosen[i]) == sel + k) routing_stats_.changed++;
  }
  std::copy(chosen, chosen + k, sel);
}

void Transformer::route_by_expert(int64_t n_tok) {
  const int64_t k = config_.n_experts_active, n_exp = config_.n_experts;
  std::fill(route_start_.begin(), route_start_.end(), 0);
  for (int64_t i = 0; i < n_tok * k; ++i) ++route_start_[static_cast<size_t>(sel_[static_cast<size_t>(i)]) + 1];
  for (int64_t e = 0; e < n_exp; ++e) route_start_[static_cast<size_t>(e) + 1] += route_start_[static_cast<size_t>(e)];
  std::copy(route_start_.begin(), route_start_.end() - 1, route_next_.begin());
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t i = 0; i < k; ++i) {
      const size_t at = static_cast<size_t>(route_next_[static_cast<size_t>(sel_[static_cast<size_t>(t * k + i)])]++);
      route_tok_[at] = static_cast<int32_t>(t);
      route_slot_[at] = static_cast<int32_t>(i);
    }
  }
}

void Transformer::run_experts(std::span<const ReadyExpert> experts, ThreadPool& pool) {
  const int64_t dim = config_.dim, ff = config_.expert_hidden_dim, k = config_.n_experts_active;
  auto first_row = [&](int32_t e) { return static_cast<int64_t>(route_start_[static_cast<size_t>(e)]); };
  auto n_rows = [&](int32_t e) { return route_start_[static_cast<size_t>(e) + 1] - first_row(e); };

  constexpr size_t kMaxGroup = kMaxMatmulJobs / 2;
  MatmulJob jobs[kMaxMatmulJobs];
  int64_t offset[kMaxGroup];
  for (size_t g0 = 0; g0 < experts.size();) {
    // The group [g0, g1): experts of the same types whose rows fit the [B] buffers (one expert's
    // rows always do: a token routes to an expert at most once).
    const ExpertView& first = experts[g0].view;
    int64_t rows = 0;
    size_t g1 = g0;
    while (g1 < experts.size() && g1 - g0 < kMaxGroup) {
      const ExpertView& v = experts[g1].view;
      if (v.gate.type != first.gate.type || v.up.type != first.up.type || v.down.type != first.down.type) break;
      const int64_t n = n_rows(experts[g1].expert);
      if (g1 > g0 && rows + n > max_batch_) break;
      offset[g1 - g0] = rows;
      rows += n;
      ++g1;
    }
    CHECK(rows <= max_batch_, "a group of experts has %ld routed rows, its buffers hold %ld", static_cast<long>(rows),
          static_cast<long>(max_batch_));
    const size_t ng = g1 - g0;
    if (rows == 0) {  // handed out but routed no token (a source may deliver more than asked)
      g0 = g1;
      continue;
    }
    for (size_t i = 0; i < ng; ++i) {
      const int64_t r0 = first_row(experts[g0 + i].expert), n = n_rows(experts[g0 + i].expert);
      for (int64_t r = 0; r < n; ++r) {
        std::memcpy(gathered_.data() + (offset[i] + r) * dim, xb_.data() + route_tok_[static_cast<size_t>(r0 + r)] * dim,
                    sizeof(float) * static_cast<size_t>(dim));
      }
    }
    // An expert's rows of a quantized group: rows [offset, offset + n) of all.
    auto part = [](const QuantizedActs& all, int64_t off, int64_t n) {
      QuantizedActs a = all;
      a.n_tok = n;
      a.data = all.data + static_cast<size_t>(off) * all.row_bytes;
      return a;
    };
    ActCache acts(act_bufs_, 3);
    const QuantizedActs& gate_in = acts.get(first.gate.type, gathered_.data(), dim, rows, pool);
    const QuantizedActs& up_in = acts.get(first.up.type, gathered_.data(), dim, rows, pool);
    size_t n_jobs = 0;
    for (size_t i = 0; i < ng; ++i) {
      const int64_t n = n_rows(experts[g0 + i].expert);
      if (n == 0) continue;
      const ExpertView& v = experts[g0 + i].view;
      jobs[n_jobs++] = {&v.gate, part(gate_in, offset[i], n), hb_.data() + offset[i] * ff, ff};
      jobs[n_jobs++] = {&v.up, part(up_in, offset[i], n), hb2_.data() + offset[i] * ff, ff};
    }
    matmul_q_multi(std::span<const MatmulJob>(jobs, n_jobs), pool, selected_tier(), MatmulOrder::kVecDot);
    pool.parallel_for(rows, 16, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) silu_mul(hb_.data() + r * ff, hb2_.data() + r * ff, hb_.data() + r * ff, ff);
    });
    const QuantizedActs down_in =
        quantize_acts(get_kernels(first.down.type).vec_dot_type, hb_.data(), ff, rows, ff, act_, pool);
    n_jobs = 0;
    for (size_t i = 0; i < ng; ++i) {
      const int64_t n = n_rows(experts[g0 + i].expert);
      if (n == 0) continue;
      jobs[n_jobs++] = {&experts[g0 + i].view.down, part(down_in, offset[i], n), down_.data() + offset[i] * dim, dim};
    }
    matmul_q_multi(std::span<const MatmulJob>(jobs, n_jobs), pool, selected_tier(), MatmulOrder::kVecDot);
    // Each row, scaled by its routing weight, to its (token, slot).
    for (size_t i = 0; i < ng; ++i) {
      const int64_t r0 = first_row(experts[g0 + i].expert), n = n_rows(experts[g0 + i].expert);
      for (int64_t r = 0; r < n; ++r) {
        const int64_t t = route_tok_[static_cast<size_t>(r0 + r)], slot = route_slot_[static_cast<size_t>(r0 + r)];
        const float w = sel_w_[static_cast<size_t>(t * k + slot)];
        float* dst = exp_out_.data() + (t * k + slot) * dim;
        const float* src = down_.data() + (offset[i] + r) * dim;
        for (int64_t d = 0; d < dim; ++d) dst[d] = src[d] * w;
      }
    }
    g0 = g1;
  }
}

void Transformer::run_experts_one_token(std::span<const ReadyExpert> experts, ThreadPool& pool) {
  const int64_t dim = config_.dim, ff = config_.expert_hidden_dim, k = config_.n_experts_active;
  const size_t n = experts.size();
  if (n == 0) return;
  CHECK(static_cast<int64_t>(n) <= k, "%zu experts for one token, at most %ld", n, static_cast<long>(k));
  // The token's input row, quantized once per activation type (all experts of a layer share
  // their types, but a packed file could mix them).
  ActCache acts(act_bufs_, 3);
  MatmulJob jobs[2 * 64];
  for (size_t i = 0; i < n; ++i) {
    const ExpertView& ex = experts[i].view;
    jobs[2 * i] = {&ex.gate, acts.get(ex.gate.type, xb_.data(), dim, 1, pool), group_hb_.data() + i * ff, ff};
    jobs[2 * i + 1] = {&ex.up, acts.get(ex.up.type, xb_.data(), dim, 1, pool), group_hb2_.data() + i * ff, ff};
  }
  matmul_q_multi(std::span<const MatmulJob>(jobs, 2 * n), pool, selected_tier(), MatmulOrder::kVecDot);
  for (size_t i = 0; i < n; ++i) {
    silu_mul(group_hb_.data() + i * ff, group_hb2_.data() + i * ff, group_hb_.data() + i * ff, ff);
  }
  // Down: each expert's activation row quantized for its down type, then all downs at once.
  const GgmlType down_type = experts[0].view.down.type;
  bool same_type = true;
  for (size_t i = 1; i < n; ++i) same_type = same_type && experts[i].view.down.type == down_type;
  if (same_type) {
    const QuantizedActs all = quantize_acts(get_kernels(down_type).vec_dot_type, group_hb_.data(), ff,
                                            static_cast<int64_t>(n), ff, act_, pool);
    for (size_t i = 0; i < n; ++i) {
      QuantizedActs row = all;
      row.n_tok = 1;
      row.data = all.data + i * all.row_bytes;
      jobs[i] = {&experts[i].view.down, row, group_down_.data() + i * dim, dim};
    }
    matmul_q_multi(std::span<const MatmulJob>(jobs, n), pool, selected_tier(), MatmulOrder::kVecDot);
  } else {
    for (size_t i = 0; i < n; ++i) {
      matmul(experts[i].view.down, group_hb_.data() + i * ff, group_down_.data() + i * dim, 1, act_, pool,
             selected_tier(), MatmulOrder::kVecDot);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    for (int64_t slot = 0; slot < k; ++slot) {
      if (sel_[static_cast<size_t>(slot)] != experts[i].expert) continue;
      const float w = sel_w_[static_cast<size_t>(slot)];
      float* dst = exp_out_.data() + slot * dim;
      const float* src = group_down_.data() + i * dim;
      for (int64_t d = 0; d < dim; ++d) dst[d] = src[d] * w;
    }
  }
}

void Transformer::predict_next_experts(int64_t layer_idx, int64_t n_tok, ThreadPool& pool) {
  // Layer L+d's router applied to the hidden state leaving layer L: a cheap guess at the routing
  // of the next prefetch_depth() layers, nearest first, so the SSD always has work queued.
  // Wrong guesses cost bandwidth, never correctness.
  const int64_t depth = std::max<int64_t>(1, experts_->prefetch_depth());
  for (int64_t d = 1; d <= depth && layer_idx + d < config_.n_layers; ++d) predict_layer_experts(layer_idx + d, n_tok, pool);
}

void Transformer::predict_layer_experts(int64_t target_layer, int64_t n_tok, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const LayerWeights& next = weights_.layers[static_cast<size_t>(target_layer)];
  const int64_t dim = c.dim, n_exp = c.n_experts, k = c.n_experts_active;
  for (int64_t t = 0; t < n_tok; ++t) {
    rms_norm(x_.data() + t * dim, f32_data(next.ffn_norm), gathered_.data() + t * dim, dim, c.norm_eps);
  }
  matmul(next.router, gathered_.data(), router_.data(), n_tok, act_, pool);
  std::fill(used_.begin(), used_.end(), 0);
  int32_t top[64];
  const int64_t kk = std::min<int64_t>(k, 64);
  for (int64_t t = 0; t < n_tok; ++t) {
    top_k(router_.data() + t * n_exp, n_exp, kk, top);
    for (int64_t i = 0; i < kk; ++i) used_[static_cast<size_t>(top[i])] = 1;
  }
  union_.clear();
  for (int64_t e = 0; e < n_exp; ++e) {
    if (used_[static_cast<size_t>(e)]) union_.push_back(static_cast<int32_t>(e));
  }
  experts_->prefetch(target_layer, union_);
}

}  // namespace sniper
