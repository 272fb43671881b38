// SPDX-License-Identifier: MIT
// Expert parallelism over a Cluster. Rank 0 (the front end) keeps attention, routers, shared
// experts, embeddings and the head; routed expert e of every MoE layer belongs to rank
// e mod W (rank 0 holds its share). ClusterExperts is rank 0's side of the RemoteExperts seam
// (model/blocks/remote_experts.h); serve_experts() is the loop every other rank runs, with its own
// memory budget, expert cache, prefetch and I/O.
// Wire format (native byte order: every rank runs the same build, checked at start-up):
//   request (tag kTagExperts):  int64 layer_idx, n_rows, n_pairs, dim; float rows[n_rows][dim];
//                               ExpertPair pairs[n_pairs]
//   answer  (tag kTagAnswer):   int64 code (0 = ok), n; float out[n_pairs][dim] (ok) or char message[n]
//   stop    (tag kTagStop):     empty; the serving loop returns
//   figures (tag kTagFigures):  empty; answered (tag kTagFiguresAnswer) with a RankFigures
#pragma once

#include <cstdint>
#include <vector>

#include "dist/cluster.h"
#include "engine/model.h"
#include "model/blocks/remote_experts.h"

namespace sniper {

inline constexpr int kTagExperts = 1;
inline constexpr int kTagAnswer = 2;
inline constexpr int kTagStop = 3;
inline constexpr int kTagFigures = 4;
inline constexpr int kTagFiguresAnswer = 5;

// A serving rank's figures since it started serving (bench and `sniper top` take differences).
struct RankFigures {
  uint64_t requests = 0;        // expert requests answered
  uint64_t rows = 0;            // routed (token, expert) pairs computed
  uint64_t bytes_in = 0;        // request bytes received
  uint64_t bytes_out = 0;       // answer bytes sent
  double compute_s = 0;         // computing the answers (its expert reads included)
  uint64_t cache_requests = 0;  // its expert cache's lookups (0 when its experts are resident)
  uint64_t cache_hits = 0;
  uint64_t ssd_bytes = 0;      // read by its I/O engine
  double ssd_stall_s = 0;      // its compute threads waiting for those reads
  uint64_t planned_bytes = 0;  // its memory plan (weights, caches, buffers)
};

// Rank 0's side: what the expert exchange cost the front end.
struct FrontFigures {
  uint64_t posts = 0;  // requests sent (one per layer per rank with routed rows)
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  double send_s = 0;  // in post(): packing and sending
  double wait_s = 0;  // in collect(): waiting for and copying the answers
};

class ClusterExperts final : public RemoteExperts {
 public:
  // The cluster must outlive this object. Thread-compatible (rank 0's forward thread only).
  explicit ClusterExperts(Cluster& cluster) : cluster_(cluster) {}

  int n_ranks() const override { return cluster_.size(); }
  int owner(int64_t layer_idx, int32_t expert) const override {
    (void)layer_idx;
    return static_cast<int>(expert % cluster_.size());
  }
  [[nodiscard]] Status post(int rank, int64_t layer_idx, const float* h, int64_t n_rows, int64_t dim,
                            std::span<const ExpertPair> pairs) override;
  [[nodiscard]] Status collect(int rank, float* out, int64_t n_pairs, int64_t dim) override;

  // Tells every serving rank to return from serve_experts(). Errors name the first rank that
  // could not be told; after a lost rank, it tells none (the job is aborted on exit).
  [[nodiscard]] Status stop_all();
  // Every serving rank's figures ([0] is empty: rank 0 serves none), asked for and answered
  // within the rank timeout. Errors name the rank.
  [[nodiscard]] Result<std::vector<RankFigures>> rank_figures();
  const FrontFigures& front_figures() const { return front_; }

 private:
  Cluster& cluster_;
  std::vector<unsigned char> send_;  // one request being sent
  std::vector<unsigned char> recv_;  // one answer
  FrontFigures front_;
};

// The serving rank's loop: answers rank 0's expert requests with this process's model (its own
// expert cache and I/O) until rank 0 sends kTagStop. max_batch: the most rows a request may hold
// (rank 0's prefill chunk); n_threads: the compute threads (0 = all cores). A malformed request or
// a failed expert read is answered with an error message (rank 0 fails that request); only a
// broken connection to rank 0 ends the loop with an error.
[[nodiscard]] Status serve_experts(Cluster& cluster, Model& model, int64_t max_batch, int n_threads);

}  // namespace sniper
