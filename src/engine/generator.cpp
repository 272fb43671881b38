// SPDX-License-Identifier: MIT
#include "engine/generator.h"

#include <algorithm>
#include <limits>

namespace sniper {

namespace {
// Returns the index in `text` where any stop string begins, or npos; *which is that string.
size_t find_stop(const std::string& text, const std::vector<std::string>& stops, std::string* which) {
  size_t best = std::string::npos;
  for (const std::string& s : stops) {
    if (s.empty()) continue;
    const size_t at = text.find(s);
    if (at < best) {
      best = at;
      *which = s;
    }
  }
  return best;
}

// Length of the longest suffix of `text` that is a proper prefix of a stop string: text that
// must be held back until we know whether a stop string is forming.
size_t held_back(const std::string& text, const std::vector<std::string>& stops) {
  size_t hold = 0;
  for (const std::string& s : stops) {
    if (s.empty()) continue;
    for (size_t len = std::min(s.size() - 1, text.size()); len > hold; --len) {
      if (text.compare(text.size() - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  return hold;
}
}  // namespace

std::shared_ptr<const TokenVocabulary> make_token_vocabulary(const Tokenizer& tokenizer) {
  auto v = std::make_shared<TokenVocabulary>();
  const int32_t n = tokenizer.n_vocab();
  v->pieces.resize(static_cast<size_t>(n));
  v->is_eog.resize(static_cast<size_t>(n));
  for (int32_t t = 0; t < n; ++t) {
    v->pieces[static_cast<size_t>(t)] = tokenizer.token_to_piece(t, /*render_special=*/false);
    v->is_eog[static_cast<size_t>(t)] = tokenizer.is_eog(t) ? 1 : 0;
  }
  v->index();
  return v;
}

Generator::Generator(const Tokenizer& tokenizer, const GeneratorOptions& options)
    : tokenizer_(&tokenizer), options_(options), sampler_(options.sampler), detok_(tokenizer) {
  if (options_.grammar != nullptr) {
    if (options_.grammar_vocab == nullptr) options_.grammar_vocab = make_token_vocabulary(tokenizer);
    constraint_.emplace(options_.grammar, options_.grammar_vocab);
  }
}

Result<Generator> Generator::create(const Tokenizer& tokenizer, const GeneratorOptions& options) {
  SNIPER_TRY(options.sampler.validate());
  if (options.grammar != nullptr) SNIPER_TRY(options.grammar->validate());
  if (options.grammar_vocab != nullptr &&
      options.grammar_vocab->pieces.size() != static_cast<size_t>(tokenizer.n_vocab())) {
    return make_error("the grammar vocabulary has %zu tokens but the tokenizer %d",
                      options.grammar_vocab->pieces.size(), tokenizer.n_vocab());
  }
  if (options.n_predict < -1) {
    return make_error("n_predict is %ld but must be >= -1 (-1 = until the end)", static_cast<long>(options.n_predict));
  }
  return Generator(tokenizer, options);
}

void Generator::accept_prompt(std::span<const int32_t> tokens) {
  for (int32_t t : tokens) sampler_.accept(t);
}

GeneratorStep Generator::step(const float* logits, int32_t n_vocab, int64_t n_past, int64_t n_ctx) {
  if (!constraint_) return push(sample(logits, n_vocab), n_past, n_ctx);
  // Ends without a token (constrained sampling): the held-back text is emitted.
  auto end_early = [&](const char* reason) {
    GeneratorStep out;
    out.done = true;
    out.finish_reason = reason;
    pending_ += detok_.flush();
    out.text = std::move(pending_);
    pending_.clear();
    return out;
  };
  if (constraint_->must_end()) {
    // The output is complete and nothing may follow: end as the model's end token would.
    return end_early("eog");
  }
  int32_t token = sampler_.sample(logits, n_vocab);
  if (!constraint_->allows(token)) {
    // Rejection first: drop the refused token and draw again (for greedy decoding and for
    // plain temperature sampling this is exactly sampling from the masked distribution); after
    // kMaxRejections refusals, mask the whole vocabulary (a walk of the token trie).
    constexpr int kMaxRejections = 16;
    masked_.assign(logits, logits + n_vocab);
    for (int i = 0; i < kMaxRejections && !constraint_->allows(token); ++i) {
      masked_[static_cast<size_t>(token)] = -std::numeric_limits<float>::infinity();
      token = sampler_.sample(masked_.data(), n_vocab);
    }
    if (!constraint_->allows(token)) {
      if (constraint_->mask(masked_.data(), n_vocab) == 0) return end_early("length");
      token = sampler_.sample(masked_.data(), n_vocab);
    }
  }
  if (!constraint_->accept(token).ok()) {
    // Only when every allowed token's logit is NaN (the sampler then falls back to any token):
    // end rather than leave the grammar.
    return end_early("length");
  }
  return record(token, n_past, n_ctx);
}

int32_t Generator::sample(const float* logits, int32_t n_vocab) { return sampler_.sample(logits, n_vocab); }

GeneratorStep Generator::push(int32_t token, int64_t n_past, int64_t n_ctx) {
  if (constraint_ && !constraint_->accept(token).ok()) {
    // A token the grammar refuses (a caller that sampled without the mask): end instead.
    GeneratorStep out;
    out.done = true;
    out.finish_reason = "length";
    pending_ += detok_.flush();
    out.text = std::move(pending_);
    pending_.clear();
    return out;
  }
  return record(token, n_past, n_ctx);
}

GeneratorStep Generator::record(int32_t token, int64_t n_past, int64_t n_ctx) {
  GeneratorStep out;
  sampler_.accept(token);
  ++n_gen_;
  out.token = token;
  if ((options_.stop_at_eog || constraint_) && tokenizer_->is_eog(token)) {
    out.done = true;
    out.finish_reason = "eog";
  } else {
    pending_ += detok_.push(token);
    const size_t stop_at = find_stop(pending_, options_.stop, &out.stop_string);
    if (stop_at != std::string::npos) {
      pending_.resize(stop_at);
      out.text = std::move(pending_);
      pending_.clear();
      out.done = true;
      out.finish_reason = "stop";
      return out;
    }
    const size_t emit = pending_.size() - held_back(pending_, options_.stop);
    out.text = pending_.substr(0, emit);
    pending_.erase(0, emit);
    if (options_.n_predict >= 0 && n_gen_ >= options_.n_predict) {
      out.done = true;
      out.finish_reason = "length";
    } else if (n_past + 1 > n_ctx) {
      out.done = true;
      out.finish_reason = "context";
    }
  }
  if (out.done) {
    // The held-back tail cannot become a stop string any more: emit it.
    pending_ += detok_.flush();
    out.text += pending_;
    pending_.clear();
  }
  return out;
}

}  // namespace sniper
