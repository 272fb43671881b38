// SPDX-License-Identifier: MIT
// MemoryPlan: what stays in RAM and what streams from the SSD, decided once from the file's
// tensor table and a memory budget (DESIGN.md "The Plan").
//
//   fixed      = KV cache + state checkpoints + activation scratch + runtime overhead (always in RAM)
//   resident   = attention, norms, routers, output head, shared experts (always in RAM)
//   embeddings = token_embd: resident if it fits, else read one row per token
//   experts    = routed experts: an expert cache of whole-expert slots gets what remains
//   dense FFN  = resident if the whole model fits, else streamed layer by layer through a
//                double buffer (and attention weights too when even that does not fit)
// If the model fits entirely, everything is resident and nothing streams; then the room left
// holds the larger lookup-free layouts of the i-quant weights (repacked_tensors), those read
// every token first, as many as fit.
// An expert-parallel serving rank (PlanRequest::serve_experts_per_layer) plans only its routed
// experts, through a cache of at most the experts it owns, and the small per-layer tensors.
// Invariant: planned_bytes() <= budget_bytes for every plan make_plan() returns.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/result.h"
#include "gguf/reader.h"
#include "kv/kv_cache.h"
#include "model/config.h"

namespace sniper {

inline constexpr int64_t kAutoCheckpoints = -1;
inline constexpr int64_t kMaxAutoCheckpoints = 8;

// The checkpoint count kAutoCheckpoints resolves to: kMaxAutoCheckpoints, or fewer when the
// sessions' checkpoints of checkpoint_bytes each would take more than an eighth of the budget
// (a Gemma 4 26B checkpoint holds 400 MiB of window rings); 0 when the model needs none.
int64_t auto_checkpoint_count(uint64_t budget_bytes, int64_t n_sessions, uint64_t checkpoint_bytes);

struct PlanRequest {
  uint64_t budget_bytes = 0;  // what the process may use, page cache of our reads included
  int64_t n_ctx = 4096;
  KvConfig kv_type = KvConfig();  // K and V cache types, flash attention (kv/kv_cache.h)
  int64_t batch = 64;
  int64_t n_sessions = 1;  // sessions (server slots) that each hold a KV cache and scratch
  // > 0: the sessions also run in batched passes of up to this many rows (the server's scheduler:
  // --batch + one decode row per slot, or its verification rows; engine/batch_eval.h pass_rows),
  // whose scratch and logits (a row per session, or n_logit_rows - 1 with speculative decoding)
  // come on top of the sessions' own.
  int64_t batch_pass_rows = 0;
  // State checkpoints per session (SessionOptions::n_checkpoints); kAutoCheckpoints: up to
  // kMaxAutoCheckpoints, as many as fit an eighth of the budget (MemoryPlan::n_checkpoints).
  int64_t n_checkpoints = 0;
  // Rows of logits a session and its caller hold at once: 1 (the last token's), or with
  // speculative decoding 1 + draft_max + 1 (the verification pass returns every row).
  int64_t n_logit_rows = 1;
  bool force_stream = false;  // stream experts / FFN even when everything would fit (tests, benchmarks)
  // Load the first multi-token-prediction block (blk.<n_layers>.*, model/mtp_head.h) and count
  // its KV and scratch per session (a model without one plans as usual); else no MTP tensor is
  // loaded. Its routed experts stream through the expert cache when the model's do; the rest of
  // the block is resident.
  bool load_mtp = false;
  // Repack i-quant weights at load time into their lookup-free layouts (quant/iq_repack.h) when
  // every weight is resident and the budget has room for the larger layouts; false: --no-repack.
  bool repack = true;
  // Expert parallel (src/dist): a serving rank computes only the routed experts it owns, for rank
  // 0's rows. > 0: plan for that: only the routed experts (streamed through a cache of at most
  // this many experts per layer, all of them when the budget allows) and the small per-layer
  // tensors stay; no attention, embeddings, dense FFN, output head or KV cache are loaded.
  int64_t serve_experts_per_layer = 0;
};

// Whole-expert slot layout in the cache: gate, up and down slices back to back, each region
// sized for the largest slice of that kind in any layer plus alignment slack.
struct ExpertSlotLayout {
  uint64_t gate_bytes = 0;  // region sizes inside a slot
  uint64_t up_bytes = 0;
  uint64_t down_bytes = 0;
  uint64_t slot_bytes = 0;  // total, a multiple of 4096
};

struct MemoryPlan {
  uint64_t budget_bytes = 0;
  uint64_t kv_bytes = 0;             // all sessions' sequence states (KV rows, recurrent states)
  int64_t n_checkpoints = 0;         // state checkpoints per session (the request's, auto resolved)
  uint64_t checkpoint_bytes = 0;     // all sessions' state checkpoints at most (hybrid models; else 0)
  KvConfig kv_config = KvConfig();   // the cache types kv_bytes was counted for
  uint64_t scratch_bytes = 0;        // all sessions' activation scratch
  uint64_t batch_scratch_bytes = 0;  // the batched pass's scratch (PlanRequest::batch_pass_rows)
  int64_t n_sessions = 1;
  uint64_t overhead_bytes = 0;  // runtime, tokenizer, metadata, I/O bookkeeping
  uint64_t resident_weight_bytes = 0;
  bool all_resident = false;                 // nothing streams
  bool stream_embeddings = false;            // token_embd read one row per token
  bool stream_per_layer_embeddings = false;  // gemma4's per_layer_token_embd read one row per token
  bool stream_experts = false;
  ExpertSlotLayout slot;
  int64_t n_expert_slots = 0;
  // Layers whose experts the cache serves, blk.0 .. blk.<n_expert_layers - 1>: the main stack,
  // and the MTP block after it when it is loaded with streamed experts.
  int64_t n_expert_layers = 0;
  uint64_t total_expert_bytes = 0;  // all routed experts in the file (of the layers loaded)
  bool stream_dense_ffn = false;
  bool stream_attention = false;                     // dense models under very small budgets
  uint64_t layer_buffer_bytes = 0;                   // one of the two dense stream buffers
  std::vector<int64_t> resident_ffn_layers;          // dense layers whose FFN (and, with stream_attention, mixer
                                                     // weights) stay in RAM (budget room)
  uint64_t resident_ffn_bytes = 0;                   // their bytes (part of resident_weight_bytes)
  uint64_t min_budget_bytes = 0;                     // the smallest budget any plan works with
  uint64_t all_resident_bytes = 0;                   // the smallest budget that keeps every weight in RAM
  std::unordered_set<std::string> streamed_tensors;  // names of tensors not loaded into RAM
  // MTP blocks: the resident weights of the one loaded (part of resident_weight_bytes), its
  // routed experts when they stream (part of total_expert_bytes), and its per-session KV and
  // scratch (part of kv_bytes, scratch_bytes); the tensors nothing reads (MTP blocks not asked
  // for), which are not loaded either.
  uint64_t mtp_weight_bytes = 0;
  uint64_t mtp_streamed_expert_bytes = 0;
  std::unordered_set<std::string> unloaded_tensors;
  // The i-quant tensors loaded in their lookup-free layouts (only when all_resident: never when
  // weights stream), and the bytes that adds (part of resident_weight_bytes); what repacking
  // every candidate would add, whether or not it fit.
  std::unordered_set<std::string> repacked_tensors;
  uint64_t repack_extra_bytes = 0;
  uint64_t repack_all_extra_bytes = 0;

  uint64_t expert_cache_bytes() const { return slot.slot_bytes * static_cast<uint64_t>(n_expert_slots); }
  uint64_t planned_bytes() const {
    return kv_bytes + checkpoint_bytes + scratch_bytes + batch_scratch_bytes + overhead_bytes + resident_weight_bytes +
           expert_cache_bytes() + 2 * layer_buffer_bytes;
  }
  // A multi-line table of the plan with byte counts (for `sniper inspect --plan`).
  std::string describe() const;
};

// Computes the plan. An Error when even the always-needed part does not fit, naming the
// minimum budget.
Result<MemoryPlan> make_plan(const GgufFile& file, const ModelConfig& config, const PlanRequest& request);

// Resolves a --mem value: "auto" = the cgroup limit or MemAvailable minus headroom; otherwise a
// size such as 4G, 512M, 1.5GiB. Errors name the value.
Result<uint64_t> resolve_memory_budget(const std::string& text);

}  // namespace sniper
