// SPDX-License-Identifier: MIT
// Token sampling with llama.cpp's semantics and order: logit biases (llama_sampler_logit_bias:
// added to the logits first; -inf bans), repetition/presence/frequency penalties
// over the last repeat_last_n accepted tokens, then top-k, top-p, min-p, temperature and a draw
// from a seeded xoshiro256** generator (so a seed gives the same tokens on every platform).
// temperature <= 0 is greedy: the argmax after penalties, lowest token id on ties.
// Invariants: candidate ordering is fully deterministic (logit descending, then id ascending);
// after the first call for a vocabulary size, sample() and apply_penalties() allocate nothing.
// A Sampler is not thread-safe; use one per sequence.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "base/result.h"

namespace sniper {

struct SamplerConfig {
  float temperature = 0.8f;     // >= 0; 0 means greedy
  int top_k = 40;               // >= 0; 0 disables
  float top_p = 0.95f;          // in (0, 1]; 1 disables
  float min_p = 0.05f;          // in [0, 1]; 0 disables
  float repeat_penalty = 1.0f;  // > 0; 1 disables
  int repeat_last_n = 64;       // >= 0 tokens of history penalised; 0 disables penalties
  float presence_penalty = 0;   // finite; subtracted once from every token in the window
  float frequency_penalty = 0;  // finite; subtracted once per occurrence in the window
  uint64_t seed = 0;
  // (token, bias) pairs added to the logits before anything else; a token listed twice gets the
  // sum (as llama.cpp); -inf bans the token. Token ids past the sampled vocabulary are ignored.
  std::vector<std::pair<int32_t, float>> logit_bias;

  // Checks every field; the Error names the field, its value and the allowed range.
  [[nodiscard]] Status validate() const;
};

class Sampler {
 public:
  // Requires config.validate().ok() (CHECKed: validate untrusted configs first).
  explicit Sampler(SamplerConfig config);

  // Picks a token from logits[0, n_vocab). Requires n_vocab > 0. NaN logits count as -inf.
  // Does not record the token: call accept() with the token actually used.
  [[nodiscard]] int32_t sample(const float* logits, int32_t n_vocab);

  // The distribution sample() draws from for these logits and the current penalty window,
  // written to probs[0, n_vocab): zero outside the top-k / top-p / min-p candidates, a point mass
  // on the argmax when greedy. Draws nothing (the random sequence does not advance). Speculative
  // decoding's acceptance rule compares it with the draft's distribution.
  void distribution(const float* logits, int32_t n_vocab, float* probs);
  // A uniform draw in [0, 1) from this sampler's random sequence (the acceptance test's u).
  [[nodiscard]] double uniform();
  // Draws index i with probability weights[i] / sum (weights <= 0 never drawn), by inverse CDF
  // in index order. Requires at least one positive weight (CHECKed).
  [[nodiscard]] int32_t sample_from(const float* weights, int32_t n_vocab);

  // Records a generated (or prompt) token in the penalty window. Tokens outside the
  // vocabulary of a later sample() call are ignored by it.
  void accept(int32_t token);

  // Forgets the history and restarts the random sequence from the seed.
  void reset();

  // Applies the configured penalties to logits[0, n_vocab) in place (what sample() does
  // first), for inspection and for callers that sample elsewhere.
  void apply_penalties(float* logits, int32_t n_vocab);

  const SamplerConfig& config() const { return config_; }

 private:
  struct Candidate {
    float logit;
    int32_t id;
  };

  void ensure_capacity(int32_t n_vocab);
  // Penalties, then (unless greedy) top-k, top-p and min-p: leaves the n candidates sample()
  // draws from in cands_[0, n) and returns n (greedy: 1, the argmax in cands_[0]).
  size_t select(const float* logits, int32_t n_vocab);
  // Calls adjust(token, count) once for each distinct token in the penalty window.
  template <typename F>
  void for_each_penalised(int32_t n_vocab, F&& adjust);
  // The logit of a token seen `count` times in the window, after all three penalties.
  float penalised(float logit, int32_t count) const;
  uint64_t next_u64();
  double next_unit();  // uniform in [0, 1) with 53 random bits

  SamplerConfig config_;
  uint64_t rng_[4] = {};          // xoshiro256** state
  std::vector<int32_t> history_;  // ring buffer of the last repeat_last_n accepted tokens
  size_t history_next_ = 0;       // next write position in history_
  size_t history_size_ = 0;       // valid entries in history_
  std::vector<Candidate> cands_;  // [n_vocab] working set
  std::vector<int32_t> counts_;   // [n_vocab] occurrences in the window (zero between calls)
};

}  // namespace sniper
