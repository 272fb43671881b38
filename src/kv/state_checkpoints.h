// SPDX-License-Identifier: MIT
// StateCheckpoints: a session's copies of the part of its sequence state that cannot be rewound
// (SequenceState::save_checkpoint: every delta-net layer's conv and recurrent state, every
// sliding ring's rows), each taken after some number of tokens `pos`. Prefix reuse on a hybrid
// model restores the latest checkpoint at or before the shared prefix and recomputes only the
// tokens after it (the full-context KV rows of positions < pos are still valid).
//
// At most max_count checkpoints are kept, in increasing pos; when full, the oldest (lowest pos)
// is dropped and its buffer reused. Each buffer holds checkpoint_bytes(n_ctx) bytes and is
// allocated once, the first time the count reaches it, so memory is bounded by
// max_count * SequenceState::checkpoint_bytes(n_ctx) (what the memory plan counts) and nothing
// allocates after the first max_count saves. Invariant: a kept checkpoint at pos is the state
// after the session's first pos tokens, so the owner drops every checkpoint past the tokens it
// keeps whenever it forgets tokens (drop_after). Thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kv/sequence_state.h"

namespace sniper {

class StateCheckpoints {
 public:
  // max_count >= 1 (CHECKed; the caller validates user input); state_bytes: the largest
  // checkpoint of the state this keeps (SequenceState::checkpoint_bytes(n_ctx)).
  StateCheckpoints(int64_t max_count, size_t state_bytes);

  // Saves `state` after n >= 1 tokens, replacing a checkpoint at the same n; drops the oldest
  // when max_count are kept. Precondition: every kept checkpoint is at a pos <= n
  // (drop_after() when tokens were forgotten).
  void save(const SequenceState& state, int64_t n);
  // The position of the latest checkpoint at or before n, 0 when there is none.
  int64_t latest_at_or_before(int64_t n) const;
  // Loads the latest checkpoint at or before n into `state`, drops the ones after it and returns
  // its position; 0 (state untouched, every checkpoint dropped) when there is none.
  int64_t restore(SequenceState& state, int64_t n);
  // Forgets the checkpoints past n tokens (their buffers are kept for reuse).
  void drop_after(int64_t n);
  void clear() { drop_after(0); }

  int64_t count() const { return static_cast<int64_t>(kept_.size()); }
  int64_t max_count() const { return max_count_; }
  // The latest checkpoint's position, 0 when there is none.
  int64_t latest() const { return kept_.empty() ? 0 : kept_.back().pos; }
  // Bytes allocated for checkpoints so far (kept and spare buffers).
  size_t bytes() const { return allocated_bytes_; }
  // The most bytes this can allocate: max_count * state_bytes.
  size_t max_bytes() const { return static_cast<size_t>(max_count_) * state_bytes_; }

 private:
  struct Checkpoint {
    int64_t pos = 0;
    std::vector<uint8_t> data;  // [state_bytes_], the first checkpoint_bytes(pos) used
  };
  int64_t max_count_;
  size_t state_bytes_;
  size_t allocated_bytes_ = 0;
  std::vector<Checkpoint> kept_;   // increasing pos
  std::vector<Checkpoint> spare_;  // dropped ones, buffers kept
};

}  // namespace sniper
