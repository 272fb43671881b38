// SPDX-License-Identifier: MIT
#include "kv/kv_cache.h"

#include <cstring>

#include "base/check.h"
#include "base/fp16.h"
#include "base/huge_pages.h"
#include "gguf/format.h"
#include "kernels/hadamard.h"
#include "kernels/kernels.h"
#include "quant/quant.h"

namespace sniper {

namespace {

struct KvTypeRow {
  KvType type;
  const char* name;
  GgmlType ggml;
};
// One table for names, ggml types and parsing (the order of --help's list).
constexpr KvTypeRow kKvTypes[kKvTypeCount] = {
    {KvType::kF16, "f16", GgmlType::kF16},    {KvType::kBF16, "bf16", GgmlType::kBF16},
    {KvType::kQ8_0, "q8_0", GgmlType::kQ8_0}, {KvType::kQ4_0, "q4_0", GgmlType::kQ4_0},
    {KvType::kQ4_1, "q4_1", GgmlType::kQ4_1}, {KvType::kIQ4_NL, "iq4_nl", GgmlType::kIQ4_NL},
    {KvType::kQ5_0, "q5_0", GgmlType::kQ5_0}, {KvType::kQ5_1, "q5_1", GgmlType::kQ5_1},
};

const KvTypeRow& row_of(KvType type) {
  for (const KvTypeRow& r : kKvTypes) {
    if (r.type == type) return r;
  }
  CHECK(false, "unknown KvType %d", static_cast<int>(type));
  return kKvTypes[0];
}

constexpr int64_t kMaxRotatedHead = 4096;  // a store's stack copy of one head

int64_t block_size_of(KvType type) { return find_type_info(static_cast<uint32_t>(kv_ggml_type(type)))->block_size; }

// One layer's V: rows of V's type, or V^T rows of whole cache lines (2-byte elements).
size_t v_layer_bytes_for(int64_t n_ctx, int64_t n_kv_heads, int64_t head_dim, const KvConfig& config) {
  if (config.flash()) return row_bytes(kv_ggml_type(config.v), head_dim) * static_cast<size_t>(n_kv_heads * n_ctx);
  const int64_t row = (n_ctx + KvCache::kVtRowAlign - 1) / KvCache::kVtRowAlign * KvCache::kVtRowAlign;
  return sizeof(fp16_t) * static_cast<size_t>(n_kv_heads * head_dim * row);
}

// ggml's CPU from_float of each type: f16 / bf16 conversion, q8_0's row quantizer (the same
// bytes as its activation quantizer, the SIMD one here), the other block types' _ref
// quantizers (ggml's quantize_row_q4_0 etc. call the _ref ones).
void from_float(GgmlType type, const float* src, uint8_t* dst, int64_t n) {
  if (type == GgmlType::kF16 || type == GgmlType::kQ8_0) {
    get_kernels(type).quantize_act(src, dst, n);
  } else {
    quantize_row_ref(type, src, dst, n);
  }
}

}  // namespace

bool KvConfig::flash() const {
  return flash_attn == FlashAttn::kOn || (flash_attn == FlashAttn::kAuto && kv_type_quantized(v));
}

Result<KvType> parse_kv_type(std::string_view text) {
  for (const KvTypeRow& r : kKvTypes) {
    if (text == r.name) return r.type;
  }
  return make_error("KV cache type is '%.*s' but must be one of: f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1",
                    static_cast<int>(text.size()), text.data());
}

const char* kv_type_name(KvType type) { return row_of(type).name; }
GgmlType kv_ggml_type(KvType type) { return row_of(type).ggml; }
bool kv_type_quantized(KvType type) { return type != KvType::kF16 && type != KvType::kBF16; }

Result<FlashAttn> parse_flash_attn(std::string_view text) {
  if (text == "auto") return FlashAttn::kAuto;
  if (text == "on" || text == "1" || text == "enabled") return FlashAttn::kOn;
  if (text == "off" || text == "0" || text == "disabled") return FlashAttn::kOff;
  return make_error("flash attention (-fa) is '%.*s' but must be on, off or auto", static_cast<int>(text.size()),
                    text.data());
}

const char* flash_attn_name(FlashAttn fa) {
  return fa == FlashAttn::kOn ? "on" : fa == FlashAttn::kOff ? "off" : "auto";
}

std::string kv_config_name(const KvConfig& c) {
  std::string s = "K ";
  s += kv_type_name(c.k);
  s += ", V ";
  s += kv_type_name(c.v);
  s += c.flash() ? ", flash attention" : ", no flash attention";
  if (!c.rotate && (kv_type_quantized(c.k) || kv_type_quantized(c.v))) s += ", no rotation";
  return s;
}

Status validate_kv_config(const KvConfig& c) {
  if (kv_type_quantized(c.v) && c.flash_attn == FlashAttn::kOff) {
    return make_error(
        "the V cache type %s is quantized, which needs flash attention, but -fa is off (use -fa on or "
        "auto, or -ctv f16)",
        kv_type_name(c.v));
  }
  return ok_status();
}

Status validate_kv_head_dim(const KvConfig& c, int64_t head_dim) {
  const int64_t bk = block_size_of(c.k), bv = block_size_of(c.v);
  if (head_dim % bk != 0) {
    return make_error("K cache type %s has block size %ld, which does not divide head_dim %ld (use -ctk f16)",
                      kv_type_name(c.k), static_cast<long>(bk), static_cast<long>(head_dim));
  }
  if (head_dim % bv != 0) {
    return make_error("V cache type %s has block size %ld, which does not divide head_dim %ld (use -ctv f16)",
                      kv_type_name(c.v), static_cast<long>(bv), static_cast<long>(head_dim));
  }
  return ok_status();
}

size_t KvCache::bytes_for(int64_t n_layers, int64_t n_ctx, int64_t n_kv_heads, int64_t head_dim,
                          const KvConfig& config) {
  const size_t k_layer = row_bytes(kv_ggml_type(config.k), head_dim) * static_cast<size_t>(n_kv_heads * n_ctx);
  return (k_layer + v_layer_bytes_for(n_ctx, n_kv_heads, head_dim, config)) * static_cast<size_t>(n_layers);
}

Result<std::unique_ptr<KvCache>> KvCache::create(int64_t n_layers, int64_t n_ctx, int64_t n_kv_heads, int64_t head_dim,
                                                 const KvConfig& config, bool ring) {
  if (n_ctx < 1) return make_error("context size is %ld but must be at least 1", static_cast<long>(n_ctx));
  SNIPER_TRY(validate_kv_config(config));
  SNIPER_TRY(validate_kv_head_dim(config, head_dim));
  std::unique_ptr<KvCache> kv(new KvCache());
  kv->n_layers_ = n_layers;
  kv->n_ctx_ = n_ctx;
  kv->n_kv_heads_ = n_kv_heads;
  kv->config_ = config;
  kv->ring_ = ring;
  AttentionLayout& lay = kv->layout_;
  lay.k_type = kv_ggml_type(config.k);
  lay.v_type = kv_ggml_type(config.v);
  lay.flash = config.flash();
  lay.head_dim = head_dim;
  lay.head_bytes = row_bytes(lay.k_type, head_dim);
  lay.row_bytes = lay.head_bytes;
  lay.head_stride = lay.head_bytes * static_cast<size_t>(n_ctx);
  lay.n_ctx = n_ctx;
  lay.v_transposed = !lay.flash;
  lay.v_head_bytes =
      lay.v_transposed ? sizeof(fp16_t) * static_cast<size_t>(head_dim) : row_bytes(lay.v_type, head_dim);
  lay.v_row_bytes = lay.v_head_bytes;
  lay.v_head_stride = lay.v_head_bytes * static_cast<size_t>(n_ctx);
  const bool rotate = config.rotate && head_dim <= kMaxRotatedHead;
  lay.k_rot = rotate && kv_type_quantized(config.k) ? hadamard_k_chunk(head_dim) : 0;
  lay.v_rot = rotate && kv_type_quantized(config.v) ? hadamard_v_chunk(head_dim) : 0;
  kv->layer_bytes_ = lay.head_stride * static_cast<size_t>(n_kv_heads);
  kv->v_layer_bytes_ = v_layer_bytes_for(n_ctx, n_kv_heads, head_dim, config);
  if (lay.v_transposed) lay.vt_row_bytes = kv->v_layer_bytes_ / static_cast<size_t>(n_kv_heads * head_dim);
  const size_t k_total = kv->layer_bytes_ * static_cast<size_t>(n_layers);
  const size_t v_total = kv->v_layer_bytes_ * static_cast<size_t>(n_layers);
  // Huge pages: attention walks every head's keys and V^T rows, thousands of 4 KiB pages per
  // layer otherwise. Touched now so that decode never faults (the memory plan counts it).
  kv->k_ = map_pages(k_total);
  kv->v_ = map_pages(v_total);
  if (kv->k_ == nullptr || kv->v_ == nullptr) {
    return make_error("cannot allocate %zu bytes for the KV cache (n_ctx %ld)", k_total + v_total,
                      static_cast<long>(n_ctx));
  }
  std::memset(kv->k_, 0, k_total);
  std::memset(kv->v_, 0, v_total);
  return kv;
}

KvCache::~KvCache() {
  unmap_pages(k_, layer_bytes_ * static_cast<size_t>(n_layers_));
  unmap_pages(v_, v_layer_bytes_ * static_cast<size_t>(n_layers_));
}

void KvCache::store(int64_t layer_idx, int64_t pos, const float* k, const float* v) {
  if (ring_) pos %= n_ctx_;
  DCHECK(layer_idx >= 0 && layer_idx < n_layers_ && pos >= 0 && pos < n_ctx_);
  const int64_t hd = layout_.head_dim;
  const size_t layer = layer_bytes_ * static_cast<size_t>(layer_idx);
  const size_t v_layer = v_layer_bytes_ * static_cast<size_t>(layer_idx);
  // Rotated heads (k_rot / v_rot) go through a copy, one head at a time (create() rotates
  // only heads of at most kMaxRotatedHead elements).
  float tmp[kMaxRotatedHead];
  // from_float of the cache type (blocks never straddle heads), per head.
  for (int64_t h = 0; h < n_kv_heads_; ++h) {
    const size_t off =
        layer + layout_.head_stride * static_cast<size_t>(h) + layout_.row_bytes * static_cast<size_t>(pos);
    const float* kh = k + h * hd;
    if (layout_.k_rot > 0) {
      std::memcpy(tmp, kh, sizeof(float) * static_cast<size_t>(hd));
      hadamard_rotate(tmp, hd, layout_.k_rot);
      kh = tmp;
    }
    from_float(layout_.k_type, kh, k_ + off, hd);
    if (!layout_.v_transposed) {
      const float* vh = v + h * hd;
      if (layout_.v_rot > 0) {
        std::memcpy(tmp, vh, sizeof(float) * static_cast<size_t>(hd));
        hadamard_rotate(tmp, hd, layout_.v_rot);
        vh = tmp;
      }
      const size_t v_off =
          v_layer + layout_.v_head_stride * static_cast<size_t>(h) + layout_.v_row_bytes * static_cast<size_t>(pos);
      from_float(layout_.v_type, vh, v_ + v_off, hd);
    }
  }
  if (!layout_.v_transposed) return;
  // A transposed V (f16 or bf16, never rotated) is [n_kv_heads * head_dim][n_ctx] per layer
  // (llama.cpp's layout without flash attention): element (pos, i) lives at row i, column pos.
  uint8_t* vt = v_ + v_layer + sizeof(fp16_t) * static_cast<size_t>(pos);
  const bool bf16 = layout_.v_type == GgmlType::kBF16;
  for (int64_t i = 0; i < n_kv_heads_ * hd; ++i) {
    const uint16_t h = bf16 ? fp32_to_bf16(v[i]) : fp32_to_fp16(v[i]);
    std::memcpy(vt + layout_.vt_row_bytes * static_cast<size_t>(i), &h, sizeof(h));
  }
}

void KvCache::shift_head(int64_t layer_idx, int64_t head, const KvShift& s) {
  const int64_t hd = layout_.head_dim;
  CHECK(!ring_, "context shift of a ring cache");
  CHECK(layer_idx >= 0 && layer_idx < n_layers_ && head >= 0 && head < n_kv_heads_, "shift_head(%ld, %ld)",
        static_cast<long>(layer_idx), static_cast<long>(head));
  CHECK(s.n_keep >= 0 && s.n_discard >= 1 && s.n_keep + s.n_discard <= s.n_past && s.n_past <= n_ctx_,
        "context shift keep %ld discard %ld of %ld (n_ctx %ld)", static_cast<long>(s.n_keep),
        static_cast<long>(s.n_discard), static_cast<long>(s.n_past), static_cast<long>(n_ctx_));
  CHECK(s.n_rot >= 0 && s.n_rot % 2 == 0 && s.n_rot <= hd && hd <= kMaxRotatedHead && s.cos != nullptr &&
            s.sin != nullptr,
        "context shift n_rot %ld of head_dim %ld", static_cast<long>(s.n_rot), static_cast<long>(hd));
  const int64_t first_moved = s.n_keep + s.n_discard, n_moved = s.n_past - first_moved;
  // K: to f32 (the whole cache when quantized, as ggml_cast does), un-rotate, rope, rotate, back
  // to the cache type. Rows go up in position, so a row is read before anything lands on it.
  uint8_t* k_head =
      k_ + layer_bytes_ * static_cast<size_t>(layer_idx) + layout_.head_stride * static_cast<size_t>(head);
  const size_t kr = layout_.row_bytes;
  float tmp[kMaxRotatedHead];
  const auto reencode = [&](int64_t from, int64_t to, bool rope) {
    dequantize_row_ref(layout_.k_type, k_head + kr * static_cast<size_t>(from), tmp, hd);
    if (layout_.k_rot > 0) hadamard_rotate(tmp, hd, layout_.k_rot);
    if (rope) rope_apply(tmp, 1, hd, s.n_rot, s.style, s.cos, s.sin);
    if (layout_.k_rot > 0) hadamard_rotate(tmp, hd, layout_.k_rot);
    from_float(layout_.k_type, tmp, k_head + kr * static_cast<size_t>(to), hd);
  };
  if (kv_type_quantized(config_.k)) {
    for (int64_t p = 0; p < s.n_keep; ++p) reencode(p, p, false);
  }
  for (int64_t p = first_moved; p < s.n_past; ++p) reencode(p, p - s.n_discard, true);
  // V: the same positions' bytes, moved down.
  const size_t v_layer = v_layer_bytes_ * static_cast<size_t>(layer_idx);
  if (!layout_.v_transposed) {
    uint8_t* v_head = v_ + v_layer + layout_.v_head_stride * static_cast<size_t>(head);
    const size_t vr = layout_.v_row_bytes;
    std::memmove(v_head + vr * static_cast<size_t>(s.n_keep), v_head + vr * static_cast<size_t>(first_moved),
                 vr * static_cast<size_t>(n_moved));
    return;
  }
  for (int64_t i = head * hd; i < (head + 1) * hd; ++i) {
    uint8_t* row = v_ + v_layer + layout_.vt_row_bytes * static_cast<size_t>(i);
    std::memmove(row + sizeof(fp16_t) * static_cast<size_t>(s.n_keep),
                 row + sizeof(fp16_t) * static_cast<size_t>(first_moved),
                 sizeof(fp16_t) * static_cast<size_t>(n_moved));
  }
}

template <class F>
void KvCache::for_each_state_piece(int64_t layer_idx, int64_t n, F&& piece) const {
  DCHECK(layer_idx >= 0 && layer_idx < n_layers_ && n >= 0 && n <= n_ctx_);
  const size_t layer = layer_bytes_ * static_cast<size_t>(layer_idx);
  const size_t v_layer = v_layer_bytes_ * static_cast<size_t>(layer_idx);
  const size_t hb = layout_.head_bytes, vhb = layout_.v_head_bytes;
  const size_t pb = position_bytes(), vpb = v_position_bytes();
  const size_t v_state = pb * static_cast<size_t>(n);  // V follows K in the saved order
  for (int64_t h = 0; h < n_kv_heads_; ++h) {
    for (int64_t p = 0; p < n; ++p) {
      const size_t cache =
          layer + layout_.head_stride * static_cast<size_t>(h) + layout_.row_bytes * static_cast<size_t>(p);
      piece(k_ + cache, pb * static_cast<size_t>(p) + hb * static_cast<size_t>(h), hb);
      if (!layout_.v_transposed) {
        const size_t v_cache =
            v_layer + layout_.v_head_stride * static_cast<size_t>(h) + layout_.v_row_bytes * static_cast<size_t>(p);
        piece(v_ + v_cache, v_state + vpb * static_cast<size_t>(p) + vhb * static_cast<size_t>(h), vhb);
      }
    }
  }
  if (!layout_.v_transposed) return;
  // V^T: columns [0, n) of every row.
  const size_t n_rows = static_cast<size_t>(n_kv_heads_ * layout_.head_dim);
  const size_t live = sizeof(fp16_t) * static_cast<size_t>(n);
  uint8_t* vt = v_ + v_layer;
  for (size_t r = 0; r < n_rows; ++r) piece(vt + r * layout_.vt_row_bytes, v_state + r * live, live);
}

void KvCache::save_layer(int64_t layer_idx, int64_t n, uint8_t* out) const {
  for_each_state_piece(layer_idx, n,
                       [out](uint8_t* cache, size_t state, size_t bytes) { std::memcpy(out + state, cache, bytes); });
}

void KvCache::load_layer(int64_t layer_idx, int64_t n, const uint8_t* in) {
  for_each_state_piece(layer_idx, n,
                       [in](uint8_t* cache, size_t state, size_t bytes) { std::memcpy(cache, in + state, bytes); });
}

}  // namespace sniper
