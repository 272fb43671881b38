// SPDX-License-Identifier: MIT
// Decode against the RAM roofline probed right before each token. RAM bandwidth on a shared
// machine swings within seconds (one run here probed 80.3 GB/s before decode and 48.9 after), so
// a roofline probed before load and after decode can be far from the bandwidth the decode had.
// Each pair (a short probe, then one decode token) measures the ratio at one moment; the median
// over the pairs is the figure. Used by `sniper bench` when the model sits in RAM.
#pragma once

#include <cstdint>
#include <vector>

#include "base/result.h"
#include "engine/session.h"

namespace sniper::cli {

// -1: not measured (as in bench's JSON).
struct PairedRoofline {
  int64_t n_pairs = 0;
  double roofline_gbps = -1;  // median of the probes
  double weight_gbps = -1;    // median over the tokens of weight bytes / the token's time
  double share = -1;          // median of the pairs' weight GB/s / probed GB/s
  double share_low = -1;      // the lowest pair's share
  double share_high = -1;     // the highest pair's share
};

// Decodes `tokens` one at a time in `session` (at its current position), each right after a RAM
// probe of `probe_bytes` (best of `probe_reps` reads) on the session's threads.
// weight_bytes_per_token is what one decode token streams. Fails when the context has no room
// for the tokens, or the probe's buffer cannot be allocated.
Result<PairedRoofline> measure_paired_roofline(Session& session, double weight_bytes_per_token,
                                               const std::vector<int32_t>& tokens,
                                               uint64_t probe_bytes = uint64_t{256} << 20, int probe_reps = 2);

}  // namespace sniper::cli
