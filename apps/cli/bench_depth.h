// SPDX-License-Identifier: MIT
// Decode speed at several context depths and KV cache types, measured in one process so the
// ratios (decode at 4096 tokens vs 128; q8_0 KV vs f16) are not skewed by machine noise
// between runs. Used by `sniper bench --depths 128,4096 --depth-kv f16,q8_0`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "engine/model.h"
#include "engine/session.h"

namespace sniper::cli {

struct DepthPoint {
  KvType kv_type = KvType::kF16;
  int64_t depth = 0;        // tokens in the context when decoding starts
  double decode_tok_s = 0;  // over n_decode tokens at that depth
  double fill_s = 0;        // prompt evaluation time to reach the depth (incremental)
};

// Parses "128,4096" (ascending after sorting, each >= 1) or "f16,q8_0". Errors name the item.
Result<std::vector<int64_t>> parse_depths(const std::string& text);
Result<std::vector<KvType>> parse_kv_types(const std::string& text);

// One session per (KV type, depth), each filled with pseudo-random prompt tokens to its depth;
// then n_decode rounds in which every session decodes one token, so that every point sees the
// same machine (the ratios are what matters). The sessions live at once: their KV caches add up
// (f16 and q8_0 at 4096 tokens of Qwen3-30B-A3B: 0.6 GB). Prints progress to stderr.
// Thread-compatible (uses the model exclusively while running).
Result<std::vector<DepthPoint>> measure_depths(Model& model, const SessionOptions& base, const std::vector<int64_t>& depths,
                                               const std::vector<KvType>& kv_types, int64_t n_decode);

}  // namespace sniper::cli
