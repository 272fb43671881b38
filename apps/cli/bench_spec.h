// SPDX-License-Identifier: MIT
// `sniper bench --spec`: speculative decoding against plain decoding in the same run, and the
// verification-cost curve. Measured: acceptance rate, tokens per target forward, bytes read per
// token and tok/s of greedy decoding with and without drafts (same prompt, same session state,
// outputs checked identical). Then one forward pass of 1, 2, 4, 8 and 16 tokens after the prompt,
// a few times each under the same memory budget: time, union of experts per layer, bytes read;
// and from those costs the tok/s that a per-token acceptance of 0.5 / 0.7 / 0.9 would give
// (labelled model-derived: a random-weight model cannot show a real acceptance rate).
#pragma once

#include "args.h"

namespace sniper::cli {

// The flags bench adds for --spec (besides spec_flags()).
std::vector<FlagSpec> bench_spec_flags();
// Runs the speculative bench from bench's parsed flags; returns the process exit code.
int run_spec_bench(const Args& args);

}  // namespace sniper::cli
