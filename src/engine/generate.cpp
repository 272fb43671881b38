// SPDX-License-Identifier: MIT
#include "engine/generate.h"

#include <chrono>

namespace sniper {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Returns the index in `text` where any stop string begins, or npos.
size_t find_stop(const std::string& text, const std::vector<std::string>& stops) {
  size_t best = std::string::npos;
  for (const std::string& s : stops) {
    if (s.empty()) continue;
    const size_t at = text.find(s);
    if (at < best) best = at;
  }
  return best;
}

// Length of the longest suffix of `text` that is a proper prefix of a stop string: text that
// must be held back until we know whether a stop string is forming.
size_t held_back(const std::string& text, const std::vector<std::string>& stops) {
  size_t hold = 0;
  for (const std::string& s : stops) {
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

Result<GenerateStats> generate(Session& session, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                               const GenerateOptions& options, const TextCallback& on_text) {
  SNIPER_TRY(options.sampler.validate());
  if (options.n_predict < -1) {
    return make_error("n_predict is %ld but must be >= -1 (-1 = until the end)", static_cast<long>(options.n_predict));
  }
  GenerateStats stats;
  stats.n_prompt = static_cast<int64_t>(prompt.size());
  Sampler sampler(options.sampler);
  for (int32_t t : prompt) sampler.accept(t);
  const auto t0 = std::chrono::steady_clock::now();
  if (!prompt.empty()) SNIPER_TRY(session.eval(prompt));
  stats.prompt_ms = ms_since(t0);
  if (session.n_past() == 0) return make_error("nothing to generate from: the prompt is empty");

  StreamingDetokenizer detok(tokenizer);
  std::string pending;  // text not yet emitted (held back for stop strings)
  const auto t_gen = std::chrono::steady_clock::now();
  stats.finish_reason = "length";
  const int32_t n_vocab = static_cast<int32_t>(session.model().config().vocab_size);
  bool first_text = true;
  for (int64_t i = 0; options.n_predict < 0 || i < options.n_predict; ++i) {
    const int32_t token = sampler.sample(session.last_logits().data(), n_vocab);
    sampler.accept(token);
    ++stats.n_gen;
    if (options.stop_at_eog && tokenizer.is_eog(token)) {
      stats.finish_reason = "eog";
      break;
    }
    pending += detok.push(token);
    const size_t stop_at = find_stop(pending, options.stop);
    if (stop_at != std::string::npos) {
      pending.resize(stop_at);
      if (!pending.empty() && on_text) on_text(pending);
      pending.clear();
      stats.finish_reason = "stop";
      break;
    }
    const size_t emit = pending.size() - held_back(pending, options.stop);
    if (emit > 0) {
      if (first_text) {
        stats.ttft_ms = ms_since(t0);
        first_text = false;
      }
      if (on_text && !on_text(std::string_view(pending).substr(0, emit))) {
        stats.finish_reason = "cancelled";
        pending.clear();
        break;
      }
      pending.erase(0, emit);
    }
    const bool last = options.n_predict >= 0 && i + 1 >= options.n_predict;
    if (last) break;
    if (session.n_past() + 1 > session.n_ctx()) {
      stats.finish_reason = "context";
      break;
    }
    const int32_t next[1] = {token};
    const auto t_step = std::chrono::steady_clock::now();
    SNIPER_TRY(session.eval(next));
    stats.decode_ms += ms_since(t_step);
    ++stats.n_decode;
  }
  pending += detok.flush();
  if (!pending.empty() && on_text && stats.finish_reason != "stop" && stats.finish_reason != "cancelled") {
    on_text(pending);
  }
  stats.gen_ms = ms_since(t_gen);
  return stats;
}

}  // namespace sniper
