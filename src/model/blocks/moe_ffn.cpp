// SPDX-License-Identifier: MIT
#include "model/blocks/moe_ffn.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/activations.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "model/blocks/dense_ffn.h"

namespace sniper {

namespace {

TensorShape dim_only(const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim); }
TensorShape expert_in(const ModelConfig& c, const LayerPlan&) {
  return tensor_shape(c.dim, c.expert_hidden_dim, c.n_experts);
}
TensorShape expert_down(const ModelConfig& c, const LayerPlan&) {
  return tensor_shape(c.expert_hidden_dim, c.dim, c.n_experts);
}
TensorShape one_expert_in(const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim, c.expert_hidden_dim); }
TensorShape one_expert_down(const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.expert_hidden_dim, c.dim); }
TensorShape shexp_in(const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim, c.shared_expert_hidden_dim); }
bool merged_split(const ModelConfig& c, const LayerPlan& lp) { return !c.packed_experts && !lp.expert_fused_gate_up; }
bool merged_fused(const ModelConfig& c, const LayerPlan& lp) { return !c.packed_experts && lp.expert_fused_gate_up; }
bool merged(const ModelConfig& c, const LayerPlan&) { return !c.packed_experts; }
bool packed(const ModelConfig& c, const LayerPlan&) { return c.packed_experts; }
bool gated_shared(const ModelConfig&, const LayerPlan& lp) { return lp.shared_expert == SharedExpert::kGated; }

constexpr LayerTensorSpec kTable[] = {
    {"ffn_gate_inp.weight", &LayerWeights::router,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim, c.n_experts); }, TensorRole::kAlways,
     TensorType::kMatrix, false, nullptr},
    {"ffn_gate_inp.scale", &LayerWeights::router_scale, dim_only, TensorRole::kAlways, TensorType::kF32, false,
     [](const ModelConfig&, const LayerPlan& lp) { return lp.router_input == RouterInput::kScaledResidual; }},
    {"pre_ffw_norm_2.weight", &LayerWeights::pre_ffw_norm_2, dim_only, TensorRole::kAlways, TensorType::kF32, false,
     [](const ModelConfig&, const LayerPlan& lp) { return lp.expert_input_norm; }},
    {"ffn_gate_exps.weight", &LayerWeights::gate_exps, expert_in, TensorRole::kExpert, TensorType::kMatrix, false,
     merged_split, ExpertPart::kGate},
    {"ffn_up_exps.weight", &LayerWeights::up_exps, expert_in, TensorRole::kExpert, TensorType::kMatrix, false,
     merged_split, ExpertPart::kUp},
    {"ffn_gate_up_exps.weight", &LayerWeights::gate_up_exps,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim, 2 * c.expert_hidden_dim, c.n_experts); },
     TensorRole::kExpert, TensorType::kMatrix, false, merged_fused, ExpertPart::kGateUp},
    {"ffn_down_exps.weight", &LayerWeights::down_exps, expert_down, TensorRole::kExpert, TensorType::kMatrix, false,
     merged, ExpertPart::kDown},
    {"ffn_gate.{E}.weight", nullptr, one_expert_in, TensorRole::kExpert, TensorType::kMatrix, false, packed,
     ExpertPart::kGate},
    {"ffn_up.{E}.weight", nullptr, one_expert_in, TensorRole::kExpert, TensorType::kMatrix, false, packed,
     ExpertPart::kUp},
    {"ffn_down.{E}.weight", nullptr, one_expert_down, TensorRole::kExpert, TensorType::kMatrix, false, packed,
     ExpertPart::kDown},
    // Small and read by every token: resident.
    {"ffn_down_exps.scale", &LayerWeights::down_exps_scale,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.n_experts); }, TensorRole::kAlways,
     TensorType::kF32, false, [](const ModelConfig&, const LayerPlan& lp) { return lp.expert_scale; }},
    // The gated shared expert runs for every token: resident.
    {"ffn_gate_inp_shexp.weight", &LayerWeights::shexp_gate_inp, dim_only, TensorRole::kAlways, TensorType::kF32, false,
     gated_shared},
    {"ffn_gate_shexp.weight", &LayerWeights::shexp_gate, shexp_in, TensorRole::kAlways, TensorType::kMatrix, false,
     gated_shared},
    {"ffn_up_shexp.weight", &LayerWeights::shexp_up, shexp_in, TensorRole::kAlways, TensorType::kMatrix, false,
     gated_shared},
    {"ffn_down_shexp.weight", &LayerWeights::shexp_down,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.shared_expert_hidden_dim, c.dim); },
     TensorRole::kAlways, TensorType::kMatrix, false, gated_shared},
    {"post_ffw_norm_1.weight", &LayerWeights::post_ffw_norm_1, dim_only, TensorRole::kAlways, TensorType::kF32, false,
     [](const ModelConfig&, const LayerPlan& lp) { return lp.shared_post_norm; }},
    {"post_ffw_norm_2.weight", &LayerWeights::post_ffw_norm_2, dim_only, TensorRole::kAlways, TensorType::kF32, false,
     [](const ModelConfig&, const LayerPlan& lp) { return lp.routed_post_norm; }},
};

}  // namespace

std::span<const LayerTensorSpec> MoeFfn::tensor_table() { return kTable; }

namespace {

// The widest shared expert of the MoE layers: its gate / activation rows (0: none), and its up
// rows (gate | up when fused).
size_t shared_floats(const ModelConfig& c, int64_t B, bool up) {
  int64_t ff = 0;
  for (const LayerPlan& lp : c.layers) {
    if (lp.ffn != FfnKind::kMoe || lp.shared_expert == SharedExpert::kNone) continue;
    const int64_t w = lp.shared_expert == SharedExpert::kGated ? c.shared_expert_hidden_dim : lp.ffn_dim;
    ff = std::max(ff, up && lp.shared_expert == SharedExpert::kUngated && lp.ffn_fused_gate_up ? 2 * w : w);
  }
  return rows(B, ff);
}
bool any_shared(const ModelConfig& c) { return shared_floats(c, 1, false) > 0; }

}  // namespace

std::span<const ScratchEntry<MoeFfn>> MoeFfn::scratch_table() {
  using C = const ModelConfig&;
  constexpr auto dims = [](C c, int64_t B) { return rows(B, c.dim); };
  constexpr auto ffs = [](C c, int64_t B) { return rows(B, c.expert_hidden_dim); };
  constexpr auto slots = [](C c, int64_t B) { return rows(B, c.n_experts_active); };
  constexpr auto k_ffs = [](C c, int64_t) { return rows(c.n_experts_active, c.expert_hidden_dim); };
  static constexpr ScratchEntry<MoeFfn> kScratch[] = {
      {&MoeFfn::he_, nullptr,
       [](C c, int64_t B) {
         bool norm = false;
         for (const LayerPlan& lp : c.layers) norm = norm || (lp.ffn == FfnKind::kMoe && lp.expert_input_norm);
         return norm ? rows(B, c.dim) : 0;
       }},
      {&MoeFfn::hb_, nullptr, ffs},
      {&MoeFfn::hb2_, nullptr, ffs},
      {&MoeFfn::router_, nullptr, [](C c, int64_t B) { return rows(B, c.n_experts); }},
      {nullptr, &MoeFfn::sel_, slots},
      {&MoeFfn::sel_w_, nullptr, slots},
      {&MoeFfn::exp_out_, nullptr, [](C c, int64_t B) { return rows(B, c.n_experts_active * c.dim); }},
      {&MoeFfn::gathered_, nullptr, dims},
      {&MoeFfn::down_, nullptr, dims},
      {nullptr, &MoeFfn::route_start_, [](C c, int64_t) { return static_cast<size_t>(c.n_experts) + 1; }},
      {nullptr, &MoeFfn::route_next_, [](C c, int64_t) { return static_cast<size_t>(c.n_experts); }},
      {nullptr, &MoeFfn::route_tok_, slots},
      {nullptr, &MoeFfn::route_slot_, slots},
      {&MoeFfn::group_hb_, nullptr, k_ffs},
      {&MoeFfn::group_hb2_, nullptr, k_ffs},
      {&MoeFfn::group_down_, nullptr, [](C c, int64_t) { return rows(c.n_experts_active, c.dim); }},
      {&MoeFfn::sh_hb_, nullptr, [](C c, int64_t B) { return shared_floats(c, B, false); }},
      {&MoeFfn::sh_hb2_, nullptr, [](C c, int64_t B) { return shared_floats(c, B, true); }},
      {&MoeFfn::sh_out_, nullptr, [](C c, int64_t B) { return any_shared(c) ? rows(B, c.dim) : 0; }},
      {&MoeFfn::sh_logit_, nullptr, [](C c, int64_t B) { return any_shared(c) ? rows(B, 1) : 0; }},
  };
  return kScratch;
}

size_t MoeFfn::scratch_bound(const ModelConfig& config, int64_t max_batch) {
  return scratch_table_bytes(scratch_table(), config, max_batch);
}

MoeFfn::MoeFfn(const ModelConfig& config, const ModelWeights& weights, int64_t max_batch, ExpertSource* experts)
    : config_(config), weights_(weights), max_batch_(max_batch), experts_(experts) {
  allocate_scratch(*this, scratch_table(), config, max_batch);
  group_.reserve(static_cast<size_t>(config.n_experts));
  union_.reserve(static_cast<size_t>(config.n_experts));
  used_.resize(static_cast<size_t>(config.n_experts));
  seen_.resize(static_cast<size_t>(config.n_experts));
  if (experts_ == nullptr) {
    auto views = resident_expert_views(config, weights);
    CHECK(views.ok(), "%s and no expert source was given", views.ok() ? "" : views.error().message.c_str());
    resident_experts_ = std::make_unique<ResidentExperts>(std::move(views).value());
    experts_ = resident_experts_.get();
  }
}

size_t MoeFfn::scratch_bytes() const { return held_scratch_bytes(*this, scratch_table()); }

Status MoeFfn::forward(int64_t layer_idx, const LayerWeights& lw, const BlockIo& io) {
  const ModelConfig& c = config_;
  const LayerPlan& lp = c.layer(layer_idx);
  const int64_t dim = c.dim, n_tok = io.n_tok;
  x_ = io.x;
  xb_ = io.xb;
  out_ = io.out;
  bufs_ = io.buffers;
  seqs_ = io.seqs;
  lp_ = &lp;
  lw_ = &lw;
  h_ = xb_;
  if (lp.expert_input_norm) {
    for (int64_t t = 0; t < n_tok; ++t) {
      rms_norm(x_ + t * dim, f32_data(lw.pre_ffw_norm_2), he_.data() + t * dim, dim, c.norm_eps);
    }
    h_ = he_.data();
  }
  SNIPER_TRY(moe_ffn(layer_idx, lw, n_tok, *io.pool));
  for (int64_t t = 0; t < n_tok; ++t) {
    if (lp.routed_post_norm) {
      rms_norm(out_ + t * dim, f32_data(lw.post_ffw_norm_2), out_ + t * dim, dim, c.norm_eps);
    }
  }
  if (lp.shared_expert != SharedExpert::kNone) add_shared_expert(lp, n_tok);
  if (lp.ffn_post_norm) {
    for (int64_t t = 0; t < n_tok; ++t) {
      rms_norm(out_ + t * dim, f32_data(lw.post_ffw_norm), out_ + t * dim, dim, c.norm_eps);
    }
  }
  return ok_status();
}

const float* MoeFfn::router_input(const LayerPlan& lp, const LayerWeights& lw, const float* x, const float* xb,
                                  int64_t n_tok, float* buf) const {
  const ModelConfig& c = config_;
  const int64_t dim = c.dim;
  switch (lp.router_input) {
    case RouterInput::kFfnInput:
      if (xb != nullptr) return xb;
      for (int64_t t = 0; t < n_tok; ++t) rms_norm(x + t * dim, f32_data(lw.ffn_norm), buf + t * dim, dim, c.norm_eps);
      return buf;
    case RouterInput::kScaledResidual: {
      const float inv_sqrt_dim = 1.0f / std::sqrt(static_cast<float>(dim));
      const float* scale = f32_data(lw.router_scale);
      for (int64_t t = 0; t < n_tok; ++t) {
        float* r = buf + t * dim;
        rms_norm(x + t * dim, nullptr, r, dim, c.norm_eps);
        for (int64_t i = 0; i < dim; ++i) r[i] = (r[i] * inv_sqrt_dim) * scale[i];
      }
      return buf;
    }
  }
  CHECK(false, "unknown router input %d", static_cast<int>(lp.router_input));
  return nullptr;
}

void MoeFfn::compute_shared_expert(const LayerPlan& lp, const LayerWeights& lw, int64_t n_tok, ThreadPool& pool) {
  const int64_t dim = config_.dim;
  if (lp.shared_expert == SharedExpert::kGated) {
    const GatedMlpWeights w{.gate = &lw.shexp_gate, .up = &lw.shexp_up, .down = &lw.shexp_down};
    run_gated_mlp(w, config_.shared_expert_hidden_dim, lp.ffn_act, xb_, dim, n_tok, sh_hb_.data(), sh_hb2_.data(),
                  sh_out_.data(), *bufs_, pool);
    // The gate's logit: ffn_gate_inp_shexp is one f32 row [dim -> 1].
    matmul(lw.shexp_gate_inp, xb_, sh_logit_.data(), n_tok, bufs_->act, pool);
    return;
  }
  const bool fused = lp.ffn_fused_gate_up;
  const GatedMlpWeights w{.gate = fused ? nullptr : &lw.ffn_gate,
                          .up = fused ? nullptr : &lw.ffn_up,
                          .gate_up = fused ? &lw.ffn_gate_up : nullptr,
                          .down = &lw.ffn_down};
  run_gated_mlp(w, lp.ffn_dim, lp.ffn_act, xb_, dim, n_tok, sh_hb_.data(), sh_hb2_.data(), sh_out_.data(), *bufs_,
                pool);
  if (lp.shared_post_norm) {
    for (int64_t t = 0; t < n_tok; ++t) {
      rms_norm(sh_out_.data() + t * dim, f32_data(lw.post_ffw_norm_1), sh_out_.data() + t * dim, dim, config_.norm_eps);
    }
  }
}

void MoeFfn::add_shared_expert(const LayerPlan& lp, int64_t n_tok) {
  const int64_t dim = config_.dim;
  for (int64_t t = 0; t < n_tok; ++t) {
    float* out = out_ + t * dim;
    const float* sh = sh_out_.data() + t * dim;
    if (lp.shared_expert == SharedExpert::kGated) {
      const float gate = sigmoid(sh_logit_[static_cast<size_t>(t)]);
      for (int64_t i = 0; i < dim; ++i) out[i] += sh[i] * gate;
    } else {
      for (int64_t i = 0; i < dim; ++i) out[i] += sh[i];
    }
  }
}

void MoeFfn::after_layer(int64_t layer_idx, const BlockIo& io) {
  if (layer_idx + 1 >= config_.n_layers || !experts_->wants_prefetch()) return;
  x_ = io.x;
  bufs_ = io.buffers;
  predict_next_experts(layer_idx, io.n_tok, *io.pool);
}

Status MoeFfn::moe_ffn(int64_t layer_idx, const LayerWeights& lw, int64_t n_tok, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const int64_t dim = c.dim, n_exp = c.n_experts, k = c.n_experts_active;
  // Routing: softmax over all experts, top-k, renormalise the selected weights.
  const LayerPlan& lp = c.layer(layer_idx);
  // Per sequence where the router's float order depends on the row count: each row's choice is
  // its own forward's.
  matmul_by_sequence(lw.router, router_input(lp, lw, x_, xb_, n_tok, gathered_.data()), router_.data(), seqs_, n_tok,
                     bufs_->act, pool);
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
  routing_stats_.experts_read += union_.size();
  if (seqs_.size() <= 1) {
    routing_stats_.experts_per_sequence += union_.size();
  } else {
    for (const SeqRows& s : seqs_) {
      if (++stamp_ == 0) {  // wrapped: no stale stamp may match
        std::fill(seen_.begin(), seen_.end(), 0u);
        stamp_ = 1;
      }
      for (int64_t i = s.row0 * k; i < (s.row0 + s.n_tok) * k; ++i) {
        uint32_t& seen = seen_[static_cast<size_t>(sel_[static_cast<size_t>(i)])];
        if (seen != stamp_) {
          seen = stamp_;
          ++routing_stats_.experts_per_sequence;
        }
      }
    }
  }
  // Expert parallel: the pairs routed to other ranks' experts leave first (post_remote keeps only
  // this rank's experts in union_), compute there while this rank runs its own, and land in their
  // (token, slot) rows of exp_out_ before the sum below.
  if (remote_ != nullptr) SNIPER_TRY(post_remote(layer_idx, n_tok));
  Status local = run_routed(layer_idx, n_tok, /*serving=*/false, pool);
  if (remote_ != nullptr) {
    // Collected even after a local failure, so the next layer's exchange starts clean.
    Status got = collect_remote(n_tok);
    if (local.ok()) local = got;
  }
  SNIPER_TRY(local);
  for (int64_t t = 0; t < n_tok; ++t) {
    float* out = out_ + t * dim;
    std::memcpy(out, exp_out_.data() + t * k * dim, sizeof(float) * static_cast<size_t>(dim));
    for (int64_t i = 1; i < k; ++i) add_inplace(out, exp_out_.data() + (t * k + i) * dim, dim);
  }
  return ok_status();
}

Status MoeFfn::run_routed(int64_t layer_idx, int64_t n_tok, bool serving, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const LayerPlan& lp = *lp_;
  group_.clear();
  if (union_.empty()) {  // every routed expert is another rank's
    if (!serving && lp.shared_expert != SharedExpert::kNone) compute_shared_expert(lp, *lw_, n_tok, pool);
    return ok_status();
  }
  // Each expert runs once over the tokens routed to it, in whatever order the source delivers
  // them; outputs land in their (token, slot) and are summed in slot order below, so the result
  // does not depend on the delivery order, nor on which experts run together.
  SNIPER_TRY(experts_->begin_layer(layer_idx, union_));
  // Over views that stay valid until end_layer(), a decode step runs its experts together (two
  // parallel passes), and so does a chunk (run_experts); views that change with each
  // next_ready() run one by one.
  const bool together = experts_->views_stable();
  if (!serving && (!together || n_tok > 1)) route_by_expert(n_tok);
  // Guess the next layers' experts now, from the residual entering this FFN, so their reads
  // queue behind this layer's and land while its experts compute (guessing only after the FFN
  // left the SSD idle for the whole expert compute). The guess after the FFN below still adds
  // what this one missed. For a chunk too: the cache gives a hint only slots that are neither
  // pinned by this layer nor owed to its deferred experts, so a hint never delays this layer,
  // and with the chunk planner's two layers of slots (engine/prefill_chunk.h) the next layer's
  // union is read while this one's experts compute.
  if (!serving && layer_idx + 1 < c.n_layers && experts_->wants_prefetch())
    predict_next_experts(layer_idx, n_tok, pool);
  // The shared expert needs no routed one: it computes while their reads land.
  if (!serving && lp.shared_expert != SharedExpert::kNone) compute_shared_expert(lp, *lw_, n_tok, pool);
  auto run_group = [&] {
    if (n_tok == 1 && !serving) {
      run_experts_one_token(group_, pool);
    } else {
      run_experts(group_, pool);
    }
    group_.clear();
  };
  for (;;) {
    if (!experts_->next_is_ready()) {
      // Together: the experts in hand run whenever the next one would wait for its read.
      if (together && !group_.empty()) run_group();
      // Still about to wait: idle workers sleep instead of spinning against the I/O path.
      if (!experts_->next_is_ready()) pool.park();
    }
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
  if (together && !group_.empty()) run_group();
  experts_->end_layer();
  return ok_status();
}

void MoeFfn::bias_routing(int64_t layer_idx, const float* probs, int32_t* sel) {
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

void MoeFfn::route_by_expert(int64_t n_tok) {
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

void MoeFfn::weigh_expert_row(int32_t expert, const float* src, int64_t at) {
  const int64_t dim = config_.dim;
  const float w = sel_w_[static_cast<size_t>(at)];
  float* dst = exp_out_.data() + at * dim;
  if (lp_->expert_scale) {
    const float scale = f32_data(lw_->down_exps_scale)[expert];
    for (int64_t d = 0; d < dim; ++d) dst[d] = (src[d] * scale) * w;
  } else {
    for (int64_t d = 0; d < dim; ++d) dst[d] = src[d] * w;
  }
}

void MoeFfn::run_experts(std::span<const ReadyExpert> experts, ThreadPool& pool) {
  const int64_t dim = config_.dim, ff = config_.expert_hidden_dim, k = config_.n_experts_active;
  const Activation act = lp_->ffn_act;
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
        std::memcpy(gathered_.data() + (offset[i] + r) * dim, h_ + route_tok_[static_cast<size_t>(r0 + r)] * dim,
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
    ActCache acts(bufs_->act_bufs, 3);
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
      for (int64_t r = begin; r < end; ++r)
        gated_activation(act, hb_.data() + r * ff, hb2_.data() + r * ff, hb_.data() + r * ff, ff);
    });
    const QuantizedActs down_in =
        quantize_acts(get_kernels(first.down.type).vec_dot_type, hb_.data(), ff, rows, ff, bufs_->act, pool);
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
        weigh_expert_row(experts[g0 + i].expert, down_.data() + (offset[i] + r) * dim, t * k + slot);
      }
    }
    g0 = g1;
  }
}

void MoeFfn::run_experts_one_token(std::span<const ReadyExpert> experts, ThreadPool& pool) {
  const int64_t dim = config_.dim, ff = config_.expert_hidden_dim, k = config_.n_experts_active;
  const size_t n = experts.size();
  if (n == 0) return;
  CHECK(static_cast<int64_t>(n) <= k, "%zu experts for one token, at most %ld", n, static_cast<long>(k));
  // The token's input row, quantized once per activation type (all experts of a layer share
  // their types, but a packed file could mix them).
  ActCache acts(bufs_->act_bufs, 3);
  MatmulJob jobs[2 * 64];
  for (size_t i = 0; i < n; ++i) {
    const ExpertView& ex = experts[i].view;
    jobs[2 * i] = {&ex.gate, acts.get(ex.gate.type, h_, dim, 1, pool), group_hb_.data() + i * ff, ff};
    jobs[2 * i + 1] = {&ex.up, acts.get(ex.up.type, h_, dim, 1, pool), group_hb2_.data() + i * ff, ff};
  }
  matmul_q_multi(std::span<const MatmulJob>(jobs, 2 * n), pool, selected_tier(), MatmulOrder::kVecDot);
  for (size_t i = 0; i < n; ++i) {
    gated_activation(lp_->ffn_act, group_hb_.data() + i * ff, group_hb2_.data() + i * ff, group_hb_.data() + i * ff,
                     ff);
  }
  // Down: each expert's activation row quantized for its down type, then all downs at once.
  const GgmlType down_type = experts[0].view.down.type;
  bool same_type = true;
  for (size_t i = 1; i < n; ++i) same_type = same_type && experts[i].view.down.type == down_type;
  if (same_type) {
    const QuantizedActs all = quantize_acts(get_kernels(down_type).vec_dot_type, group_hb_.data(), ff,
                                            static_cast<int64_t>(n), ff, bufs_->act, pool);
    for (size_t i = 0; i < n; ++i) {
      QuantizedActs row = all;
      row.n_tok = 1;
      row.data = all.data + i * all.row_bytes;
      jobs[i] = {&experts[i].view.down, row, group_down_.data() + i * dim, dim};
    }
    matmul_q_multi(std::span<const MatmulJob>(jobs, n), pool, selected_tier(), MatmulOrder::kVecDot);
  } else {
    for (size_t i = 0; i < n; ++i) {
      matmul(experts[i].view.down, group_hb_.data() + i * ff, group_down_.data() + i * dim, 1, bufs_->act, pool,
             selected_tier(), MatmulOrder::kVecDot);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    for (int64_t slot = 0; slot < k; ++slot) {
      if (sel_[static_cast<size_t>(slot)] != experts[i].expert) continue;
      weigh_expert_row(experts[i].expert, group_down_.data() + i * dim, slot);
    }
  }
}

void MoeFfn::predict_next_experts(int64_t layer_idx, int64_t n_tok, ThreadPool& pool) {
  // Layer L+d's router applied to the hidden state leaving layer L: a cheap guess at the routing
  // of the next prefetch_depth() layers, nearest first, so the SSD always has work queued.
  // Wrong guesses cost bandwidth, never correctness.
  const int64_t depth = std::max<int64_t>(1, experts_->prefetch_depth());
  for (int64_t d = 1; d <= depth && layer_idx + d < config_.n_layers; ++d)
    predict_layer_experts(layer_idx + d, n_tok, pool);
}

void MoeFfn::predict_layer_experts(int64_t target_layer, int64_t n_tok, ThreadPool& pool) {
  // The target layer's router applied to its input as formed from this residual; top-k of the
  // logits (softmax keeps their order).
  const ModelConfig& c = config_;
  const LayerPlan& lp = c.layer(target_layer);
  if (lp.ffn != FfnKind::kMoe) return;
  const LayerWeights& next = weights_.layers[static_cast<size_t>(target_layer)];
  const int64_t n_exp = c.n_experts, k = c.n_experts_active;
  matmul(next.router, router_input(lp, next, x_, nullptr, n_tok, gathered_.data()), router_.data(), n_tok, bufs_->act,
         pool);
  std::fill(used_.begin(), used_.end(), 0);
  int32_t top[64];
  const int64_t kk = std::min<int64_t>(k, 64);
  for (int64_t t = 0; t < n_tok; ++t) {
    top_k(router_.data() + t * n_exp, n_exp, kk, top);
    for (int64_t i = 0; i < kk; ++i) used_[static_cast<size_t>(top[i])] = 1;
  }
  union_.clear();
  for (int64_t e = 0; e < n_exp; ++e) {
    // Another rank's experts are its own to prefetch.
    const bool mine = remote_ == nullptr || remote_->owner(target_layer, static_cast<int32_t>(e)) == 0;
    if (used_[static_cast<size_t>(e)] && mine) union_.push_back(static_cast<int32_t>(e));
  }
  experts_->prefetch(target_layer, union_);
}

}  // namespace sniper
