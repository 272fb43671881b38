// SPDX-License-Identifier: MIT
// MtpDraft: speculative decoding's drafts from the model's own multi-token-prediction block
// (model/mtp_head.h), as llama.cpp's draft-mtp drives it. The head keeps a KV cache of its own
// attention layer in step with the target: it observes every chunk the target session
// evaluates (ForwardObserver) and runs it too, pairing token x_p with the target's hidden state
// h_{p-1}. draft() then chains the head from the pending token: each step's token and output
// state feed the next step. Greedy targets get the head's argmax (point masses); sampling targets
// get a draw from its distribution under the target's sampler settings (no penalties), with that
// distribution as q.
//
// Positions the head did not see the target evaluate (a restored state file, a context shift)
// enter its cache with a zero hidden state, as the first position of a sequence does in llama.cpp:
// drafts stay valid (verification decides every token), only their acceptance may drop. The
// hidden rows of the most recent positions are kept for rollbacks that re-evaluate them.
// Thread-compatible; attaches itself to the target session on create and detaches on
// destruction, so it must not outlive that session.
#pragma once

#include <memory>
#include <vector>

#include "engine/draft_source.h"
#include "engine/model.h"
#include "engine/session.h"
#include "model/mtp_head.h"
#include "sampling/sampler.h"

namespace sniper {

struct MtpStats {
  int64_t positions = 0;       // target positions the head ran (its cache)
  int64_t missing_hidden = 0;  // rows run with a zero hidden state because the target's was not
                               // seen (position 0 has none and is not counted)
  int64_t draft_steps = 0;     // head forwards that proposed a token
};

class MtpDraft final : public DraftSource, public ForwardObserver {
 public:
  // `model` must be loaded with its MTP block (ModelLoadOptions::load_mtp) and be the model of
  // `target`; the target must not have evaluated anything yet (the head follows it from the
  // start; an Error otherwise). sampler: the target's config (penalties are dropped).
  [[nodiscard]] static Result<std::unique_ptr<MtpDraft>> create(Model& model, Session& target,
                                                                const SamplerConfig& sampler);
  ~MtpDraft() override;
  MtpDraft(const MtpDraft&) = delete;
  MtpDraft& operator=(const MtpDraft&) = delete;

  // As DraftModel::set_sampler.
  [[nodiscard]] Status set_sampler(const SamplerConfig& sampler);
  // As DraftModel::set_p_min.
  void set_p_min(float p_min) { p_min_ = p_min; }
  // `context` must be the target's history plus the pending token.
  [[nodiscard]] Status draft(std::span<const int32_t> context, int64_t n_max, Draft* out) override;
  const char* name() const override { return "mtp"; }

  void on_chunk(std::span<const int32_t> tokens, int64_t pos0, const float* hidden) override;
  void on_rewrite(int64_t keep) override;

  const MtpStats& stats() const { return stats_; }
  // Positions [0, n_past()) of the head's cache follow the target's sequence.
  int64_t n_past() const { return n_past_; }
  size_t memory_bytes() const;

 private:
  MtpDraft(Session& target, const SamplerConfig& sampler);
  // Runs the head over positions [pos0, pos0 + n) of tokens, with h rows from the ring (or zero)
  // for the row before each; the chunk's own hidden rows (if any) are stored in the ring first.
  [[nodiscard]] Status run(const int32_t* tokens, int64_t n, int64_t pos0);
  // Stores / finds the target's hidden row of a position.
  void store_row(int64_t pos, const float* row);
  const float* find_row(int64_t pos) const;

  Session& target_;
  bool greedy_;
  float p_min_ = 0.0f;
  Sampler sampler_;
  std::unique_ptr<MtpHead> head_;
  std::unique_ptr<SequenceState> state_;
  int64_t n_past_ = 0;
  Status pending_error_;           // a failed head run inside on_chunk, reported by draft()
  std::vector<float> ring_;        // [kRingRows, dim] recent target hidden rows
  std::vector<int64_t> ring_pos_;  // [kRingRows] the position each holds, -1 = none
  std::vector<float> h_in_;        // [head batch, dim]
  std::vector<float> h_out_;       // [head batch, dim]
  std::vector<float> zero_;        // [dim]
  std::vector<float> logits_;      // [vocab]
  std::vector<float> probs_;       // [vocab]
  MtpStats stats_;
};

// Records the target's final hidden rows of every position a session evaluates (rows: [n_past,
// dim]), for checks and tools that run the head by hand.
class HiddenRecorder final : public ForwardObserver {
 public:
  explicit HiddenRecorder(int64_t dim) : dim_(static_cast<size_t>(dim)) {}
  void on_chunk(std::span<const int32_t> tokens, int64_t pos0, const float* hidden) override;
  void on_rewrite(int64_t keep) override;
  std::vector<float> rows;

 private:
  size_t dim_;
};

// The head's logits for every prompt position, as llama.cpp's MTP context computes them when it
// follows a prompt batch: row p is token p paired with the target's hidden state of position
// p - 1 (zeros for p = 0), the whole prompt in one head forward. `session` (of `model`, loaded
// with its MTP block) must be empty; it evaluates the prompt. out: [prompt.size(), vocab].
// Errors: a failed forward pass, a model without a loaded MTP block, a prompt longer than the
// session's context.
[[nodiscard]] Status mtp_prompt_logits(Model& model, Session& session, std::span<const int32_t> prompt,
                                       std::vector<float>* out);

}  // namespace sniper
