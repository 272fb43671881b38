// SPDX-License-Identifier: MIT
// DraftModel: a smaller model with the target's vocabulary drafts by decoding ahead in its own
// Session (its own KV cache and memory budget). Each draft() first brings that session to the
// target's sequence (keeps the common prefix, evaluates the rest: rejected drafts are rolled
// back there too), then decodes up to n_max tokens. Greedy targets get the draft's argmax (a
// point mass); sampling targets get a draw from the draft's distribution with the target's
// temperature / top-k / top-p / min-p (no penalties), and that distribution as q, which the
// acceptance rule needs to keep the output distributed exactly as the target's. A server slot
// keeps one DraftModel for all its jobs and gives it each job's sampling settings (set_sampler).
// Thread-compatible; the draft Model must outlive this.
#pragma once

#include <memory>

#include "engine/draft_source.h"
#include "engine/model.h"
#include "engine/session.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace sniper {

// Vocabulary differences larger than this rule a draft model out (llama.cpp's speculative
// example allows 128: a draft may lack a few added tokens at the end).
inline constexpr int32_t kMaxDraftVocabDifference = 128;

// The draft's vocabulary must tokenize and detokenize like the target's, as llama.cpp's
// speculative example checks: same tokenizer model, same BOS / EOS ids and add_bos / add_eos,
// sizes within kMaxDraftVocabDifference, and the same text for every token id both have. The
// Error names the first difference (the token id and both texts).
[[nodiscard]] Status check_draft_vocab(const Tokenizer& target, const Tokenizer& draft);

// The sampler a draft uses (DraftModel, MtpDraft): the target's truncation and temperature, no
// penalties, its own seed.
SamplerConfig draft_sampler_config(SamplerConfig target);

// How sure a draft is of its likeliest token: its probability after a softmax over the 10
// largest logits (llama.cpp's draft sampler is top-k 10; SpecConfig::p_min compares with this).
float draft_confidence(const float* logits, int32_t n_vocab);

class DraftModel final : public DraftSource {
 public:
  // `model` is the draft (check_draft_vocab against the target first); n_ctx: the target
  // session's context (the draft follows the same sequence); target_vocab: the target's size
  // (q rows are that long). sampler: the target's config (penalties are dropped). The session
  // keeps the state checkpoints the draft's plan counted (plan().n_checkpoints: load it with
  // ModelLoadOptions::n_checkpoints > 0 for a hybrid draft).
  [[nodiscard]] static Result<std::unique_ptr<DraftModel>> create(Model& model, int64_t n_ctx, int n_threads,
                                                                  int32_t target_vocab, const SamplerConfig& sampler);
  // Drafts for a new job with these sampling settings (the target's; penalties are dropped):
  // greedy or not, truncation, temperature, and the random sequence restarted from the seed.
  // The session (and the prefix it shares with the next context) is kept. Errors: a config that
  // fails validate() (this DraftModel is then unchanged).
  [[nodiscard]] Status set_sampler(const SamplerConfig& sampler);
  // Drafting stops at a token whose draft_confidence is below p_min (SpecConfig::p_min; 0 = off).
  void set_p_min(float p_min) { p_min_ = p_min; }
  [[nodiscard]] Status draft(std::span<const int32_t> context, int64_t n_max, Draft* out) override;
  const char* name() const override { return "draft-model"; }
  const Session& session() const { return *session_; }

 private:
  DraftModel(int32_t target_vocab, const SamplerConfig& sampler);
  int32_t target_vocab_;
  bool greedy_;
  float p_min_ = 0.0f;
  Sampler sampler_;
  std::unique_ptr<Session> session_;
  std::vector<float> probs_;           // [draft vocab]
  std::vector<int32_t> text_context_;  // the target's context without its media cells
};

}  // namespace sniper
