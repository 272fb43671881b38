// SPDX-License-Identifier: MIT
// Scheduler: N slots (a Session each, with its own KV cache) over one Model, a bounded FIFO
// queue of jobs, and the one thread that runs every forward pass. Each step builds one batch
// (engine/batch_eval.h) from the busy slots: the next token of every decoding slot, then prompt
// chunks of the prefilling slots (taking turns) up to the token budget (SessionOptions::batch,
// --batch), so a long prompt arriving while others stream is split across passes and never
// stalls them, every weight (routed experts included) is read once per pass for all slots, and
// a streaming model never sees two passes at the same time. Each slot samples its own row (its
// own sampler, grammar, stop strings). A speculative slot brings its pending token and drafts
// (SpeculativeDecoder::begin) to the same pass, which verifies the drafts of every such slot at
// once, and accepts and rolls back on its own after it (finish); its drafts come on top of the
// budget (the pass is sized for them), as they did when it verified alone. Slots that cannot join a batch (an MTP
// head's observer, media in an M-RoPE history, verification rows that do not fit the pass) run their own pass in the
// same step, with the same result.
// A job goes to the idle slot whose history shares the longest prefix with its prompt, if
// that prefix is at least half the slot's history, else to the least recently used idle slot;
// the shared prefix is not evaluated again (at least one token is, for fresh logits). On a
// hybrid model (delta-net layers, sliding rings) the part kept is the latest state checkpoint at
// or before the shared prefix (SessionOptions::n_checkpoints; each prompt also checkpoints
// kPromptCheckpointTail tokens before its end, where the next turn of a chat usually departs).
// Speculative decoding (optional, one source for all slots): n-gram lookup, or a draft model
// whose Model is shared and whose DraftModel session (its own KV cache) is one per slot, set to
// each job's sampling settings. Grammar-constrained jobs decode without drafts.
// A cancelled job stops before its next pass and frees its slot. A failing job ends with an
// error and never touches another slot, except that a batched pass that fails (a streamed read)
// ends every job in it.
// Thread-safe: submit() and the accessors may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "base/result.h"
#include "engine/batch_eval.h"
#include "engine/draft_model.h"
#include "engine/generator.h"
#include "engine/model.h"
#include "engine/mtp_draft.h"
#include "engine/ngram_draft.h"
#include "engine/session.h"
#include "engine/speculative.h"
#include "server/job.h"
#include "server/metrics.h"

namespace sniper::server {

struct SchedulerOptions {
  int n_slots = 1;
  int queue_capacity = 16;  // jobs waiting beyond the slots
  SessionOptions session;
  uint64_t model_fingerprint = 0;
  int64_t spec_ngram_size = 0;  // > 0: each generate job decodes speculatively with n-gram lookup
  // Non-null: each generate job decodes speculatively with this draft model (borrowed; it must
  // outlive the scheduler, share the target's vocabulary (check_draft_vocab) and be planned for
  // n_slots sessions of the target's context). Excludes spec_ngram_size.
  Model* draft_model = nullptr;
  // Each slot drafts with the model's own MTP head (engine/mtp_draft.h; the model is loaded with
  // its MTP block). Excludes spec_ngram_size and draft_model.
  bool spec_mtp = false;
  SpecConfig spec;  // with spec_ngram_size or draft_model (engine/speculative.h)
  // --context-shift / --keep (engine/generate.h): a slot whose context fills keeps the first
  // n_keep tokens of its prompt (resolve_n_keep) and drops half of the rest instead of ending.
  bool context_shift = false;
  int64_t n_keep = 0;
  // A slot's most rows in a pass: its decode token, or the pending token and --draft-max drafts
  // it verifies there (n-gram lookup or a draft model; an MTP head's slots verify alone).
  int64_t pass_rows_per_slot() const { return spec_ngram_size > 0 || draft_model != nullptr ? 1 + spec.draft_max : 1; }
};

class Scheduler {
 public:
  // Creates the slots' sessions (and draft sessions) and starts the thread. Errors: session
  // creation (context too large for the plan, memory), slot/queue counts out of range, bad
  // speculative settings (both draft sources, with context shift, a draft-max over the batch).
  static Result<std::unique_ptr<Scheduler>> create(Model& model, const Tokenizer& tokenizer,
                                                   const SchedulerOptions& options, Metrics* metrics);
  ~Scheduler();  // stop()s

  // Queues a job; false (job untouched) when the queue is full or the scheduler stopped.
  [[nodiscard]] bool submit(const std::shared_ptr<Job>& job);
  // Cancels running and queued jobs and joins the thread. Idempotent.
  void stop();

  int64_t n_ctx() const { return n_ctx_; }
  int n_slots() const { return static_cast<int>(slots_.size()); }
  int64_t busy_slots() const;
  int64_t queued() const;

 private:
  struct Slot {
    std::unique_ptr<Session> session;
    std::shared_ptr<Job> job;
    std::optional<Generator> generator;
    std::unique_ptr<DraftModel> draft;             // options.draft_model: this slot's draft session
    std::unique_ptr<MtpDraft> mtp;                 // options.spec_mtp: the MTP head following `session`
    std::unique_ptr<EmbeddingPooler> pooler;       // kEmbed: the session's observer while the prompt runs
    std::optional<SpeculativeDecoder> spec;        // speculative decoding of this slot's job
    int32_t pending = -1;                          // spec: the sampled token not yet evaluated
    std::vector<int32_t> to_eval;                  // prompt cells still to evaluate (kMediaToken at media)
    std::vector<MediaSpan> to_eval_spans;          // the media among them (starts count from to_eval's first cell)
    std::vector<const MediaChunk*> to_eval_media;  // their chunks (the job's), in order
    size_t next_span = 0;                          // the first of to_eval_spans not yet evaluated
    size_t eval_pos = 0;
    size_t checkpoint_at = 0;  // 0, or the to_eval index after which to take a state checkpoint
    int64_t n_keep = 0;        // context shift: tokens kept at the start (resolved for this prompt)
    bool decoding = false;
    JobResult result;
    std::chrono::steady_clock::time_point t_start;
    std::chrono::steady_clock::time_point t_token;  // when the last token was sampled
    bool sampled = false;                           // a token was sampled (t_token is valid)
    uint64_t last_used = 0;
  };

  Scheduler(Model& model, const Tokenizer& tokenizer, const SchedulerOptions& options, Metrics* metrics);
  void loop();
  // Assigns queued jobs to idle slots. Requires mu_.
  void assign_locked();
  void start_job(Slot& slot, std::shared_ptr<Job> job);
  // One step: every busy slot's work, batchable slots in one pass.
  void step();
  // Samples the next token of a decoding slot that batches; false when the job ended. *token:
  // the token to evaluate (after a context shift when one was due).
  bool sample_next(Slot& slot, int32_t* token);
  // A prefill chunk of `n` tokens was evaluated: moves on (checkpoint, saved state, decoding).
  void prefill_done(Slot& slot, size_t n);
  // Runs one prefill chunk or one decode step of the slot's job on its own (slots that cannot batch).
  void advance(Slot& slot);
  // One speculative round (draft, verify, roll back) of a decoding slot with a pending token,
  // on its own (a slot that cannot batch).
  void advance_speculative(Slot& slot);
  // The end of a speculative round whose rows were evaluated (in the pass or alone): decides and
  // pushes the tokens, rolls back (SpeculativeDecoder::finish).
  void finish_verification(Slot& slot, std::span<const float> logits);
  // Runs `decide` (a round, or its end) with the step callback that streams the slot's tokens,
  // then ends the job when a step did or `decide` failed.
  void speculative_steps(Slot& slot,
                         const std::function<Status(const std::function<void(const GeneratorStep&)>&)>& decide);
  // Tokens the slot's job may still generate (-1: no limit).
  int64_t remaining_tokens(const Slot& slot) const;
  void finish(Slot& slot, const std::string& error = {}, int error_status = 500);
  // A token of the slot's job was sampled: time to first token or inter-token latency.
  void note_token(Slot& slot);
  void publish_engine_stats();

  Model& model_;
  const Tokenizer& tokenizer_;
  SchedulerOptions options_;
  std::unique_ptr<NgramDraft> ngram_;  // shared by the slots (stateless between calls)
  Metrics* metrics_;
  int64_t n_ctx_ = 0;
  int64_t batch_ = 64;
  std::vector<Slot> slots_;
  std::unique_ptr<BatchEvaluator> batcher_;
  size_t prefill_turn_ = 0;  // the slot that prefills first in the next pass (they take turns)
  uint64_t clock_ = 0;

  mutable std::mutex mu_;  // guards queue_, stopping_, busy_
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  int64_t busy_ = 0;
  bool stopping_ = false;
  std::mutex stop_mu_;  // serializes stop()
  std::thread thread_;
};

}  // namespace sniper::server
