// SPDX-License-Identifier: MIT
#include "engine/mtp_draft.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "engine/draft_model.h"

namespace sniper {

void HiddenRecorder::on_chunk(std::span<const int32_t> tokens, int64_t pos0, const float* hidden) {
  rows.resize((static_cast<size_t>(pos0) + tokens.size()) * dim_);
  std::memcpy(rows.data() + static_cast<size_t>(pos0) * dim_, hidden, tokens.size() * dim_ * sizeof(float));
}

void HiddenRecorder::on_rewrite(int64_t keep) { rows.resize(static_cast<size_t>(keep) * dim_); }

Status mtp_prompt_logits(Model& model, Session& session, std::span<const int32_t> prompt, std::vector<float>* out) {
  if (session.n_past() != 0) return make_error("mtp_prompt_logits needs an empty session");
  if (prompt.empty()) return make_error("nothing to evaluate: the token list is empty");
  const ModelConfig& c = model.config();
  HiddenRecorder hidden(c.dim);
  session.set_observer(&hidden);
  Status st = session.eval(prompt);
  session.set_observer(nullptr);
  SNIPER_TRY(st);
  const auto n = static_cast<int64_t>(prompt.size());
  SNIPER_ASSIGN_OR_RETURN(auto head, MtpHead::create(c, model.store(), n, model.embedding_rows(), model.mtp_experts()));
  SNIPER_ASSIGN_OR_RETURN(auto state, SequenceState::create(layer_state_specs(head->config()), session.n_ctx(),
                                                            session.state().kv_config()));
  const size_t dim = static_cast<size_t>(c.dim);
  std::vector<float> h(static_cast<size_t>(n) * dim, 0.0f), h_out(static_cast<size_t>(n) * dim);
  std::memcpy(h.data() + dim, hidden.rows.data(), static_cast<size_t>(n - 1) * dim * sizeof(float));
  out->resize(static_cast<size_t>(n * c.vocab_size));
  return head->forward(prompt.data(), h.data(), n, 0, *state, h_out.data(), out->data(), session.pool(), true);
}

MtpDraft::MtpDraft(Session& target, const SamplerConfig& sampler)
    : target_(target), greedy_(sampler.temperature <= 0), sampler_(draft_sampler_config(sampler)) {}

Result<std::unique_ptr<MtpDraft>> MtpDraft::create(Model& model, Session& target, const SamplerConfig& sampler) {
  SNIPER_TRY(sampler.validate());
  if (&target.model() != &model) return make_error("the MTP head must draft for a session of its own model");
  if (target.n_past() != 0) {
    return make_error("the MTP head must follow the target session from its start, but it holds %ld tokens",
                      static_cast<long>(target.n_past()));
  }
  std::unique_ptr<MtpDraft> d(new MtpDraft(target, sampler));
  const int64_t batch = std::min(kMtpHeadBatch, target.max_batch());
  SNIPER_ASSIGN_OR_RETURN(
      d->head_, MtpHead::create(model.config(), model.store(), batch, model.embedding_rows(), model.mtp_experts()));
  const ModelConfig& c = d->head_->config();
  auto state = SequenceState::create(layer_state_specs(c), target.n_ctx(), target.state().kv_config());
  if (!state.ok()) return make_error("MTP head: %s", state.error().message.c_str());
  d->state_ = std::move(state).value();
  const size_t dim = static_cast<size_t>(c.dim);
  d->ring_.resize(static_cast<size_t>(kMtpHiddenRows) * dim);
  d->ring_pos_.assign(static_cast<size_t>(kMtpHiddenRows), -1);
  d->h_in_.resize(static_cast<size_t>(batch) * dim);
  d->h_out_.resize(static_cast<size_t>(batch) * dim);
  d->zero_.assign(dim, 0.0f);
  d->logits_.resize(static_cast<size_t>(c.vocab_size));
  d->probs_.resize(static_cast<size_t>(c.vocab_size));
  target.set_observer(d.get());
  return d;
}

MtpDraft::~MtpDraft() { target_.set_observer(nullptr); }

Status MtpDraft::set_sampler(const SamplerConfig& sampler) {
  SNIPER_TRY(sampler.validate());
  greedy_ = sampler.temperature <= 0;
  sampler_ = Sampler(draft_sampler_config(sampler));
  return ok_status();
}

size_t MtpDraft::memory_bytes() const {
  return state_->bytes() + head_->scratch_bytes() +
         (ring_.size() + h_in_.size() + h_out_.size() + zero_.size() + logits_.size() + probs_.size()) * sizeof(float);
}

void MtpDraft::store_row(int64_t pos, const float* row) {
  const size_t slot = static_cast<size_t>(pos % kMtpHiddenRows), dim = zero_.size();
  std::memcpy(ring_.data() + slot * dim, row, dim * sizeof(float));
  ring_pos_[slot] = pos;
}

const float* MtpDraft::find_row(int64_t pos) const {
  if (pos < 0) return nullptr;
  const size_t slot = static_cast<size_t>(pos % kMtpHiddenRows);
  return ring_pos_[slot] == pos ? ring_.data() + slot * zero_.size() : nullptr;
}

Status MtpDraft::run(const int32_t* tokens, int64_t n, int64_t pos0) {
  const size_t dim = zero_.size();
  const int64_t batch = head_->max_batch();
  for (int64_t t0 = 0; t0 < n; t0 += batch) {
    const int64_t m = std::min(batch, n - t0);
    for (int64_t t = 0; t < m; ++t) {
      const int64_t before = pos0 + t0 + t - 1;
      const float* row = find_row(before);
      if (row == nullptr) {
        row = zero_.data();
        if (before >= 0) ++stats_.missing_hidden;  // position 0 has no state before it
      }
      std::memcpy(h_in_.data() + static_cast<size_t>(t) * dim, row, dim * sizeof(float));
    }
    SNIPER_TRY(
        head_->forward(tokens + t0, h_in_.data(), m, pos0 + t0, *state_, h_out_.data(), nullptr, target_.pool()));
    stats_.positions += m;
    n_past_ = pos0 + t0 + m;
  }
  return ok_status();
}

void MtpDraft::on_chunk(std::span<const int32_t> tokens, int64_t pos0, const float* hidden) {
  const auto n = static_cast<int64_t>(tokens.size());
  const size_t dim = zero_.size();
  // Rows at and after pos0 are this evaluation's now (older ones there are stale).
  for (int64_t t = 0; t < n; ++t) store_row(pos0 + t, hidden + static_cast<size_t>(t) * dim);
  if (!pending_error_.ok()) return;
  Status st = ok_status();
  if (n_past_ < pos0) {  // positions it did not see evaluated (a restored state): zero rows
    const std::vector<int32_t>& hist = target_.history();
    st = run(hist.data() + n_past_, pos0 - n_past_, n_past_);
  }
  if (st.ok()) st = run(tokens.data(), n, pos0);
  if (!st.ok()) pending_error_ = st;
}

void MtpDraft::on_rewrite(int64_t keep) {
  n_past_ = std::min(n_past_, keep);
  for (int64_t& p : ring_pos_) {
    if (p >= keep) p = -1;
  }
}

Status MtpDraft::draft(std::span<const int32_t> context, int64_t n_max, Draft* out) {
  out->tokens.clear();
  out->q.clear();
  if (!pending_error_.ok()) {
    Status e = pending_error_;
    pending_error_ = ok_status();
    n_past_ = 0;  // its cache is unknown now: rebuilt from the history on the next draft
    return make_error("MTP head: %s", e.error().message.c_str());
  }
  const auto len = static_cast<int64_t>(context.size());
  const int64_t p = len - 1;  // the pending token's position
  if (len + n_max > state_->n_ctx()) n_max = state_->n_ctx() - len;
  if (n_max <= 0 || len == 0) return ok_status();
  // The head's cache covers the target's evaluated positions [0, p): cut back what the target
  // forgot, run what it did not see.
  n_past_ = std::min(n_past_, p);
  if (n_past_ < p) SNIPER_TRY(run(context.data() + n_past_, p - n_past_, n_past_));
  const size_t dim = zero_.size();
  const float* h = find_row(p - 1);
  if (h == nullptr) {
    h = zero_.data();
    if (p > 0) ++stats_.missing_hidden;
  }
  std::memcpy(h_in_.data(), h, dim * sizeof(float));
  const auto n_vocab = static_cast<int32_t>(logits_.size());
  int32_t token = context[static_cast<size_t>(p)];
  for (int64_t i = 0; i < n_max; ++i) {
    // Draft positions p.. are overwritten when the target evaluates them (on_chunk).
    SNIPER_TRY(head_->forward(&token, h_in_.data(), 1, p + i, *state_, h_out_.data(), logits_.data(), target_.pool()));
    ++stats_.draft_steps;
    if (p_min_ > 0.0f && draft_confidence(logits_.data(), n_vocab) < p_min_) break;
    if (greedy_) {
      token = sampler_.sample(logits_.data(), n_vocab);
    } else {
      sampler_.distribution(logits_.data(), n_vocab, probs_.data());
      token = sampler_.sample_from(probs_.data(), n_vocab);
      out->q.insert(out->q.end(), probs_.begin(), probs_.end());
    }
    out->tokens.push_back(token);
    std::memcpy(h_in_.data(), h_out_.data(), dim * sizeof(float));
  }
  return ok_status();
}

}  // namespace sniper
