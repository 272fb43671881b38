// SPDX-License-Identifier: MIT
// MoeFfn's expert-parallel half (model/blocks/remote_experts.h). Front end: after routing, the
// (token, slot) pairs whose expert another rank owns are posted to that rank with the experts'
// input rows they need (each token's row once per rank); this rank runs its own experts; the
// answers land in exp_out_ at their (token, slot), where a local expert's output would have been,
// and the slots are summed in the usual order. Serving side: serve_pairs() runs a request's pairs
// through the same run_experts() path. An expert's output row depends only on its input row (the
// kernels run in vec-dot order, bitwise the same for 1 or many rows), so where it runs does not
// change a bit.
#include <algorithm>
#include <cstring>

#include "model/blocks/moe_ffn.h"

namespace sniper {

Status MoeFfn::post_remote(int64_t layer_idx, int64_t n_tok) {
  const int64_t dim = config_.dim, k = config_.n_experts_active;
  const int n_ranks = remote_->n_ranks();
  rank_pairs_.resize(static_cast<size_t>(n_ranks));
  row_of_.resize(static_cast<size_t>(max_batch_));
  for (int r = 1; r < n_ranks; ++r) {
    RankPairs& rp = rank_pairs_[static_cast<size_t>(r)];
    rp.pairs.clear();
    rp.at.clear();
    rp.rows.clear();
    std::fill(row_of_.begin(), row_of_.begin() + n_tok, -1);
    int32_t n_rows = 0;
    for (int64_t t = 0; t < n_tok; ++t) {
      for (int64_t slot = 0; slot < k; ++slot) {
        const size_t at = static_cast<size_t>(t * k + slot);
        const int32_t e = sel_[at];
        if (remote_->owner(layer_idx, e) != r) continue;
        int32_t& row = row_of_[static_cast<size_t>(t)];
        if (row < 0) {
          row = n_rows++;
          rp.rows.insert(rp.rows.end(), h_ + t * dim, h_ + (t + 1) * dim);
        }
        rp.pairs.push_back({row, static_cast<int32_t>(slot), e, sel_w_[at]});
        rp.at.push_back(static_cast<int32_t>(at));
      }
    }
    if (rp.pairs.empty()) continue;
    SNIPER_TRY(remote_->post(r, layer_idx, rp.rows.data(), n_rows, dim, rp.pairs));
  }
  // This rank keeps its own experts.
  union_.erase(
      std::remove_if(union_.begin(), union_.end(), [&](int32_t e) { return remote_->owner(layer_idx, e) != 0; }),
      union_.end());
  return ok_status();
}

Status MoeFfn::collect_remote(int64_t n_tok) {
  (void)n_tok;
  const int64_t dim = config_.dim;
  Status first = ok_status();
  for (size_t r = 1; r < rank_pairs_.size(); ++r) {
    RankPairs& rp = rank_pairs_[r];
    if (rp.pairs.empty()) continue;
    const int64_t n = static_cast<int64_t>(rp.pairs.size());
    rp.out.resize(static_cast<size_t>(n * dim));
    Status st = remote_->collect(static_cast<int>(r), rp.out.data(), n, dim);
    if (!st.ok()) {
      if (first.ok()) first = st;
      continue;
    }
    for (int64_t p = 0; p < n; ++p) {
      std::memcpy(exp_out_.data() + static_cast<int64_t>(rp.at[static_cast<size_t>(p)]) * dim, rp.out.data() + p * dim,
                  sizeof(float) * static_cast<size_t>(dim));
    }
  }
  return first;
}

Status MoeFfn::serve_pairs(int64_t layer_idx, const LayerWeights& lw, const float* h, int64_t n_rows,
                           std::span<const ExpertPair> pairs, float* out, BlockBuffers& bufs, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const int64_t dim = c.dim, k = c.n_experts_active, n_exp = c.n_experts;
  if (layer_idx < 0 || layer_idx >= c.n_layers || c.layer(layer_idx).ffn != FfnKind::kMoe) {
    return make_error("expert request for layer %ld, which is not an MoE layer of this model (%ld layers)",
                      static_cast<long>(layer_idx), static_cast<long>(c.n_layers));
  }
  if (n_rows < 1 || n_rows > max_batch_) {
    return make_error("expert request has %ld rows but must have [1, %ld]", static_cast<long>(n_rows),
                      static_cast<long>(max_batch_));
  }
  if (pairs.empty() || static_cast<int64_t>(pairs.size()) > n_rows * k) {
    return make_error("expert request has %zu pairs but must have [1, %ld]", pairs.size(),
                      static_cast<long>(n_rows * k));
  }
  std::fill(used_.begin(), used_.end(), 0);
  std::fill(route_start_.begin(), route_start_.end(), 0);
  std::fill(sel_.begin(), sel_.begin() + n_rows * k, -1);
  for (size_t p = 0; p < pairs.size(); ++p) {
    const ExpertPair& q = pairs[p];
    if (q.row < 0 || q.row >= n_rows || q.slot < 0 || q.slot >= k || q.expert < 0 || q.expert >= n_exp) {
      return make_error(
          "expert request pair %zu (row %d, slot %d, expert %d) is outside rows [0, %ld), slots [0, %ld), "
          "experts [0, %ld)",
          p, q.row, q.slot, q.expert, static_cast<long>(n_rows), static_cast<long>(k), static_cast<long>(n_exp));
    }
    int32_t& s = sel_[static_cast<size_t>(q.row * k + q.slot)];
    if (s >= 0) return make_error("expert request pair %zu repeats row %d slot %d", p, q.row, q.slot);
    s = q.expert;
    sel_w_[static_cast<size_t>(q.row * k + q.slot)] = q.weight;
    used_[static_cast<size_t>(q.expert)] = 1;
    ++route_start_[static_cast<size_t>(q.expert) + 1];
  }
  for (int64_t e = 0; e < n_exp; ++e) route_start_[static_cast<size_t>(e) + 1] += route_start_[static_cast<size_t>(e)];
  std::copy(route_start_.begin(), route_start_.end() - 1, route_next_.begin());
  for (const ExpertPair& q : pairs) {
    const size_t at = static_cast<size_t>(route_next_[static_cast<size_t>(q.expert)]++);
    route_tok_[at] = q.row;
    route_slot_[at] = q.slot;
  }
  union_.clear();
  for (int64_t e = 0; e < n_exp; ++e) {
    if (used_[static_cast<size_t>(e)]) union_.push_back(static_cast<int32_t>(e));
  }
  lp_ = &c.layer(layer_idx);
  lw_ = &lw;
  bufs_ = &bufs;
  h_ = h;
  SNIPER_TRY(run_routed(layer_idx, n_rows, /*serving=*/true, pool));
  for (size_t p = 0; p < pairs.size(); ++p) {
    std::memcpy(out + static_cast<int64_t>(p) * dim,
                exp_out_.data() + (static_cast<int64_t>(pairs[p].row) * k + pairs[p].slot) * dim,
                sizeof(float) * static_cast<size_t>(dim));
  }
  return ok_status();
}

}  // namespace sniper
