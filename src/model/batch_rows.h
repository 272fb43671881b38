// SPDX-License-Identifier: MIT
// A ragged batch: the rows of one forward pass, grouped by sequence. Each sequence contributes a
// run of consecutive positions (a prompt chunk, one decode token, a speculative draft) with its
// own SequenceState (KV rows, recurrent state, window rings). Row-wise work (norms, projections,
// FFN, experts, the output head) runs over every row at once, so each weight is read once per
// pass for all sequences; work on a sequence's state (rope positions, KV stores, attention, the
// delta-net recurrence) runs per sequence. A single-sequence forward is a batch of one.
#pragma once

#include <cstdint>
#include <span>

#include "base/check.h"
#include "kv/sequence_state.h"

namespace sniper {

// One sequence's rows in a batch: rows [row0, row0 + n_tok) hold its tokens at positions
// pos0, pos0 + 1, ... and read / update *state.
struct SeqRows {
  SequenceState* state = nullptr;
  int64_t row0 = 0;
  int64_t n_tok = 0;
  int64_t pos0 = 0;
};

// CHECKs that seqs cover rows [0, n_rows) in order, each with a state, at least one row and
// positions inside its context, and that no state appears twice. Returns n_rows.
inline int64_t check_batch_rows(std::span<const SeqRows> seqs) {
  CHECK(!seqs.empty(), "a batch needs at least one sequence");
  int64_t next = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const SeqRows& s = seqs[i];
    CHECK(s.state != nullptr, "batch sequence %zu has no state", i);
    CHECK(s.row0 == next && s.n_tok >= 1, "batch sequence %zu: rows [%ld, +%ld), expected to start at %ld", i,
          static_cast<long>(s.row0), static_cast<long>(s.n_tok), static_cast<long>(next));
    CHECK(s.pos0 >= 0 && s.pos0 + s.n_tok <= s.state->n_ctx(),
          "batch sequence %zu: positions [%ld, %ld) exceed the context %ld", i, static_cast<long>(s.pos0),
          static_cast<long>(s.pos0 + s.n_tok), static_cast<long>(s.state->n_ctx()));
    for (size_t j = 0; j < i; ++j) CHECK(seqs[j].state != s.state, "batch sequences %zu and %zu share a state", j, i);
    next += s.n_tok;
  }
  return next;
}

}  // namespace sniper
