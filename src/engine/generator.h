// SPDX-License-Identifier: MIT
// Generator: the step-wise form of the generate loop, for callers that interleave several
// sequences (the server's scheduler) or must stop between tokens. One step() samples a token
// from the current logits, turns it into text that is valid UTF-8, holds back text that could be
// the start of a stop string, and says whether generation is over and which token to evaluate
// next. It never touches the Session: the caller evaluates next_token itself.
// Invariants: the text of all steps concatenated equals what generate() streams for the same
// logits; once a step reports done, step() must not be called again. Thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace sniper {

struct GeneratorOptions {
  int64_t n_predict = 128;        // -1: until end of generation or the context is full
  SamplerConfig sampler;          // must pass validate()
  bool stop_at_eog = true;        // stop on the tokenizer's end-of-generation tokens
  std::vector<std::string> stop;  // stop strings (not emitted)
};

struct GeneratorStep {
  std::string text;            // newly decided text (may be empty)
  bool done = false;
  std::string finish_reason;   // when done: "length", "stop", "eog" or "context"
  int32_t token = -1;          // the token sampled in this step
};

class Generator {
 public:
  // Validates the options (sampler ranges, n_predict >= -1). The tokenizer must outlive the
  // generator.
  [[nodiscard]] static Result<Generator> create(const Tokenizer& tokenizer, const GeneratorOptions& options);

  // Records prompt tokens in the sampler's penalty window (call before the first step).
  void accept_prompt(std::span<const int32_t> tokens);

  // Samples from logits[0, n_vocab) (the logits after the last evaluated token). `n_past` and
  // `n_ctx` are the session's: when the context cannot take the sampled token the step is the
  // last one. When !done the caller must evaluate `token` before the next step.
  GeneratorStep step(const float* logits, int32_t n_vocab, int64_t n_past, int64_t n_ctx);

  // step() in two halves, for speculative decoding (engine/speculative.h), which decides some
  // tokens by its acceptance rule instead of sample(): step(l) == push(sample(l)).
  // sample() draws from the logits with the current penalty window and records nothing;
  // push() records `token` as generated (penalty window, text, stop strings, limits).
  [[nodiscard]] int32_t sample(const float* logits, int32_t n_vocab);
  GeneratorStep push(int32_t token, int64_t n_past, int64_t n_ctx);
  Sampler& sampler() { return sampler_; }

  int64_t n_generated() const { return n_gen_; }

 private:
  Generator(const Tokenizer& tokenizer, const GeneratorOptions& options);

  const Tokenizer* tokenizer_;
  GeneratorOptions options_;
  Sampler sampler_;
  StreamingDetokenizer detok_;
  std::string pending_;  // text not yet emitted (held back for stop strings)
  int64_t n_gen_ = 0;
};

}  // namespace sniper
