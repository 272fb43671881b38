// SPDX-License-Identifier: MIT
#include "engine/prefill_chunk.h"

#include <algorithm>
#include <bit>
#include <vector>

namespace sniper {

bool stream_chunk_fits(const MemoryPlan& plan, const ModelConfig& config) {
  if (plan.scratch_bytes > plan.budget_bytes / kChunkScratchShare) return false;
  if (plan.stream_experts) {
    const int64_t all_slots = config.n_layers * config.n_experts;
    if (plan.n_expert_slots < std::min<int64_t>(all_slots, 2 * config.n_experts)) return false;
  }
  return true;
}

Result<ChunkChoice> choose_prefill_chunk(const GgufFile& file, const ModelConfig& config, const PlanRequest& request) {
  PlanRequest req = request;
  const int64_t longest = std::max<int64_t>(kShortPromptChunk, std::min(request.n_ctx, kMaxPrefillChunk));
  if (!request.force_stream) {
    for (int64_t batch = kResidentChunk; batch >= kShortPromptChunk; batch /= 2) {
      req.batch = batch;
      auto plan = make_plan(file, config, req);
      if (plan.ok() && plan->all_resident) return ChunkChoice{batch, std::move(plan).value()};
    }
  }
  // Streaming: the longest chunk that fits the rule, from n_ctx (at most 4096) down by halves.
  std::vector<int64_t> candidates = {longest};
  for (int64_t b = static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(longest))); b > kShortPromptChunk;
       b /= 2) {
    if (b != longest) candidates.push_back(b);
  }
  for (int64_t batch : candidates) {
    if (batch <= kShortPromptChunk) break;
    req.batch = batch;
    auto plan = make_plan(file, config, req);
    if (plan.ok() && !plan->all_resident && stream_chunk_fits(*plan, config)) {
      return ChunkChoice{batch, std::move(plan).value()};
    }
  }
  req.batch = kShortPromptChunk;
  auto plan = make_plan(file, config, req);
  if (!plan.ok()) return plan.error();
  return ChunkChoice{kShortPromptChunk, std::move(plan).value()};
}

}  // namespace sniper
