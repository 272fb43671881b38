// SPDX-License-Identifier: MIT
#include "bench_ranks.h"

#include <cstdio>

namespace sniper::cli {

Result<RankSnapshot> take_rank_snapshot(ClusterExperts& experts) {
  RankSnapshot s;
  s.front = experts.front_figures();
  SNIPER_ASSIGN_OR_RETURN(s.ranks, experts.rank_figures());
  return s;
}

void print_rank_figures(const Cluster& cluster, const Model& model, const RankSnapshot& before,
                        const RankSnapshot& after, int64_t n_tokens, double decode_s) {
  if (n_tokens < 1 || decode_s <= 0) return;
  const double tok = static_cast<double>(n_tokens);
  const ModelConfig& c = model.config();
  int64_t moe_layers = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) moe_layers += c.layer(l).ffn == FfnKind::kMoe ? 1 : 0;
  // Every decode token routes n_experts_active rows through each MoE layer.
  const double routed = tok * static_cast<double>(moe_layers * c.n_experts_active);
  const FrontFigures& f0 = before.front;
  const FrontFigures& f1 = after.front;
  const double comm_s = (f1.send_s - f0.send_s) + (f1.wait_s - f0.wait_s);
  double served = 0;
  for (size_t r = 1; r < after.ranks.size() && r < before.ranks.size(); ++r)
    served += static_cast<double>(after.ranks[r].rows - before.ranks[r].rows);
  std::printf(
      "rank 0 (%s)   front end: %.0f%% of the routed rows here; %.2f ms/token sending, %.2f ms/token waiting for "
      "answers (%.0f%% of decode); %.2f MB/token sent, %.2f MB/token received\n",
      cluster.host_of(0).c_str(), routed > 0 ? 100.0 * (routed - served) / routed : 0.0,
      1e3 * (f1.send_s - f0.send_s) / tok, 1e3 * (f1.wait_s - f0.wait_s) / tok, 100.0 * comm_s / decode_s,
      static_cast<double>(f1.bytes_sent - f0.bytes_sent) / tok / 1e6,
      static_cast<double>(f1.bytes_received - f0.bytes_received) / tok / 1e6);
  for (size_t r = 1; r < after.ranks.size() && r < before.ranks.size(); ++r) {
    const RankFigures& a = before.ranks[r];
    const RankFigures& b = after.ranks[r];
    const uint64_t lookups = b.cache_requests - a.cache_requests;
    char hit[48] = "experts resident";
    if (lookups > 0) {
      std::snprintf(hit, sizeof(hit), "cache hit rate %.1f%%",
                    100.0 * static_cast<double>(b.cache_hits - a.cache_hits) / static_cast<double>(lookups));
    }
    std::printf(
        "rank %zu (%s)   %.0f%% of the routed rows, %s, SSD %.2f GB/s (stalled %.0f%% of decode), compute %.2f "
        "ms/token, plan %.1f MiB\n",
        r, cluster.host_of(static_cast<int>(r)).c_str(),
        routed > 0 ? 100.0 * static_cast<double>(b.rows - a.rows) / routed : 0.0, hit,
        static_cast<double>(b.ssd_bytes - a.ssd_bytes) / decode_s / 1e9,
        100.0 * (b.ssd_stall_s - a.ssd_stall_s) / decode_s, 1e3 * (b.compute_s - a.compute_s) / tok,
        static_cast<double>(b.planned_bytes) / 1048576.0);
  }
}

}  // namespace sniper::cli
