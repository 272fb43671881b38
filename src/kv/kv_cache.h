// SPDX-License-Identifier: MIT
// KvCache: per-layer K and V rows for positions [0, n_ctx). K and V each have their own type
// (KvConfig: f16 by default, what the reference engine uses; bf16; or a 32-element block type
// q8_0 / q4_0 / q4_1 / iq4_nl / q5_0 / q5_1, whose block size must divide head_dim), stored
// with the CPU type traits' from_float, as llama.cpp stores them.
// Layout per layer: K is [n_kv_heads][n_ctx][head] (each kv head's keys contiguous, so
// attention streams them sequentially; see AttentionLayout). V is the same (rows, V's type)
// with flash attention, and transposed, [n_kv_heads][head_dim][n_ctx], without it (llama.cpp's
// non-flash-attention layout, f16 or bf16 only; see AttentionLayout::v_transposed), each V^T
// row padded to a whole number of cache lines (kVtRowAlign positions; the padding is never read
// as a position).
// Hadamard rotation (llama.cpp's attn_rot_k / attn_rot_v): a quantized K is stored rotated
// (AttentionLayout::k_rot: the largest power of two >= 64 dividing head_dim, when head_dim % 64
// == 0) and a quantized V likewise in chunks of 64 (v_rot); attend_group rotates the query and
// un-rotates its output to match. KvConfig::rotate = false turns it off (LLAMA_ATTN_ROT_DISABLE).
// A ring cache (create(..., ring = true)) keeps the last n_ctx positions of a longer sequence:
// position p lives in row p % n_ctx (a sliding-window layer's state, see kv/sequence_state.h).
// Context shift (shift_head): positions [n_keep + n_discard, n_past) move down to [n_keep, ..),
// V as bytes, K re-rotated by the rope of -n_discard as llama.cpp's K-shift does it
// (llama-kv-cache.cpp build_rope_shift): f16 / bf16 K is converted to f32, roped and converted
// back; a quantized K is dequantized, un-rotated (Hadamard), roped, rotated and quantized again,
// and that round trip also runs on the kept rows [0, n_keep) with a rope of 0 (llama.cpp ropes
// the whole cache, every kept cell by its shift of 0). Unlike llama.cpp's cells, which stay
// where they are with new positions, the rows are compacted so that row = position still holds.
// Saved contexts use a layout-independent order (save_layer / load_layer). All memory is
// allocated in the constructor; nothing allocates per token. Thread-compatible; distinct
// positions may be written concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "kernels/attention.h"
#include "kernels/ops.h"

namespace sniper {

// The cache types llama.cpp offers for K and V (--cache-type-k / --cache-type-v). The numeric
// values are the codes saved contexts store (engine/session_state.h): never renumber.
enum class KvType : uint8_t { kF16 = 0, kQ8_0 = 1, kBF16 = 2, kQ4_0 = 3, kQ4_1 = 4, kIQ4_NL = 5, kQ5_0 = 6, kQ5_1 = 7 };
inline constexpr int kKvTypeCount = 8;

// -fa on|off|auto. auto: flash attention when the V cache is quantized (llama.cpp requires it
// there), the reference's non-flash path otherwise (bit-identical to f16 without -fa).
enum class FlashAttn : uint8_t { kAuto = 0, kOff = 1, kOn = 2 };

// Everything that decides what the cache holds and how attention reads it.
struct KvConfig {
  KvType k = KvType::kF16;
  KvType v = KvType::kF16;
  FlashAttn flash_attn = FlashAttn::kAuto;
  bool rotate = true;  // Hadamard rotation of quantized K / V (false = LLAMA_ATTN_ROT_DISABLE=1)
  KvConfig() = default;
  KvConfig(KvType both) : k(both), v(both) {}  // NOLINT(google-explicit-constructor): --kv-type T
  KvConfig(KvType k_type, KvType v_type, FlashAttn fa) : k(k_type), v(v_type), flash_attn(fa) {}
  bool operator==(const KvConfig&) const = default;
  // flash_attn resolved: on, or auto with a quantized V.
  bool flash() const;
};

Result<KvType> parse_kv_type(std::string_view text);
const char* kv_type_name(KvType type);
Result<FlashAttn> parse_flash_attn(std::string_view text);
const char* flash_attn_name(FlashAttn fa);
GgmlType kv_ggml_type(KvType type);
// True for the block types (llama.cpp's ggml_is_quantized): f16 and bf16 are not.
bool kv_type_quantized(KvType type);
// "K q8_0, V q8_0, flash attention" (errors and logs).
std::string kv_config_name(const KvConfig& config);
// llama.cpp's checks: a quantized V needs flash attention (-fa off with one is refused); the
// type's block size must divide head_dim. Errors name the flag and the values.
[[nodiscard]] Status validate_kv_config(const KvConfig& config);
[[nodiscard]] Status validate_kv_head_dim(const KvConfig& config, int64_t head_dim);

// One context shift (KvCache::shift_head): the positions and the rope of -n_discard.
struct KvShift {
  int64_t n_keep = 0;     // positions [0, n_keep) stay
  int64_t n_discard = 0;  // positions [n_keep, n_keep + n_discard) are forgotten
  int64_t n_past = 0;     // positions [n_keep + n_discard, n_past) move down by n_discard
  int64_t n_rot = 0;      // rotated dims of each head (<= head_dim, even)
  RopeStyle style = RopeStyle::kNorm;
  const float* cos = nullptr;  // [n_rot / 2] rope_angles(-n_discard, ...)
  const float* sin = nullptr;  // [n_rot / 2]
};

class KvCache {
 public:
  // Validates the config and shape (validate_kv_config, validate_kv_head_dim) and allocates.
  // ring: positions wrap around the n_ctx rows (row = pos % n_ctx) instead of ending there.
  static Result<std::unique_ptr<KvCache>> create(int64_t n_layers, int64_t n_ctx, int64_t n_kv_heads, int64_t head_dim,
                                                 const KvConfig& config, bool ring = false);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // Bytes the cache needs for this shape, without allocating.
  static size_t bytes_for(int64_t n_layers, int64_t n_ctx, int64_t n_kv_heads, int64_t head_dim,
                          const KvConfig& config);

  // Converts and stores k, v ([n_kv_heads * head_dim] f32) at (layer_idx, pos) (row pos % n_ctx
  // of a ring), rotated first where the layout says so (k and v are not modified).
  void store(int64_t layer_idx, int64_t pos, const float* k, const float* v);

  // Applies `shift` (see the file comment) to kv head `head` of layer layer_idx, K and V.
  // Preconditions (CHECKed): not a ring; 0 <= n_keep, n_discard >= 1, n_keep + n_discard <=
  // n_past <= n_ctx; n_rot even and <= head_dim. Distinct (layer, head) pairs may be shifted
  // concurrently; nothing allocates.
  void shift_head(int64_t layer_idx, int64_t head, const KvShift& shift);

  // One layer's K and V in the layout() form (what attend_group reads).
  const uint8_t* k_rows(int64_t layer_idx) const { return k_ + layer_bytes_ * static_cast<size_t>(layer_idx); }
  const uint8_t* v_rows(int64_t layer_idx) const { return v_ + v_layer_bytes_ * static_cast<size_t>(layer_idx); }
  const AttentionLayout& layout() const { return layout_; }

  // K bytes of one position across all kv heads, and V's.
  size_t position_bytes() const { return layout_.head_bytes * static_cast<size_t>(n_kv_heads_); }
  size_t v_position_bytes() const { return layout_.v_head_bytes * static_cast<size_t>(n_kv_heads_); }
  // Bytes save_layer writes for n positions: n * (position_bytes() + v_position_bytes()).
  size_t saved_bytes(int64_t n) const { return (position_bytes() + v_position_bytes()) * static_cast<size_t>(n); }
  // Positions [0, n) of one layer in the order saved contexts use, whatever the in-memory
  // layout: K as [n][n_kv_heads][head], then V the same (rows) or [n_kv_heads * head_dim][n]
  // (transposed); saved_bytes(n) bytes. load_layer is the inverse.
  void save_layer(int64_t layer_idx, int64_t n, uint8_t* out) const;
  void load_layer(int64_t layer_idx, int64_t n, const uint8_t* in);
  int64_t n_ctx() const { return n_ctx_; }
  int64_t n_layers() const { return n_layers_; }
  const KvConfig& config() const { return config_; }
  bool ring() const { return ring_; }
  int64_t n_kv_heads() const { return n_kv_heads_; }
  int64_t head_dim() const { return layout_.head_dim; }
  size_t bytes() const { return (layer_bytes_ + v_layer_bytes_) * static_cast<size_t>(n_layers_); }
  // Positions per V^T row of a transposed V: n_ctx rounded up to whole 64-byte lines.
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
  KvConfig config_;
  bool ring_ = false;
  AttentionLayout layout_;
  size_t layer_bytes_ = 0;    // one layer's K
  size_t v_layer_bytes_ = 0;  // one layer's V
  uint8_t* k_ = nullptr;
  uint8_t* v_ = nullptr;
};

}  // namespace sniper
