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
  KvConfig kv_type = KvConfig();  // K and V cache types, flash attention (kv/kv_cache.h)
  int64_t depth = 0;              // tokens in the context when decoding starts
  double decode_tok_s = 0;        // over n_decode tokens at that depth
  double fill_s = 0;              // prompt evaluation time to reach the depth (incremental)
  double prefill_tok_s = 0;       // n_prefill tokens evaluated in one call at that depth (0: not measured)
  uint64_t rss_bytes = 0;         // the process's resident set when the point was measured (one session only)
  uint64_t cgroup_bytes = 0;      // memory charged to its cgroup then, page cache included (0: unknown)
};

// How the depths are reached.
enum class DepthFill {
  kEach,  // one session per (KV config, depth), each filled to its depth; decoded in turn
  kOnce,  // one session per KV config with n_ctx = max(base.n_ctx, deepest + margin), filled once
          // through the depths in ascending order and measured at each: what a long conversation
          // does, with memory read at each depth (it must stay flat: the KV cache is allocated up
          // front)
};

// Parses "128,4096" (ascending after sorting, each >= 1). Errors name the item.
Result<std::vector<int64_t>> parse_depths(const std::string& text);
// Parses "f16,q8_0,q8_0/f16": each item a type for K and V, or K/V; flash attention and
// rotation come from `base`. Errors name the item (and a quantized V with -fa off).
Result<std::vector<KvConfig>> parse_kv_configs(const std::string& text, const KvConfig& base);
// "q8_0 fa", "q8_0/f16": the KV types, and "fa" when flash attention is on.
std::string kv_label(const KvConfig& config);

// kEach: one session per (KV config, depth), each filled with pseudo-random prompt tokens to its
// depth; then n_decode rounds in which every session decodes one token, so that every point sees
// the same machine (the ratios are what matters). The sessions live at once: their KV caches add
// up (f16 and q8_0 at 4096 tokens of Qwen3-30B-A3B: 0.6 GB).
// kOnce: one session per KV config at a time, filled through the depths; at each, n_decode
// tokens are decoded and the session is cut back to the depth before it fills on.
// With n_prefill > 0, each point first evaluates n_prefill more tokens in one call at its depth
// (prefill speed at depth, llama-bench -d -p) and is cut back to the depth. Prints progress to
// stderr. Thread-compatible (uses the model exclusively while running).
Result<std::vector<DepthPoint>> measure_depths(Model& model, const SessionOptions& base,
                                               const std::vector<int64_t>& depths,
                                               const std::vector<KvConfig>& kv_types, int64_t n_decode,
                                               int64_t n_prefill = 0, DepthFill fill = DepthFill::kEach);

}  // namespace sniper::cli
