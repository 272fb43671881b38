// SPDX-License-Identifier: MIT
#include "engine/draft_model.h"
#include "engine/media_prompt.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace sniper {

SamplerConfig draft_sampler_config(SamplerConfig c) {
  c.repeat_penalty = 1.0f;
  c.presence_penalty = 0;
  c.frequency_penalty = 0;
  c.seed ^= 0x5eed0fd4af7ull;
  return c;
}

float draft_confidence(const float* logits, int32_t n_vocab) {
  constexpr int kTop = 10;
  float top[kTop];
  int n = 0;
  for (int32_t i = 0; i < n_vocab; ++i) {  // the largest logits, descending
    const float l = logits[i];
    if (n == kTop && !(l > top[kTop - 1])) continue;
    int j = n < kTop ? n++ : kTop - 1;
    while (j > 0 && top[j - 1] < l) {
      top[j] = top[j - 1];
      --j;
    }
    top[j] = l;
  }
  if (n == 0) return 0.0f;
  float sum = 0.0f;
  for (int k = 0; k < n; ++k) sum += std::exp(top[k] - top[0]);
  return 1.0f / sum;
}

Status check_draft_vocab(const Tokenizer& target, const Tokenizer& draft) {
  const Vocab& t = target.vocab();
  const Vocab& d = draft.vocab();
  if (t.model != d.model) {
    return make_error("the draft model's vocabulary is incompatible: tokenizer model '%s' but the target's is '%s'",
                      d.model.c_str(), t.model.c_str());
  }
  if (t.add_bos != d.add_bos || t.add_eos != d.add_eos || t.bos_id != d.bos_id || t.eos_id != d.eos_id) {
    return make_error(
        "the draft model's vocabulary is incompatible: special tokens differ (draft: bos %d add_bos %d, "
        "eos %d add_eos %d; target: bos %d add_bos %d, eos %d add_eos %d)",
        d.bos_id, int(d.add_bos), d.eos_id, int(d.add_eos), t.bos_id, int(t.add_bos), t.eos_id, int(t.add_eos));
  }
  const int32_t diff = std::abs(t.n_vocab() - d.n_vocab());
  if (diff > kMaxDraftVocabDifference) {
    return make_error(
        "the draft model's vocabulary is incompatible: %d tokens but the target has %d (at most %d may "
        "differ)",
        d.n_vocab(), t.n_vocab(), kMaxDraftVocabDifference);
  }
  const int32_t n = std::min(t.n_vocab(), d.n_vocab());
  for (int32_t id = 0; id < n; ++id) {
    if (t.texts[static_cast<size_t>(id)] != d.texts[static_cast<size_t>(id)]) {
      return make_error(
          "the draft model's vocabulary is incompatible: token %d is '%s' in the draft but '%s' in the "
          "target",
          id, d.texts[static_cast<size_t>(id)].c_str(), t.texts[static_cast<size_t>(id)].c_str());
    }
  }
  return ok_status();
}

DraftModel::DraftModel(int32_t target_vocab, const SamplerConfig& sampler)
    : target_vocab_(target_vocab), greedy_(sampler.temperature <= 0), sampler_(draft_sampler_config(sampler)) {}

Result<std::unique_ptr<DraftModel>> DraftModel::create(Model& model, int64_t n_ctx, int n_threads, int32_t target_vocab,
                                                       const SamplerConfig& sampler) {
  SNIPER_TRY(sampler.validate());
  std::unique_ptr<DraftModel> d(new DraftModel(target_vocab, sampler));
  SessionOptions so;
  so.n_ctx = n_ctx;
  so.n_threads = n_threads;
  so.batch = std::min<int64_t>(model.planned_batch(), n_ctx);
  // A hybrid draft rolls back to the latest checkpoint before its own rejected drafts; it keeps
  // as many as its plan counted in its budget (none: it re-evaluates from the start instead).
  so.n_checkpoints = model.plan().n_checkpoints;
  auto session = Session::create(model, so);
  if (!session.ok()) return make_error("draft model: %s", session.error().message.c_str());
  d->session_ = std::move(session).value();
  d->probs_.resize(static_cast<size_t>(model.config().vocab_size));
  return d;
}

Status DraftModel::set_sampler(const SamplerConfig& sampler) {
  SNIPER_TRY(sampler.validate());
  greedy_ = sampler.temperature <= 0;
  sampler_ = Sampler(draft_sampler_config(sampler));
  return ok_status();
}

Status DraftModel::draft(std::span<const int32_t> target_context, int64_t n_max, Draft* out) {
  out->tokens.clear();
  out->q.clear();
  Session& s = *session_;
  // The draft model has no projector: it drafts from the target's text, media cells left out
  // (its guesses are verified by the target all the same).
  std::span<const int32_t> context = target_context;
  if (std::find(target_context.begin(), target_context.end(), kMediaToken) != target_context.end()) {
    text_context_.clear();
    for (int32_t t : target_context) {
      if (t != kMediaToken) text_context_.push_back(t);
    }
    context = text_context_;
  }
  const auto len = static_cast<int64_t>(context.size());
  if (len + n_max > s.n_ctx()) n_max = s.n_ctx() - len;
  if (n_max <= 0 || len == 0) return ok_status();
  // Keep the common prefix (but re-evaluate at least the last token: its logits are the start).
  const std::vector<int32_t>& hist = s.history();
  int64_t common = 0;
  const int64_t lim = std::min<int64_t>(static_cast<int64_t>(hist.size()), len - 1);
  while (common < lim && hist[static_cast<size_t>(common)] == context[static_cast<size_t>(common)]) ++common;
  const int64_t kept = s.truncate(common);
  SNIPER_TRY(s.eval(context.subspan(static_cast<size_t>(kept))));
  // The target keeps at least this much of the sequence: a hybrid draft comes back here.
  if (s.keeps_checkpoints()) s.checkpoint();
  const auto n_vocab = static_cast<int32_t>(probs_.size());
  for (int64_t i = 0; i < n_max; ++i) {
    if (p_min_ > 0.0f && draft_confidence(s.last_logits().data(), n_vocab) < p_min_) break;
    int32_t token;
    if (greedy_) {
      token = sampler_.sample(s.last_logits().data(), n_vocab);
    } else {
      sampler_.distribution(s.last_logits().data(), n_vocab, probs_.data());
      token = sampler_.sample_from(probs_.data(), n_vocab);
    }
    if (token >= target_vocab_) break;  // a token only the draft has: the target cannot take it
    out->tokens.push_back(token);
    if (!greedy_) {
      const size_t row = out->q.size();
      out->q.resize(row + static_cast<size_t>(target_vocab_), 0.0f);
      std::copy_n(probs_.begin(), std::min(n_vocab, target_vocab_), out->q.begin() + static_cast<std::ptrdiff_t>(row));
    }
    if (i + 1 < n_max) {
      const int32_t one[1] = {token};
      SNIPER_TRY(s.eval(one));
    }
  }
  return ok_status();
}

}  // namespace sniper
