// SPDX-License-Identifier: MIT
// BatchEvaluator: one forward pass over several sessions at once (model/batch_rows.h): each
// item is a session's next tokens (a prompt chunk, one decode token), evaluated at the
// session's own positions over its own state, as Session::eval() would, while every weight
// (dense FFN, routed experts resident or streamed, the output head) is read once for all rows.
// The server's scheduler builds one such pass per step from all its busy slots.
// Equivalence: each session gets the logits its own eval() of the same chunk gives, bit for bit
// where the weights are quantized (docs/batching.md lists what depends on the batch).
// Thread-compatible: one pass at a time, and no session of a pass runs eval() meanwhile.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/result.h"
#include "base/thread_pool.h"
#include "engine/model.h"
#include "engine/session.h"
#include "model/transformer.h"

namespace sniper {

struct BatchItem {
  Session* session = nullptr;
  std::span<const int32_t> tokens;  // evaluated at session->n_past()..
  // True: logits of every row are kept (a speculative verification; BatchEvaluator::logits());
  // the session's last_logits() gets the last row either way.
  bool all_logits = false;
};

// The most rows one pass takes: a --batch of 4096 prompt tokens and a decode row for each of
// 256 slots.
inline constexpr int64_t kMaxPassRows = 4096 + 256;

// The rows of a server's pass: the prompt budget `batch` plus, for each of n_slots slots, its
// decode row or its verification rows (rows_per_slot: 1, or 1 + --draft-max when slots verify
// drafts in the pass), at most kMaxPassRows.
inline int64_t pass_rows(int64_t batch, int64_t n_slots, int64_t rows_per_slot) {
  return std::min(kMaxPassRows, batch + n_slots * rows_per_slot);
}

class BatchEvaluator {
 public:
  // A pass of up to max_rows rows over sessions of `model` with the context n_ctx (the sessions'),
  // on `pool` (borrowed: it must outlive the evaluator and run nothing else during a pass).
  // remote_experts: under expert parallelism, the other ranks' routed experts (null: all here;
  // borrowed, it must outlive the evaluator); the pass sends each rank its share of the pass's
  // expert union once.
  // Errors: max_rows outside [1, kMaxPassRows].
  static Result<std::unique_ptr<BatchEvaluator>> create(Model& model, int64_t max_rows, int64_t n_ctx,
                                                        const RoutingBias& routing_bias, ThreadPool& pool,
                                                        RemoteExperts* remote_experts = nullptr);

  // Evaluates every item in one pass. Each item needs a batchable() session (distinct), at
  // least one token and at most max_seq_rows(); all together at most max_rows(). Errors before
  // the pass (nothing changes): an item that Session::check_eval() refuses (named by its index),
  // or one of the limits above. A failed pass (a streamed read) leaves every session of the pass
  // as its failed eval() would (Session::drop_rows).
  [[nodiscard]] Status eval(std::span<const BatchItem> items);

  int64_t max_rows() const { return transformer_->max_batch(); }
  // The logits of item i of the last successful eval(): [tokens.size(), vocab] for an
  // all_logits item, else its last row; valid until the next eval().
  std::span<const float> logits(size_t i) const;
  // The most tokens one session may bring to a pass (sliding rings: model/config.h).
  int64_t max_seq_rows() const { return transformer_->max_seq_rows(); }
  // The routing of every pass so far (RoutingStats::experts_read against experts_per_sequence:
  // the experts shared across the batch's sequences).
  const RoutingStats& routing_stats() const { return transformer_->routing_stats(); }
  size_t scratch_bytes() const { return transformer_->scratch_bytes() + logits_.capacity() * sizeof(float); }

 private:
  BatchEvaluator(Model& model, ThreadPool& pool) : model_(model), pool_(pool) {}
  Model& model_;
  ThreadPool& pool_;
  std::unique_ptr<Transformer> transformer_;
  std::vector<int32_t> tokens_;
  std::vector<SeqRows> seqs_;
  std::vector<int64_t> out_rows_;
  std::vector<size_t> first_out_;  // [items + 1] each item's first row among out_rows_, then their count
  std::vector<float> logits_;
};

}  // namespace sniper
