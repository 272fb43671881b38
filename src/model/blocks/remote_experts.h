// SPDX-License-Identifier: MIT
// RemoteExperts: the expert-parallel seam. With it, MoeFfn runs only the routed experts this
// process owns and hands the (token, slot) pairs routed to other ranks' experts to their owners;
// each owner returns, per pair, the expert's output row already scaled by the expert scale and
// the routing weight (exactly what MoeFfn writes for a local expert), and MoeFfn sums the slots in
// the single-process order, so the result is bitwise that of one process. The transport (MPI,
// src/dist/) lives behind this interface: model code never calls it directly.
// One MoE layer at a time: post() to every rank that owns a routed pair, then collect() from each
// of them in turn, before the next layer. Thread-compatible.
#pragma once

#include <cstdint>
#include <span>

#include "base/result.h"

namespace sniper {

// One routed pair handed to a remote owner: row `row` of the rows sent with it, in slot `slot` of
// its token, to expert `expert` with routing weight `weight`.
struct ExpertPair {
  int32_t row = 0;
  int32_t slot = 0;
  int32_t expert = 0;
  float weight = 0.0f;
};

class RemoteExperts {
 public:
  virtual ~RemoteExperts() = default;
  // Ranks taking part (1: nothing is remote).
  virtual int n_ranks() const = 0;
  // The rank that owns `expert` of MoE layer `layer_idx`; 0 = this process (the front end).
  virtual int owner(int64_t layer_idx, int32_t expert) const = 0;
  // Sends rank `rank` the experts' input rows h [n_rows, dim] and the pairs routed to its experts
  // (rows index h). The bytes are copied: the caller may reuse h and pairs on return.
  [[nodiscard]] virtual Status post(int rank, int64_t layer_idx, const float* h, int64_t n_rows, int64_t dim,
                                    std::span<const ExpertPair> pairs) = 0;
  // Waits (bounded by the transport's deadline) for rank `rank`'s answer to its last post():
  // out [n_pairs, dim], one weighted output row per pair, in the posted order. An error names the
  // rank (and its host) when it failed, died or timed out.
  [[nodiscard]] virtual Status collect(int rank, float* out, int64_t n_pairs, int64_t dim) = 0;
};

}  // namespace sniper
