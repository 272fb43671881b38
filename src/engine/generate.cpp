// SPDX-License-Identifier: MIT
#include "engine/generate.h"

#include <chrono>
#include <optional>

#include "engine/generator.h"

namespace sniper {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Result<GenerateStats> generate(Session& session, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                               const GenerateOptions& options, const TextCallback& on_text) {
  GeneratorOptions go;
  go.n_predict = options.n_predict;
  go.sampler = options.sampler;
  go.stop_at_eog = options.stop_at_eog;
  go.stop = options.stop;
  SNIPER_ASSIGN_OR_RETURN(Generator gen, Generator::create(tokenizer, go));
  std::optional<SpeculativeDecoder> spec;
  if (options.draft != nullptr) {
    SNIPER_ASSIGN_OR_RETURN(SpeculativeDecoder d, SpeculativeDecoder::create(session, *options.draft, options.spec));
    spec.emplace(std::move(d));
  }

  GenerateStats stats;
  stats.n_prompt = static_cast<int64_t>(prompt.size());
  gen.accept_prompt(prompt);
  const auto t0 = std::chrono::steady_clock::now();
  if (!prompt.empty()) SNIPER_TRY(session.eval(prompt));
  stats.prompt_ms = ms_since(t0);
  if (session.n_past() == 0) return make_error("nothing to generate from: the prompt is empty");

  const auto t_gen = std::chrono::steady_clock::now();
  const int32_t n_vocab = static_cast<int32_t>(session.model().config().vocab_size);
  bool first_text = true;
  // Returns false when generation is over (done or cancelled).
  auto emit = [&](const GeneratorStep& step) {
    if (!step.text.empty()) {
      if (first_text) {
        stats.ttft_ms = ms_since(t0);
        first_text = false;
      }
      if (on_text && !on_text(step.text) && !step.done) {
        stats.finish_reason = "cancelled";
        return false;
      }
    }
    if (step.done) {
      stats.finish_reason = step.finish_reason;
      return false;
    }
    return true;
  };
  GeneratorStep step = gen.step(session.last_logits().data(), n_vocab, session.n_past(), session.n_ctx());
  bool going = emit(step);
  int32_t pending = step.token;
  while (going) {
    const auto t_step = std::chrono::steady_clock::now();
    const int64_t n_past_before = session.n_past();
    if (spec) {
      const int64_t remaining = options.n_predict < 0 ? -1 : options.n_predict - gen.n_generated();
      SNIPER_TRY(spec->round(session, gen, pending, remaining, [&](const GeneratorStep& s) {
        pending = s.token;
        if (going) going = emit(s);
      }));
    } else {
      const int32_t next[1] = {pending};
      SNIPER_TRY(session.eval(next));
      step = gen.step(session.last_logits().data(), n_vocab, session.n_past(), session.n_ctx());
      pending = step.token;
      going = emit(step);
    }
    stats.decode_ms += ms_since(t_step);
    stats.n_decode += session.n_past() - n_past_before;
  }
  if (spec) stats.spec = spec->stats();
  stats.n_gen = gen.n_generated();
  stats.gen_ms = ms_since(t_gen);
  return stats;
}

}  // namespace sniper
