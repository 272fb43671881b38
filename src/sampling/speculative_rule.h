// SPDX-License-Identifier: MIT
// The speculative-sampling acceptance rule (Leviathan et al. 2023, Chen et al. 2023): a draft
// token d drawn from the draft's distribution q is kept with probability min(1, p(d) / q(d)),
// where p is the target's distribution at that position; on rejection the token is drawn from
// norm(max(0, p - q)). Whatever q is, the emitted token is then distributed exactly as p. An
// n-gram draft is a point mass on d (q = null here): keep with probability p(d), else draw
// from p with d removed, renormalised.
// Thread-compatible (the Sampler supplies the random draws).
#pragma once

#include <cstdint>
#include <vector>

#include "sampling/sampler.h"

namespace sniper {

struct SpecDecision {
  int32_t token = -1;     // the token to emit at this position
  bool accepted = false;  // token == the draft
};

// p[0, n_vocab): the target's distribution (Sampler::distribution); q: the draft's, or null for a
// point mass on `draft`. Draws u and, on rejection, one token from `sampler`'s random sequence.
// `residual` is scratch ([n_vocab] after the call). Preconditions (CHECKed): 0 <= draft < n_vocab,
// p sums to 1 within float rounding, q[draft] > 0 when q is given.
SpecDecision speculative_accept(const float* p, const float* q, int32_t n_vocab, int32_t draft, Sampler& sampler,
                                std::vector<float>& residual);

}  // namespace sniper
