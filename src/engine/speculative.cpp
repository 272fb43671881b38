// SPDX-License-Identifier: MIT
#include "engine/speculative.h"

#include <algorithm>

#include "base/check.h"
#include "sampling/speculative_rule.h"

namespace sniper {

Status SpecConfig::validate() const {
  if (draft_max < 1 || draft_max > 256) {
    return make_error("--draft-max is %ld but must be in [1, 256]", static_cast<long>(draft_max));
  }
  if (!(p_min >= 0.0f && p_min <= 1.0f)) {
    return make_error("--draft-p-min is %g but must be in [0, 1]", static_cast<double>(p_min));
  }
  if (draft_min < 0 || draft_min > draft_max) {
    return make_error("--draft-min is %ld but must be in [0, --draft-max = %ld]", static_cast<long>(draft_min),
                      static_cast<long>(draft_max));
  }
  return ok_status();
}

SpeculativeDecoder::SpeculativeDecoder(DraftSource& source, const SpecConfig& config)
    : source_(&source), config_(config), n_draft_(config.draft_max) {}

Result<SpeculativeDecoder> SpeculativeDecoder::create(const Session& session, DraftSource& source,
                                                      const SpecConfig& config) {
  SNIPER_TRY(config.validate());
  if (session.state().needs_checkpoints() && !session.keeps_checkpoints()) {
    return make_error(
        "speculative decoding on this model (recurrent or sliding-window layers) needs state "
        "checkpoints to roll rejected drafts back, but the session keeps none");
  }
  if (config.draft_max + 1 > session.max_batch()) {
    return make_error(
        "--draft-max %ld needs a forward batch of %ld tokens but the session's is %ld (raise --batch or "
        "lower --draft-max)",
        static_cast<long>(config.draft_max), static_cast<long>(config.draft_max + 1),
        static_cast<long>(session.max_batch()));
  }
  return SpeculativeDecoder(source, config);
}

Status rollback_session(Session& session, int64_t keep, std::vector<int32_t>& scratch, int64_t* n_redo) {
  *n_redo = 0;
  if (keep >= session.n_past()) return ok_status();
  if (!session.media_spans().empty()) return session.rewind(keep, n_redo);  // media cells evaluate as media
  const std::vector<int32_t>& hist = session.history();
  scratch.assign(hist.begin(), hist.begin() + keep);
  const int64_t kept = session.truncate(keep);
  if (kept < keep) {
    *n_redo = keep - kept;
    SNIPER_TRY(session.eval(std::span<const int32_t>(scratch).subspan(static_cast<size_t>(kept))));
  }
  return ok_status();
}

Status SpeculativeDecoder::round(Session& session, Generator& gen, int32_t pending, int64_t n_remaining,
                                 const std::function<void(const GeneratorStep&)>& on_step) {
  SNIPER_ASSIGN_OR_RETURN(const std::span<const int32_t> rows, begin(session, pending, n_remaining));
  Status st = session.eval(rows, &logits_);
  if (!st.ok()) {
    n_before_ = -1;
    return st;
  }
  return finish(session, gen, logits_, on_step);
}

Result<std::span<const int32_t>> SpeculativeDecoder::begin(Session& session, int32_t pending, int64_t n_remaining) {
  const int64_t n_before = session.n_past();
  n_before_ = -1;
  // Room for pending + k drafts in the context, and no more tokens than are still wanted.
  int64_t k_max = std::min(n_draft_, session.n_ctx() - n_before - 1);
  if (n_remaining >= 0) k_max = std::min(k_max, n_remaining - 1);
  draft_.tokens.clear();
  draft_.q.clear();
  if (skip_ > 0) {
    --skip_;
    ++stats_.n_backoff;
  } else if (k_max >= std::max<int64_t>(1, config_.draft_min)) {
    context_.assign(session.history().begin(), session.history().end());
    context_.push_back(pending);
    SNIPER_TRY(source_->draft(context_, k_max, &draft_));
    if (static_cast<int64_t>(draft_.tokens.size()) > k_max) draft_.tokens.resize(static_cast<size_t>(k_max));
    if (static_cast<int64_t>(draft_.tokens.size()) < config_.draft_min) draft_.tokens.clear();
  }
  batch_.assign(1, pending);
  batch_.insert(batch_.end(), draft_.tokens.begin(), draft_.tokens.end());
  const auto k = static_cast<int64_t>(draft_.tokens.size());
  if (k > 0 && !session.state().rewindable(n_before + 1 + k)) session.checkpoint();
  n_before_ = n_before;
  return std::span<const int32_t>(batch_);
}

Status SpeculativeDecoder::finish(Session& session, Generator& gen, std::span<const float> logits,
                                  const std::function<void(const GeneratorStep&)>& on_step) {
  const auto n_vocab = static_cast<int32_t>(session.model().config().vocab_size);
  const auto k = static_cast<int64_t>(draft_.tokens.size());
  const int64_t n_before = n_before_;
  CHECK(n_before >= 0 && session.n_past() == n_before + 1 + k &&
            logits.size() == static_cast<size_t>(k + 1) * static_cast<size_t>(n_vocab),
        "speculative finish() without a begin() whose %ld rows the session evaluated", static_cast<long>(k + 1));
  n_before_ = -1;
  if (k == 0) {
    ++stats_.n_plain;
    ++stats_.n_tokens;
    on_step(gen.step(logits.data(), n_vocab, session.n_past(), session.n_ctx()));
    return ok_status();
  }
  ++stats_.n_rounds;
  stats_.n_drafted += k;
  const bool greedy = gen.sampler().config().temperature <= 0;
  p_.resize(static_cast<size_t>(n_vocab));
  int64_t accepted = 0;
  bool done = false;
  for (int64_t i = 0; i < k && !done; ++i) {
    const float* row = logits.data() + static_cast<size_t>(i) * static_cast<size_t>(n_vocab);
    const int32_t d = draft_.tokens[static_cast<size_t>(i)];
    int32_t token;
    if (greedy) {
      token = gen.sample(row, n_vocab);
    } else {
      gen.sampler().distribution(row, n_vocab, p_.data());
      const float* q =
          draft_.q.empty() ? nullptr : draft_.q.data() + static_cast<size_t>(i) * static_cast<size_t>(n_vocab);
      token = speculative_accept(p_.data(), q, n_vocab, d, gen.sampler(), residual_).token;
    }
    const GeneratorStep step = gen.push(token, n_before + 1 + i, session.n_ctx());
    ++stats_.n_tokens;
    done = step.done;
    on_step(step);
    if (token != d) break;
    if (!done) ++accepted;
  }
  if (!done && accepted == k) {
    // Every draft kept: the last row gives one more token for free.
    const float* row = logits.data() + static_cast<size_t>(k) * static_cast<size_t>(n_vocab);
    ++stats_.n_tokens;
    on_step(gen.step(row, n_vocab, n_before + 1 + k, session.n_ctx()));
  }
  stats_.n_accepted += accepted;
  if (config_.adaptive) {
    const int64_t lo = std::max<int64_t>(1, config_.draft_min);
    n_draft_ = accepted == k ? std::min(config_.draft_max, n_draft_ + 2) : std::max(lo, accepted + 1);
    acceptance_avg_ = 0.5 * acceptance_avg_ + 0.5 * static_cast<double>(accepted) / static_cast<double>(k);
    if (accepted > 0 || acceptance_avg_ >= kBackoffAcceptance) {
      backoff_ = 0;
    } else {
      backoff_ = std::min(kMaxBackoffSteps, std::max<int64_t>(1, 2 * backoff_));
      skip_ = backoff_;
    }
  }
  int64_t n_redo = 0;
  SNIPER_TRY(rollback_session(session, n_before + 1 + accepted, redo_, &n_redo));
  if (n_redo > 0) ++stats_.n_rollback_evals;
  return ok_status();
}

}  // namespace sniper
