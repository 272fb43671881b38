// SPDX-License-Identifier: MIT
// KvCache: per-layer K and V rows for positions [0, n_ctx), stored as f16 (default, what the
// reference engine uses) or q8_0 (half the bytes; head_dim must be a multiple of 32).
// Layout per layer: K is [n_kv_heads][n_ctx][head_dim] (each kv head's keys contiguous, so
// attention streams them sequentially; see AttentionLayout); V is the same for q8_0 and
// transposed, [n_kv_heads][head_dim][n_ctx], for f16 (llama.cpp's non-flash-attention layout,
// which kernels/attention.h reads; see AttentionLayout::v_transposed), each V^T row padded to a
// whole number of cache lines (kVtRowAlign positions; the padding is never read as a position).
// A ring cache (create(..., ring = true)) keeps the last n_ctx positions of a longer sequence:
// position p lives in row p % n_ctx (a sliding-window layer's state, see kv/sequence_state.h).
// Saved contexts use a layout-independent order (save_layer / load_layer). All memory is
// allocated in the constructor; nothing allocates per token. Thread-compatible; distinct
// positions may be written concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "base/result.h"
#include "kernels/attention.h"

namespace sniper {

enum class KvType { kF16, kQ8_0 };

Result<KvType> parse_kv_type(std::string_view text);
const char* kv_type_name(KvType type);

class KvCache {
 public:
  // Validates the shape (q8_0 needs head_dim % 32 == 0) and allocates. ring: positions wrap
  // around the n_ctx rows (row = pos % n_ctx) instead of ending there.
  static Result<std::unique_ptr<KvCache>> create(int64_t n_layers, int64_t n_ctx, int64_t n_kv_heads,
                                                 int64_t head_dim, KvType type, bool ring = false);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // Bytes the cache needs for this shape, without allocating.
  static size_t bytes_for(int64_t n_layers, int64_t n_ctx, int64_t n_kv_heads, int64_t head_dim, KvType type);

  // Converts and stores k, v ([n_kv_heads * head_dim] f32) at (layer_idx, pos) (row pos % n_ctx
  // of a ring).
  void store(int64_t layer_idx, int64_t pos, const float* k, const float* v);

  // One layer's K and V in the layout() form (what attend_group reads).
  const uint8_t* k_rows(int64_t layer_idx) const { return k_ + layer_bytes_ * static_cast<size_t>(layer_idx); }
  const uint8_t* v_rows(int64_t layer_idx) const { return v_ + v_layer_bytes_ * static_cast<size_t>(layer_idx); }
  const AttentionLayout& layout() const { return layout_; }

  // K bytes of one position across all kv heads (also V's, either type).
  size_t position_bytes() const { return layout_.head_bytes * static_cast<size_t>(n_kv_heads_); }
  // Positions [0, n) of one layer in the order saved contexts use, whatever the in-memory
  // layout: K as [n][n_kv_heads][head], then V the same (q8_0) or [n_kv_heads * head_dim][n]
  // (f16, transposed); 2 * n * position_bytes() bytes. load_layer is the inverse.
  void save_layer(int64_t layer_idx, int64_t n, uint8_t* out) const;
  void load_layer(int64_t layer_idx, int64_t n, const uint8_t* in);
  int64_t n_ctx() const { return n_ctx_; }
  int64_t n_layers() const { return n_layers_; }
  KvType type() const { return type_; }
  bool ring() const { return ring_; }
  int64_t n_kv_heads() const { return n_kv_heads_; }
  int64_t head_dim() const { return layout_.head_dim; }
  size_t bytes() const { return (layer_bytes_ + v_layer_bytes_) * static_cast<size_t>(n_layers_); }
  // Positions per V^T row of an f16 cache: n_ctx rounded up to whole 64-byte lines.
  static constexpr int64_t kVtRowAlign = 32;

 private:
  KvCache() = default;
  // Calls piece(cache bytes, offset in the saved order, length) for every contiguous piece of
  // layer_idx's positions [0, n) (save_layer and load_layer are this walk in two directions).
  template <class F>
  void for_each_state_piece(int64_t layer_idx, int64_t n, F&& piece) const;
  int64_t n_layers_ = 0;
  int64_t n_ctx_ = 0;
  int64_t n_kv_heads_ = 0;
  KvType type_ = KvType::kF16;
  bool ring_ = false;
  AttentionLayout layout_;
  size_t layer_bytes_ = 0;    // one layer's K (and q8_0 V)
  size_t v_layer_bytes_ = 0;  // one layer's V
  uint8_t* k_ = nullptr;
  uint8_t* v_ = nullptr;
};

}  // namespace sniper
