// SPDX-License-Identifier: MIT
// Speculative decoding: a DraftSource guesses the next tokens, the target evaluates the pending
// token plus the guesses in one batched forward pass (a streamed MoE layer reads the union of
// their experts once), and the acceptance rule keeps a prefix of the guesses:
//   greedy   a draft is kept while it equals the target's argmax at its position (so the output
//            is the token sequence plain greedy decoding picks from the same logits);
//   sampling sampling/speculative_rule.h (min(1, p/q), residual on rejection): the output is
//            distributed exactly as the target's sampler would draw it.
// The first token the target disagrees with (or the bonus token after all guesses) becomes the
// next pending token. Rejected positions are rolled back: KV rows past the kept tokens are
// simply forgotten; a state that cannot be rewound (delta-net recurrent state, a wrapped sliding
// ring) is restored from the checkpoint taken before the verification pass and the kept tokens
// are evaluated again, so the state equals that of a run that never saw the rejected tokens.
// The draft length adapts to the measured acceptance within [draft_min, draft_max]. A source
// whose drafts keep failing (a moving average of the acceptance below kBackoffAcceptance) is not
// asked for a growing number of steps (1, 2, 4 .. kMaxBackoffSteps), which are plain single-token
// forwards; one accepted draft ends the back-off. Outputs are unchanged by it.
// Thread-compatible: one SpeculativeDecoder per sequence.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/result.h"
#include "engine/draft_source.h"
#include "engine/generator.h"
#include "engine/session.h"

namespace sniper {

inline constexpr double kBackoffAcceptance = 0.15;
inline constexpr int64_t kMaxBackoffSteps = 32;

struct SpecConfig {
  int64_t draft_max = 16;  // most tokens drafted per round, [1, 256]
  int64_t draft_min = 0;   // fewer drafted tokens than this are not verified (plain step), [0, draft_max]
  bool adaptive = true;    // follow the measured acceptance within [max(1, draft_min), draft_max], and back off
  // A draft model or MTP head stops drafting at a token it is less sure of than this (its
  // probability among the draft's 10 likeliest, llama.cpp's --draft-p-min), [0, 1]; 0 = off.
  // N-gram lookup has no probabilities and ignores it.
  float p_min = 0.0f;
  // Names the field, the value and the allowed range.
  [[nodiscard]] Status validate() const;
};

struct SpecStats {
  int64_t n_rounds = 0;          // verification passes (pending token + >= 1 draft)
  int64_t n_plain = 0;           // single-token forwards (no draft proposed, or backing off)
  int64_t n_backoff = 0;         // of those, steps the source was not asked (its drafts kept failing)
  int64_t n_drafted = 0;         // draft tokens verified
  int64_t n_accepted = 0;        // draft tokens kept
  int64_t n_rollback_evals = 0;  // re-evaluations after a checkpoint restore (hybrid states)
  int64_t n_tokens = 0;          // tokens emitted by the speculative loop
  double acceptance() const { return n_drafted > 0 ? static_cast<double>(n_accepted) / n_drafted : 0; }
  // Tokens emitted per target forward (verification passes + single-token steps).
  double tokens_per_forward() const {
    const int64_t f = n_rounds + n_plain;
    return f > 0 ? static_cast<double>(n_tokens) / f : 0;
  }
};

// Forgets positions >= keep of `session`. A state that cannot be rewound there is restored from
// the latest checkpoint at or before keep and the tokens from it to keep are evaluated again
// (copied from the history into `scratch` first), so the state equals that of a run that never
// saw the forgotten tokens. Sets *n_redo to the tokens evaluated again (0 when it could rewind).
// Errors: that re-evaluation failed (the session keeps what Session::eval documents).
[[nodiscard]] Status rollback_session(Session& session, int64_t keep, std::vector<int32_t>& scratch, int64_t* n_redo);

class SpeculativeDecoder {
 public:
  // Errors: a bad config; a session whose state needs checkpoints for rollback (recurrent or
  // sliding layers) but keeps none; draft_max + 1 above the session's forward batch.
  [[nodiscard]] static Result<SpeculativeDecoder> create(const Session& session, DraftSource& source,
                                                         const SpecConfig& config);

  // Decodes from `pending` (the token sampled last, not yet evaluated): drafts, verifies, rolls
  // back and pushes every decided token through `gen`, in order, to `on_step` (a step with done
  // ends the round; the caller stops). Afterwards the session holds the sequence up to, but not
  // including, the new pending token (the last step's token). Errors: a failed forward pass (the
  // session keeps what Session::eval documents) or a failed draft.
  [[nodiscard]] Status round(Session& session, Generator& gen, int32_t pending, int64_t n_remaining,
                             const std::function<void(const GeneratorStep&)>& on_step);

  // round() in three steps, for a caller that evaluates several sequences in one forward pass
  // (engine/batch_eval.h, the server's scheduler): begin() drafts and returns the tokens to
  // evaluate at session.n_past() (`pending`, then the drafts; `pending` alone for a plain step),
  // having taken the checkpoint a rollback will need; the caller evaluates exactly those tokens
  // on `session`, keeping the logits of every row; finish() takes them ([rows, vocab]), decides
  // and pushes the tokens and rolls back, as round() does. round() is begin(), session.eval()
  // with all logits, finish(): the same tokens, statistics and state whichever way the rows were
  // evaluated, as long as their logits are the same. The span begin() returns is valid until the
  // next begin(). Errors: begin: a failed draft (the session is unchanged); finish: a failed
  // re-evaluation after a restore (the session keeps what Session::eval documents).
  // Precondition of finish: the previous call was begin() and the session evaluated its tokens
  // (CHECKed); after a failed pass the caller calls neither again for this round.
  [[nodiscard]] Result<std::span<const int32_t>> begin(Session& session, int32_t pending, int64_t n_remaining);
  [[nodiscard]] Status finish(Session& session, Generator& gen, std::span<const float> logits,
                              const std::function<void(const GeneratorStep&)>& on_step);

  const SpecStats& stats() const { return stats_; }
  int64_t draft_length() const { return n_draft_; }

 private:
  SpeculativeDecoder(DraftSource& source, const SpecConfig& config);
  DraftSource* source_;
  SpecConfig config_;
  SpecStats stats_;
  int64_t n_draft_;
  double acceptance_avg_ = 1.0;  // moving average of accepted / drafted per round
  int64_t backoff_ = 0;          // steps of the latest back-off (0: not backing off)
  int64_t skip_ = 0;             // plain steps left before the source is asked again
  Draft draft_;
  std::vector<int32_t> context_;  // history + pending (the draft source's input)
  std::vector<int32_t> batch_;    // pending + drafts
  int64_t n_before_ = -1;         // between begin() and finish(): the session's n_past() at begin()
  std::vector<int32_t> redo_;     // tokens to evaluate again after a restore
  std::vector<float> logits_;     // [batch, vocab]
  std::vector<float> p_;          // [vocab] target distribution
  std::vector<float> residual_;   // [vocab]
};

}  // namespace sniper
