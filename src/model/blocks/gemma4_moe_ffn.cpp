// SPDX-License-Identifier: MIT
#include "model/blocks/gemma4_moe_ffn.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/activations.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"

namespace sniper {

namespace {
// Rows [r0, r0 + n) of a 2-D matrix.
QTensor row_range(const QTensor& m, int64_t r0, int64_t n) {
  QTensor t = m;
  t.ne = {m.ne[0], n, 1, 1};
  t.data = m.data + m.row_bytes * static_cast<size_t>(r0);
  return t;
}
}  // namespace

std::vector<std::vector<ExpertView>> Gemma4MoeFfn::resident_views(const ModelConfig& c, const ModelWeights& w) {
  std::vector<std::vector<ExpertView>> views(w.layers.size());
  const int64_t eff = c.expert_hidden_dim;
  for (size_t l = 0; l < w.layers.size(); ++l) {
    if (c.layers[l].ffn != FfnKind::kGemma4Moe) continue;
    const LayerWeights& lw = w.layers[l];
    CHECK(lw.gate_up_exps.data != nullptr, "layer %zu: experts are not resident and no expert source was given", l);
    for (int64_t e = 0; e < c.n_experts; ++e) {
      const QTensor gu = lw.gate_up_exps.matrix(e);
      views[l].push_back({row_range(gu, 0, eff), row_range(gu, eff, eff), lw.down_exps.matrix(e)});
    }
  }
  return views;
}

Gemma4MoeFfn::Gemma4MoeFfn(const ModelConfig& config, const ModelWeights& weights, int64_t max_batch,
                           ExpertSource* experts)
    : config_(config), weights_(weights), mlp_(config, max_batch), experts_(experts) {
  const size_t B = static_cast<size_t>(max_batch), dim = static_cast<size_t>(config.dim);
  const size_t k = static_cast<size_t>(config.n_experts_active), eff = static_cast<size_t>(config.expert_hidden_dim);
  m_.resize(B * dim);
  he_.resize(B * dim);
  rin_.resize(B * dim);
  router_.resize(B * static_cast<size_t>(config.n_experts));
  sel_.resize(B * k);
  sel_w_.resize(B * k);
  used_.resize(static_cast<size_t>(config.n_experts));
  union_.reserve(static_cast<size_t>(config.n_experts));
  predicted_.reserve(static_cast<size_t>(config.n_experts));
  rows_tok_.resize(B);
  rows_slot_.resize(B);
  gathered_.resize(B * dim);
  hg_.resize(B * eff);
  hu_.resize(B * eff);
  down_.resize(B * dim);
  exp_out_.resize(B * k * dim);
  if (experts_ == nullptr) {
    resident_ = std::make_unique<ResidentExperts>(resident_views(config, weights));
    experts_ = resident_.get();
  }
}

size_t Gemma4MoeFfn::scratch_bytes() const {
  const size_t floats = m_.size() + he_.size() + rin_.size() + router_.size() + sel_w_.size() + gathered_.size() +
                        hg_.size() + hu_.size() + down_.size() + exp_out_.size();
  return floats * sizeof(float) + (sel_.size() + rows_tok_.size() + rows_slot_.size()) * sizeof(int32_t) +
         mlp_.scratch_bytes();
}

Status Gemma4MoeFfn::forward(int64_t layer_idx, const LayerWeights& lw, const BlockIo& io) {
  const ModelConfig& c = config_;
  const int64_t dim = c.dim, n_tok = io.n_tok, n_exp = c.n_experts, k = c.n_experts_active;
  ThreadPool& pool = *io.pool;
  n_tok_ = n_tok;
  // The MLP beside the experts.
  mlp_.gelu_mlp(lw, c.layer(layer_idx).ffn_dim, io, m_.data());
  for (int64_t t = 0; t < n_tok; ++t)
    rms_norm(m_.data() + t * dim, f32_data(lw.post_ffw_norm_1), m_.data() + t * dim, dim, c.norm_eps);

  // Routing from the residual x1.
  const float inv_sqrt_dim = 1.0f / std::sqrt(static_cast<float>(dim));
  const float* rscale = f32_data(lw.router_scale);
  for (int64_t t = 0; t < n_tok; ++t) {
    float* r = rin_.data() + t * dim;
    rms_norm(io.x + t * dim, nullptr, r, dim, c.norm_eps);
    for (int64_t i = 0; i < dim; ++i) r[i] = (r[i] * inv_sqrt_dim) * rscale[i];
    rms_norm(io.x + t * dim, f32_data(lw.pre_ffw_norm_2), he_.data() + t * dim, dim, c.norm_eps);
  }
  matmul(lw.router, rin_.data(), router_.data(), n_tok, io.buffers->act, pool);
  std::fill(used_.begin(), used_.end(), 0);
  for (int64_t t = 0; t < n_tok; ++t) {
    float* probs = router_.data() + t * n_exp;
    softmax(probs, n_exp);
    int32_t* sel = sel_.data() + t * k;
    float* w = sel_w_.data() + t * k;
    top_k(probs, n_exp, k, sel);
    // The selected weights' sum in double, rounded once (ggml_sum_rows), as MoeFfn does.
    double sum = 0.0;
    for (int64_t i = 0; i < k; ++i) {
      w[i] = probs[sel[i]];
      sum += static_cast<double>(w[i]);
      used_[static_cast<size_t>(sel[i])] = 1;
    }
    const float s = static_cast<float>(sum);
    for (int64_t i = 0; i < k; ++i) w[i] /= s;
  }
  union_.clear();
  for (int64_t e = 0; e < n_exp; ++e) {
    if (used_[static_cast<size_t>(e)]) union_.push_back(static_cast<int32_t>(e));
  }
  // Each expert once over its tokens, in the order the source delivers them; outputs land in
  // their (token, slot) and are summed in slot order below.
  SNIPER_TRY(experts_->begin_layer(layer_idx, union_));
  // The next layers' experts, guessed now so that their reads land while this layer's experts
  // compute (rin_ and router_ are free again: routing is done).
  if (experts_->wants_prefetch()) predict_next_experts(layer_idx, io.x, n_tok, *io.buffers, pool);
  for (;;) {
    if (!experts_->next_is_ready()) pool.park();  // about to wait for a read
    auto ready = experts_->next_ready();
    if (!ready.ok()) {
      experts_->end_layer();
      return ready.error();
    }
    if (ready->expert < 0) break;
    run_expert(*ready, lw, pool, *io.buffers);
  }
  experts_->end_layer();

  for (int64_t t = 0; t < n_tok; ++t) {
    float* s = down_.data() + t * dim;
    std::memcpy(s, exp_out_.data() + t * k * dim, sizeof(float) * static_cast<size_t>(dim));
    for (int64_t i = 1; i < k; ++i) add_inplace(s, exp_out_.data() + (t * k + i) * dim, dim);
    rms_norm(s, f32_data(lw.post_ffw_norm_2), s, dim, c.norm_eps);
    float* out = io.out + t * dim;
    const float* m = m_.data() + t * dim;
    for (int64_t i = 0; i < dim; ++i) out[i] = m[i] + s[i];
    rms_norm(out, f32_data(lw.post_ffw_norm), out, dim, c.norm_eps);
  }
  return ok_status();
}

void Gemma4MoeFfn::after_layer(int64_t layer_idx, const BlockIo& io) {
  if (experts_->wants_prefetch()) predict_next_experts(layer_idx, io.x, io.n_tok, *io.buffers, *io.pool);
}

void Gemma4MoeFfn::predict_next_experts(int64_t layer_idx, const float* x, int64_t n_tok, BlockBuffers& bufs,
                                        ThreadPool& pool) {
  // The router input as forward() forms it (rms(x) / sqrt(dim) * ffn_gate_inp.scale), with the
  // target layer's scale; top-k of the logits (softmax keeps their order). Wrong guesses cost
  // bandwidth, never correctness.
  const ModelConfig& c = config_;
  const int64_t dim = c.dim, n_exp = c.n_experts, k = std::min<int64_t>(c.n_experts_active, 64);
  const float inv_sqrt_dim = 1.0f / std::sqrt(static_cast<float>(dim));
  const int64_t depth = std::max<int64_t>(1, experts_->prefetch_depth());
  for (int64_t target = layer_idx + 1; target <= layer_idx + depth && target < c.n_layers; ++target) {
    if (c.layer(target).ffn != FfnKind::kGemma4Moe) continue;
    const LayerWeights& next = weights_.layers[static_cast<size_t>(target)];
    const float* rscale = f32_data(next.router_scale);
    for (int64_t t = 0; t < n_tok; ++t) {
      float* r = rin_.data() + t * dim;
      rms_norm(x + t * dim, nullptr, r, dim, c.norm_eps);
      for (int64_t i = 0; i < dim; ++i) r[i] = (r[i] * inv_sqrt_dim) * rscale[i];
    }
    matmul(next.router, rin_.data(), router_.data(), n_tok, bufs.act, pool);
    std::fill(used_.begin(), used_.end(), 0);
    int32_t top[64];
    for (int64_t t = 0; t < n_tok; ++t) {
      top_k(router_.data() + t * n_exp, n_exp, k, top);
      for (int64_t i = 0; i < k; ++i) used_[static_cast<size_t>(top[i])] = 1;
    }
    predicted_.clear();
    for (int64_t e = 0; e < n_exp; ++e) {
      if (used_[static_cast<size_t>(e)]) predicted_.push_back(static_cast<int32_t>(e));
    }
    experts_->prefetch(target, predicted_);
  }
}

void Gemma4MoeFfn::run_expert(const ReadyExpert& ex, const LayerWeights& lw, ThreadPool& pool, BlockBuffers& bufs) {
  const int64_t dim = config_.dim, eff = config_.expert_hidden_dim, k = config_.n_experts_active;
  int64_t rows = 0;
  for (int64_t t = 0; t < n_tok_; ++t) {
    for (int64_t i = 0; i < k; ++i) {
      if (sel_[static_cast<size_t>(t * k + i)] != ex.expert) continue;
      rows_tok_[static_cast<size_t>(rows)] = static_cast<int32_t>(t);
      rows_slot_[static_cast<size_t>(rows)] = static_cast<int32_t>(i);
      std::memcpy(gathered_.data() + rows * dim, he_.data() + t * dim, sizeof(float) * static_cast<size_t>(dim));
      ++rows;
    }
  }
  if (rows == 0) return;  // handed out but routed no token
  ActCache acts(bufs.act_bufs, 3);
  const MatmulJob gate_up[2] = {
      {&ex.view.gate, acts.get(ex.view.gate.type, gathered_.data(), dim, rows, pool), hg_.data(), eff},
      {&ex.view.up, acts.get(ex.view.up.type, gathered_.data(), dim, rows, pool), hu_.data(), eff}};
  matmul_q_multi(gate_up, pool, selected_tier(), MatmulOrder::kVecDot);
  for (int64_t r = 0; r < rows; ++r) geglu(hg_.data() + r * eff, hu_.data() + r * eff, hg_.data() + r * eff, eff);
  matmul(ex.view.down, hg_.data(), down_.data(), rows, bufs.act, pool, selected_tier(), MatmulOrder::kVecDot);
  const float scale = f32_data(lw.down_exps_scale)[ex.expert];
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = rows_tok_[static_cast<size_t>(r)], slot = rows_slot_[static_cast<size_t>(r)];
    const float w = sel_w_[static_cast<size_t>(t * k + slot)];
    float* dst = exp_out_.data() + (t * k + slot) * dim;
    const float* src = down_.data() + r * dim;
    for (int64_t d = 0; d < dim; ++d) dst[d] = (src[d] * scale) * w;
  }
}

}  // namespace sniper
