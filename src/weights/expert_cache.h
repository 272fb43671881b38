// SPDX-License-Identifier: MIT
// ExpertCache: the streaming ExpertSource. Routed experts live on the SSD in the original GGUF
// (three slices per expert: gate, up, down); the cache keeps whole experts in fixed-size slots
// of one aligned arena sized by the memory plan, reads misses with O_DIRECT through the
// IoEngine (every miss of a layer submitted at once, deep queue), and hands out experts that
// are already in memory first while the misses land. Eviction is LRU or LFRU (decayed
// frequency, then recency). Prefetch hints read a future layer's predicted experts early into
// unpinned slots; they never change what is computed.
//
// Invariants: a slot being read or handed out is never evicted; a slot holds bytes only after
// its read completed successfully; every byte read is counted in stats.
// Thread-compatible: the forward thread calls everything.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "base/result.h"
#include "gguf/reader.h"
#include "io/io_engine.h"
#include "weights/expert_source.h"

namespace sniper {

enum class CachePolicy { kLru, kLfru };
Result<CachePolicy> parse_cache_policy(std::string_view text);
const char* cache_policy_name(CachePolicy policy);

// Where one matrix of one expert is in the file.
struct ExpertSlice {
  uint64_t file_offset = 0;
  uint64_t nbytes = 0;
  GgmlType type = GgmlType::kF32;
  int64_t ne0 = 0;  // row length
  int64_t ne1 = 0;  // rows
};

// One expert: gate, up, down. When the three slices follow each other with less than a page
// between them (a `sniper pack`ed file), the cache fetches them with a single read.
struct ExpertLocation {
  ExpertSlice part[3];
  bool contiguous() const;
  // Gate and up are the two halves of one fused matrix (gemma4's ffn_gate_up_exps): the cache
  // reads them with one request into the slot's gate region and onwards.
  bool gate_up_adjacent() const { return part[1].file_offset == part[0].file_offset + part[0].nbytes; }
  uint64_t bytes() const { return part[0].nbytes + part[1].nbytes + part[2].nbytes; }
};

// Locates every expert of every layer: slices of the 3-D ffn_{gate,up,down}_exps tensors (gate and
// up may be the halves of a fused ffn_gate_up_exps), or the
// per-expert tensors blk.L.ffn_{gate,up,down}.E.weight that `sniper pack` writes. Errors name a
// missing tensor. sources, when non-null, receives the names of the tensors the experts are in.
Result<std::vector<std::vector<ExpertLocation>>> locate_experts(const GgufFile& file, int64_t n_layers,
                                                                int64_t n_experts,
                                                                std::unordered_set<std::string>* sources = nullptr);

struct ExpertCacheOptions {
  int64_t n_slots = 0;
  uint64_t gate_region_bytes = 0;  // per-slot regions (ExpertSlotLayout)
  uint64_t up_region_bytes = 0;
  uint64_t down_region_bytes = 0;
  CachePolicy policy = CachePolicy::kLfru;
  bool prefetch = true;
  int prefetch_depth = 1;  // layers ahead
};

struct LayerCacheStats {
  uint64_t requests = 0;                   // experts asked for (begin_layer)
  uint64_t opened = 0;                     // begin_layer calls
  uint64_t opened_deferred = 0;            // of those, layers that found no slot for some expert at once
                                           // (their views are not stable: experts then run one by one)
  uint64_t hits = 0;                       // already in memory or already being read
  uint64_t bytes_read = 0;                 // bytes read from the device for this layer (aligned spans)
  double stall_seconds = 0;                // time next_ready() waited for I/O
  double demand_stall_seconds = 0;         // of that, waits for reads the layer itself started (misses
                                           // no hint covered), the rest waited for prefetches in flight
  uint64_t prefetch_issued = 0;            // experts read because of a prefetch hint
  uint64_t prefetch_useful = 0;            // of those, requested by the layer afterwards
  uint64_t predicted = 0;                  // experts predicted for this layer (hints received)
  uint64_t predicted_correct = 0;          // predicted experts the layer then requested
  uint64_t actual_in_prediction_base = 0;  // requests of layers that had a prediction
};

struct ExpertCacheStats {
  std::vector<LayerCacheStats> layers;
  LayerCacheStats total() const;
  uint64_t evictions = 0;
  uint64_t distinct_experts_touched = 0;  // (layer, expert) pairs ever requested
};

class ExpertCache final : public ExpertSource {
 public:
  // `experts[l][e]` locates expert e of layer l; `io` reads the model file (and outlives the
  // cache). Allocates the slot arena and registers it with the IoEngine.
  static Result<std::unique_ptr<ExpertCache>> create(std::vector<std::vector<ExpertLocation>> experts, IoEngine* io,
                                                     const ExpertCacheOptions& options);
  ~ExpertCache() override;

  Status begin_layer(int64_t layer_idx, std::span<const int32_t> experts) override;
  Result<ReadyExpert> next_ready() override;
  void end_layer() override;
  void prefetch(int64_t layer_idx, std::span<const int32_t> experts) override;
  bool wants_prefetch() const override { return options_.prefetch; }
  int prefetch_depth() const override { return options_.prefetch_depth; }
  // Stable when the open layer found a slot for each of its experts at begin_layer(): nothing
  // of that layer then needs a computed expert's slot, so each stays pinned until end_layer().
  bool views_stable() const override { return layer_stable_; }
  bool next_is_ready() override;
  bool is_cached(int64_t layer_idx, int32_t expert) const override {
    const int32_t s = slot_index_[static_cast<size_t>(layer_idx * n_experts_ + expert)];
    return s >= 0 && slots_[static_cast<size_t>(s)].state == SlotState::kReady;
  }

  // Marks the end of a token (ages LFRU frequencies).
  void end_token();
  // Zeroes the statistics and request counts (e.g. between prefill and decode).
  void reset_stats();
  // Requests per (layer * n_experts + expert) since the last reset_stats().
  const std::vector<uint32_t>& request_counts() const { return request_counts_; }
  // Bytes of one expert (gate + up + down slices) of a layer, as stored in the file.
  uint64_t expert_bytes(int64_t layer_idx) const;
  const ExpertCacheStats& stats() const { return stats_; }
  // Distinct experts requested per layer since creation.
  std::vector<int64_t> distinct_per_layer() const;
  int64_t n_slots() const { return options_.n_slots; }
  uint64_t arena_bytes() const { return arena_bytes_; }

 private:
  enum class SlotState : uint8_t { kEmpty, kLoading, kReady };
  struct Slot {
    int32_t layer = -1;
    int32_t expert = -1;
    SlotState state = SlotState::kEmpty;
    bool pinned = false;         // announced to or handed out in the current layer
    bool from_prefetch = false;  // loaded on a hint and not requested yet
    bool on_demand = false;      // read started by the layer that needs it (no hint covered it)
    ReadTicket tickets[3] = {0, 0, 0};
    uint64_t last_use = 0;
  };

  ExpertCache() = default;
  int32_t& slot_of(int64_t layer, int64_t expert) {
    return slot_index_[static_cast<size_t>(layer * n_experts_ + expert)];
  }
  // Picks a slot to (re)use, evicting per policy; -1 if every slot is pinned or loading.
  int32_t find_victim();
  // Reads expert `expert` of `layer` into `slot`. `on_demand`: the open layer needs it now (no
  // hint covered it); its wait counts as demand_stall_seconds.
  Status start_read(int32_t slot, int64_t layer, int64_t expert, bool on_demand);
  Status finish_read(int32_t slot);
  // finish_read() for the open layer, its time counted as stall (and as demand stall for an
  // on-demand read).
  Status wait_for_read(int32_t slot);
  // True once every read of a loading slot has landed (polls the IoEngine).
  bool read_landed(int32_t slot);
  ExpertView view_of(int32_t slot) const;
  float score(const Slot& s) const;

  std::vector<std::vector<ExpertLocation>> experts_;
  int64_t n_experts_ = 0;
  IoEngine* io_ = nullptr;
  ExpertCacheOptions options_;
  uint8_t* arena_ = nullptr;
  uint64_t arena_bytes_ = 0;
  uint64_t slot_bytes_ = 0;
  std::vector<Slot> slots_;
  std::vector<int32_t> slot_index_;       // [layer * n_experts + expert] -> slot or -1
  std::vector<float> freq_;               // [layer * n_experts + expert] decayed request counts
  std::vector<uint8_t> touched_;          // [layer * n_experts + expert] ever requested
  std::vector<uint32_t> request_counts_;  // [layer * n_experts + expert] since reset_stats()
  std::vector<uint8_t> predicted_;        // [layer * n_experts + expert] in the latest hint
  std::vector<uint8_t> has_prediction_;   // [layer]
  uint64_t clock_ = 0;

  // Current layer.
  int64_t layer_ = -1;
  std::vector<int32_t> ready_;        // slots in memory, not yet handed out
  std::vector<int32_t> loading_;      // slots being read
  std::vector<int32_t> deferred_;     // experts with no free slot yet
  int32_t handed_out_ = -1;           // slot handed out by the last next_ready()
  bool layer_stable_ = false;         // the open layer deferred no expert (views_stable())
  std::vector<int32_t> pinned_;       // slots pinned for this layer
  std::vector<int32_t> hint_pinned_;  // slots pinned while one prefetch() runs
  ExpertCacheStats stats_;
};

}  // namespace sniper
