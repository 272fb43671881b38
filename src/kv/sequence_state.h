// SPDX-License-Identifier: MIT
// SequenceState: everything a session carries from one token to the next, per layer, as the
// layer's mixer needs it (LayerStateSpec, one per layer, made by the model from its layer plan):
//   kKv        K/V rows in a KvCache: every position of the context, or, with a window, a
//              ring of `window` slots (position p lives in slot p % capacity);
//   kSharedKv  no storage: the layer reads the cache of layer `shared_with` (which must be an
//              earlier kKv layer of the same shape);
//   kRecurrent f32 conv state [conv_floats] and recurrent state [recurrent_floats] (gated
//              delta-net): the whole past folded into a fixed size, overwritten every token.
//   kNone      no state (a mixer that keeps nothing).
// kKv layers with the same (n_kv_heads, head_dim, capacity) share one KvCache allocation (a
// "group"); kv_slot(layer) gives the cache and the layer's index in it. All memory is allocated
// in create(); nothing allocates per token.
//
// Rewinding: KV rows are addressed by position, so forgetting positions >= n costs nothing. A
// recurrent state cannot be rewound: rewindable() is false when any layer is kRecurrent (and
// for a ring that has wrapped). For those, save_checkpoint() copies exactly the part that
// forgetting positions cannot cut back (every recurrent state, every ring's rows) after n tokens,
// and load_checkpoint() puts it back: with the full-context KV rows of positions < n, which stay
// valid, that is the state after those n tokens (kv/state_checkpoints.h keeps a few of them).
// Thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/result.h"
#include "kv/kv_cache.h"

namespace sniper {

enum class LayerStateKind : uint8_t { kNone = 0, kKv = 1, kSharedKv = 2, kRecurrent = 3 };

struct LayerStateSpec {
  LayerStateKind kind = LayerStateKind::kKv;
  int64_t n_kv_heads = 0;        // kKv
  int64_t head_dim = 0;          // kKv
  int64_t window = 0;            // kKv: 0 = every position; > 0 = a ring of min(window, n_ctx) slots
  int64_t shared_with = -1;      // kSharedKv: the kKv layer whose cache this layer reads
  int64_t conv_floats = 0;       // kRecurrent: f32 conv state
  int64_t recurrent_floats = 0;  // kRecurrent: f32 recurrent state
  bool operator==(const LayerStateSpec&) const = default;
};

// Where a layer's K/V rows live: the cache and the layer's index in it.
struct KvSlot {
  KvCache* cache = nullptr;
  int64_t index = 0;
};

class SequenceState {
 public:
  // Validates the specs (shapes > 0, shared_with an earlier kKv layer of the same shape, the
  // K / V types' block size divides every attention layer's head_dim, a quantized V only with
  // flash attention) and allocates. Errors name the layer and the field.
  [[nodiscard]] static Result<std::unique_ptr<SequenceState>> create(std::span<const LayerStateSpec> specs,
                                                                     int64_t n_ctx, const KvConfig& config);
  // create()'s checks without allocating (the memory plan runs them before bytes_for).
  [[nodiscard]] static Status validate(std::span<const LayerStateSpec> specs, int64_t n_ctx, const KvConfig& config);
  // Bytes create() allocates for this shape (the memory plan's "KV cache" line), without
  // allocating. Precondition: validate() passed.
  static size_t bytes_for(std::span<const LayerStateSpec> specs, int64_t n_ctx, const KvConfig& config);

  int64_t n_layers() const { return static_cast<int64_t>(specs_.size()); }
  int64_t n_ctx() const { return n_ctx_; }
  const KvConfig& kv_config() const { return config_; }
  const LayerStateSpec& spec(int64_t layer_idx) const { return specs_[static_cast<size_t>(layer_idx)]; }
  std::span<const LayerStateSpec> specs() const { return specs_; }
  size_t bytes() const;

  // The K/V rows a kKv or kSharedKv layer attends over (CHECKed: other kinds have none).
  KvSlot kv_slot(int64_t layer_idx) const;
  // A kRecurrent layer's state (CHECKed), f32, zero after create() and reset_recurrent().
  float* conv_state(int64_t layer_idx);
  float* recurrent_state(int64_t layer_idx);
  // Zeroes every recurrent state (the start of a sequence).
  void reset_recurrent();
  // True when the state after n_past tokens can be cut back to any shorter prefix by forgetting
  // positions: no recurrent layer, and no ring that has wrapped (n_past > its capacity).
  bool rewindable(int64_t n_past) const;
  bool has_recurrent() const { return recurrent_floats_total_ > 0; }

  // True when some layer's state cannot be cut back by forgetting positions (a recurrent layer
  // or a ring), so prefix reuse needs checkpoints.
  bool needs_checkpoints() const;
  // Bytes of a checkpoint after n tokens: the recurrent states, then each ring layer's
  // min(n, capacity) rows in the saved-context order (save_layer), in layer order. At most
  // checkpoint_bytes(n_ctx()).
  size_t checkpoint_bytes(int64_t n) const;
  // An upper bound of checkpoint_bytes() for this shape, without allocating (the memory plan).
  static size_t checkpoint_bytes_for(std::span<const LayerStateSpec> specs, int64_t n_ctx, const KvConfig& config);
  // Copies the non-rewindable part of the state after n tokens into out[checkpoint_bytes(n)];
  // load_checkpoint is the inverse (precondition: the KV rows of positions < n still hold the
  // same tokens' rows). Thread-compatible.
  void save_checkpoint(int64_t n, uint8_t* out) const;
  void load_checkpoint(int64_t n, const uint8_t* in);

  // The bytes that hold layer_idx's state after n tokens in the saved-context order: kKv
  // KvCache::saved_bytes(min(n, capacity)) (KvCache::save_layer's order, ring slots in slot
  // order), kRecurrent (conv_floats + recurrent_floats) * 4, others 0.
  size_t saved_layer_bytes(int64_t layer_idx, int64_t n) const;
  void save_layer(int64_t layer_idx, int64_t n, uint8_t* out) const;
  void load_layer(int64_t layer_idx, int64_t n, const uint8_t* in);

 private:
  SequenceState() = default;
  struct Layer {
    int64_t group = -1;           // kKv / kSharedKv: index into groups_
    int64_t index = 0;            // the layer's index in that group's cache
    size_t recurrent_offset = 0;  // kRecurrent: floats into recurrent_
  };
  std::vector<LayerStateSpec> specs_;
  std::vector<Layer> layers_;
  std::vector<std::unique_ptr<KvCache>> groups_;
  std::vector<float> recurrent_;  // every kRecurrent layer's conv then recurrent state
  size_t recurrent_floats_total_ = 0;
  // A kKv layer whose cache is a ring (a window shorter than the context).
  bool is_ring_layer(int64_t layer_idx) const;
  int64_t n_ctx_ = 0;
  KvConfig config_;
};

}  // namespace sniper
