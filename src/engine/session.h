// SPDX-License-Identifier: MIT
// Session: one conversation's state over a shared Model: the sequence state (KV cache rows,
// recurrent states; kv/sequence_state.h), the forward pass scratch, the thread pool and the
// tokens evaluated so far. Prompts are evaluated in chunks of
// `batch` tokens through matrix-matrix kernels; decode is one token per call.
// With n_checkpoints > 0, a model whose state cannot be rewound (delta-net layers, sliding
// rings) keeps checkpoints of that part of the state (kv/state_checkpoints.h): one at the end of
// a prompt chunk every checkpoint_interval tokens while a multi-token eval() runs, one after a
// restored state, and one wherever the caller asks (checkpoint()); truncate() then goes back to
// the latest checkpoint at or before the shared prefix instead of to the start.
// Thread-compatible: one call at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/result.h"
#include "base/thread_pool.h"
#include "engine/media_prompt.h"
#include "engine/model.h"
#include "kv/sequence_state.h"
#include "kv/state_checkpoints.h"
#include "model/transformer.h"

namespace sniper {

// Tokens before the end of a prompt where a front end (the server's slots, `sniper chat`) has a
// hybrid session take a checkpoint (Session::checkpoint()): the next turn of a conversation
// usually shares the prompt up to its generation prompt ("<|im_start|>assistant\n<think>\n" is
// 5 tokens, gemma4's "<|turn>model\n" 3), since a thinking model's reply is rendered again
// without its reasoning. 8 leaves room to spare.
inline constexpr int64_t kPromptCheckpointTail = 8;

// Sees what a session evaluates: every chunk with its final normed hidden rows (the rows the
// output head multiplies), and every change of positions without an evaluation. An MTP draft
// head keeps its own state in step with the target's this way (engine/mtp_draft.h).
class ForwardObserver {
 public:
  virtual ~ForwardObserver() = default;
  // The chunk `tokens` at positions pos0.. was evaluated and joined the history; hidden:
  // [tokens.size(), dim], valid during the call.
  virtual void on_chunk(std::span<const int32_t> tokens, int64_t pos0, const float* hidden) = 0;
  // Positions from `keep` on now hold other tokens than were evaluated there (a context shift, a
  // restored state): whatever the observer derived from them is stale.
  virtual void on_rewrite(int64_t keep) = 0;
};

struct SessionOptions {
  int64_t n_ctx = 0;                        // 0: the context the model's memory plan was made for
  int64_t batch = 64;                       // prefill chunk size
  KvConfig kv_type = KvConfig();            // K and V cache types, flash attention (kv/kv_cache.h)
  int n_threads = 0;                        // 0: all cores
  RoutingBias routing_bias;                 // opt-in cache-aware routing (changes outputs); keep 0 = off
  int64_t n_checkpoints = 0;                // state checkpoints kept for prefix reuse, [0, 256]; 0 = none
  int64_t checkpoint_interval = 512;        // tokens between the checkpoints eval() takes, >= 1
  RemoteExperts* remote_experts = nullptr;  // expert parallel (src/dist/): other ranks' experts; must outlive
                                            // the session (null: every expert in this process)
};

class Session {
 public:
  // The model must outlive the session; one session at a time may run a forward pass on a
  // streaming model (its expert cache and I/O engine are shared and stateful).
  static Result<std::unique_ptr<Session>> create(Model& model, const SessionOptions& options);

  // Evaluates `tokens` at positions n_past().. and appends them. When all_logits is non-null it
  // receives [tokens.size(), vocab] logits; last_logits() always holds the last row.
  // Errors (nothing is evaluated): empty input, a token id outside the vocabulary, or the
  // context limit, with the numbers. A forward pass that fails (a streamed read) keeps the
  // chunks evaluated before it, or for a state that cannot be rewound there, the latest
  // checkpoint at or before them (n_past() says how many tokens remain).
  [[nodiscard]] Status eval(std::span<const int32_t> tokens, std::vector<float>* all_logits = nullptr);

  // Evaluates a media chunk (media/media_chunk.h) at cells n_past().. : its embeddings in place
  // of token embeddings, its rope positions as engine/media_prompt.h says (M-RoPE models: the 2D
  // grid; the text after it resumes at the grid's largest position + 1), attending within itself
  // both ways when chunk.non_causal (in one forward). The history gets n_tokens kMediaToken cells
  // and a MediaSpan. last_logits() holds the chunk's last token's row. Errors (nothing is
  // evaluated): a width other than the model's, the context limit, a non-causal chunk longer
  // than one forward takes (max_media_chunk()), an MTP observer attached (it reads token ids).
  [[nodiscard]] Status eval_media(const MediaChunk& chunk);
  // Evaluates the prompt's cells from n_past() on (its first n_past() cells must be the
  // history's: truncate() to common_prefix() first; an Error otherwise). last_logits() then
  // holds the row after the prompt's last cell.
  [[nodiscard]] Status eval_prompt(const MediaPrompt& prompt);
  // The most tokens a media chunk that attends both ways may have in this session.
  int64_t max_media_chunk() const { return transformer_->max_chunk(); }

  const std::vector<float>& last_logits() const { return last_logits_; }
  int64_t n_past() const { return static_cast<int64_t>(history_.size()); }
  int64_t n_ctx() const { return state_->n_ctx(); }
  // Token ids evaluated so far, kMediaToken at media cells (media_spans() says which media).
  const std::vector<int32_t>& history() const { return history_; }
  // The media chunks in the history, in order.
  const std::vector<MediaSpan>& media_spans() const { return media_; }
  // Goes back to `keep` cells: truncate(keep), then evaluates again what the state could not
  // rewind to (text, and media chunks from the copies eval_media keeps). *n_redo: cells
  // evaluated again. Errors: a failed evaluation, or media to evaluate again whose chunk is not
  // held (a restored state's media: the error names the span).
  [[nodiscard]] Status rewind(int64_t keep, int64_t* n_redo);
  // Cells the history shares with a prompt (engine/media_prompt.h common_prefix_cells).
  int64_t common_prefix(const MediaPrompt& prompt) const {
    return common_prefix_cells(history_, media_, prompt.cells, prompt.spans);
  }
  // Forgets tokens from position n on and returns how many tokens the session keeps: n (KV rows
  // past n are overwritten later; a media chunk is kept whole or not at all, so n inside one
  // becomes its start) when the state can be rewound there; else the position of the
  // latest checkpoint at or before n, restored (a recurrent state or a wrapped ring cannot be
  // rewound), or 0 without one (the session starts over). The caller re-evaluates the tokens
  // from the returned position on. Keeping every token (n >= n_past()) always works.
  [[nodiscard]] int64_t truncate(int64_t n);
  // Context shift (llama.cpp's --context-shift, model/context_shift.h): forgets the tokens at
  // positions [n_keep, n_keep + n_discard) and moves the later ones down, their keys re-rotated
  // to the new positions. Errors (nothing changes): a model whose state cannot be shifted
  // (context_shift_support), or n_keep < 0, n_discard < 1 or n_keep + n_discard > n_past(),
  // with the numbers; a discarded range that cuts a media chunk, or any media in a model with
  // M-RoPE positions. last_logits() stays those of the last token evaluated.
  [[nodiscard]] Status shift_context(int64_t n_keep, int64_t n_discard);
  // What truncate(n) would keep, without changing anything.
  int64_t reusable_prefix(int64_t n) const;
  // Takes a checkpoint after the n_past() tokens evaluated so far (when checkpoints are on, the
  // state needs them and there is not one there already).
  void checkpoint();
  // True when checkpoints are on and the state needs them.
  bool keeps_checkpoints() const { return checkpoints_ != nullptr; }
  // Checkpoints kept now, and the bytes allocated for them (0 when off).
  int64_t n_checkpoints() const { return checkpoints_ ? checkpoints_->count() : 0; }
  size_t checkpoint_bytes() const { return checkpoints_ ? checkpoints_->bytes() : 0; }
  const Model& model() const { return model_; }
  // The most tokens one forward pass takes (eval() splits longer inputs into chunks of this).
  int64_t max_batch() const { return transformer_->max_batch(); }
  ThreadPool& pool() { return pool_; }
  const SequenceState& state() const { return *state_; }
  // For restoring a saved state (engine/session_state.h): the state to write, then
  // set_history() with the tokens it holds. last_logits() stays stale until the next eval().
  // Precondition of set_history: tokens.size() <= n_ctx() and the state of [0, size) written.
  SequenceState& state_mut() { return *state_; }
  void set_history(std::vector<int32_t> tokens, std::vector<MediaSpan> media = {});
  const RoutingStats& routing_stats() const { return transformer_->routing_stats(); }

  // For a pass over several sessions at once (engine/batch_eval.h), in three steps:
  // check_eval() validates `tokens` as eval() does (nothing changes); the caller runs the forward
  // over state_mut() at positions n_past().. (batchable() sessions only); then accept_rows()
  // records them (history, the last row's logits, the checkpoint eval() would take) or, when
  // the pass failed, drop_rows() rolls the state back as a failed eval() does.
  [[nodiscard]] Status check_eval(std::span<const int32_t> tokens) const;
  // True when plain text at n_past() can join a batch: rope positions equal cells (no M-RoPE
  // media before them) and no observer (it wants hidden rows).
  bool batchable() const { return observer_ == nullptr && rope_position(n_past()) == n_past(); }
  void accept_rows(std::span<const int32_t> tokens, const float* last_row_logits);
  void drop_rows(int64_t n_tok);
  const SessionOptions& options() const { return options_; }
  // Shows every later evaluation to `observer` (null: none). The observer must outlive the
  // session or be detached first.
  void set_observer(ForwardObserver* observer);
  ForwardObserver* observer() const { return observer_; }
  size_t memory_bytes() const {
    return state_->bytes() + transformer_->scratch_bytes() + checkpoint_bytes() + hidden_.capacity() * sizeof(float);
  }

 private:
  Session(Model& model, const SessionOptions& options);
  Model& model_;
  SessionOptions options_;
  ThreadPool pool_;
  std::unique_ptr<SequenceState> state_;
  std::unique_ptr<StateCheckpoints> checkpoints_;  // null when off or not needed
  std::unique_ptr<Transformer> transformer_;
  // Where the history's media chunks begin and end (kept whole: a cut inside one moves to its start).
  int64_t media_boundary(int64_t n) const;
  // The rope position of cell n (cells minus what the media before n saved: M-RoPE).
  int64_t rope_position(int64_t n) const;

  std::vector<int32_t> history_;
  std::vector<MediaSpan> media_;  // the history's media chunks, in order
  // [media_.size()] a copy of each chunk (null for a restored state's media), for rewind()
  std::vector<std::shared_ptr<const MediaChunk>> media_chunks_;
  std::vector<float> last_logits_;
  std::vector<float> chunk_logits_;
  ForwardObserver* observer_ = nullptr;
  std::vector<float> hidden_;  // [max_batch, dim] a chunk's hidden rows while an observer is set
};

}  // namespace sniper
