// SPDX-License-Identifier: MIT
// The automatic prefill chunk (`--batch auto`): how many prompt tokens one forward pass takes.
//
// Every chunk of a streamed model reads each streamed weight it touches once: a chunk of a MoE
// model routes to nearly every expert of every layer once it has a few dozen tokens, so a
// prompt of n tokens in chunks of c reads the streamed experts about n / c times (a 1,000-token
// prompt in chunks of 64: the whole 30B model 16 times). Longer chunks read less, but their
// activation scratch takes budget from the expert cache. The rule:
//   - everything resident: the longest of 512, 256, 128, 64 whose plan keeps every weight in RAM
//     (each expert then gets enough tokens to fill its GEMM tiles);
//   - streaming: the longest chunk in min(n_ctx, 4096), 2048, 1024, ..., 128 whose plan
//       (a) holds, (b) spends at most an eighth of the budget on activation scratch, and
//       (c) for MoE, keeps an expert cache of at least two layers' experts (min(all, 2 * n_experts)
//           slots), so one layer's union is held while the next layer's predicted experts are
//           read into the other half, overlapping reads with compute;
//     else kShortPromptChunk (64), today's chunk.
// Pure planning: reads nothing but the file's tensor table. Thread-safe.
#pragma once

#include <cstdint>

#include "base/result.h"
#include "engine/plan.h"

namespace sniper {

inline constexpr int64_t kShortPromptChunk = 64;   // the smallest automatic chunk
inline constexpr int64_t kResidentChunk = 512;     // the longest one when nothing streams
inline constexpr int64_t kMaxPrefillChunk = 4096;  // SessionOptions::batch's limit
inline constexpr uint64_t kChunkScratchShare = 8;  // a chunk's scratch: at most budget / 8

// True if a streaming `plan` made for a chunk of `batch` tokens satisfies (b) and (c) above.
bool stream_chunk_fits(const MemoryPlan& plan, const ModelConfig& config);

struct ChunkChoice {
  int64_t batch = kShortPromptChunk;
  MemoryPlan plan;  // made for `batch`
};

// Chooses the chunk per the rule above for `request` (its batch is ignored) and returns it with
// its plan. An Error when not even the 64-token chunk's plan holds (the error names the minimum).
Result<ChunkChoice> choose_prefill_chunk(const GgufFile& file, const ModelConfig& config, const PlanRequest& request);

}  // namespace sniper
