// SPDX-License-Identifier: MIT
// `sniper bench` under mpirun (src/dist): each rank's share of a decode's expert work and what the
// exchange cost, from the figures before and after the timed decode.
#pragma once

#include <cstdint>
#include <vector>

#include "dist/cluster.h"
#include "dist/expert_parallel.h"
#include "engine/model.h"

namespace sniper::cli {

struct RankSnapshot {
  FrontFigures front;
  std::vector<RankFigures> ranks;  // [0] empty
};

// The figures now (rank 0's and every serving rank's); an error names the rank that did not answer.
[[nodiscard]] Result<RankSnapshot> take_rank_snapshot(ClusterExperts& experts);

// Prints one line for rank 0 (time sending and waiting per token, bytes per token) and one per
// serving rank (share of the routed rows, cache hit rate, SSD GB/s, compute per token, its plan),
// over `n_tokens` decode tokens that took `decode_s`.
void print_rank_figures(const Cluster& cluster, const Model& model, const RankSnapshot& before,
                        const RankSnapshot& after, int64_t n_tokens, double decode_s);

}  // namespace sniper::cli
