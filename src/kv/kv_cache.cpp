// SPDX-License-Identifier: MIT
#include "kv/kv_cache.h"

#include <cstring>

#include "base/check.h"
#include "base/fp16.h"
#include "base/huge_pages.h"
#include "gguf/format.h"
#include "kernels/kernels.h"

namespace sniper {

Result<KvType> parse_kv_type(std::string_view text) {
  if (text == "f16") return KvType::kF16;
  if (text == "q8_0") return KvType::kQ8_0;
  return make_error("KV cache type is '%.*s' but must be one of: f16, q8_0", static_cast<int>(text.size()),
                    text.data());
}

const char* kv_type_name(KvType type) { return type == KvType::kF16 ? "f16" : "q8_0"; }

namespace {
GgmlType ggml_type_of(KvType type) { return type == KvType::kF16 ? GgmlType::kF16 : GgmlType::kQ8_0; }

// One layer's V: the same as K for q8_0; V^T rows of whole cache lines for f16.
size_t v_layer_bytes_for(int64_t n_ctx, int64_t n_kv_heads, int64_t head_dim, KvType type) {
  if (type == KvType::kQ8_0) return row_bytes(GgmlType::kQ8_0, head_dim) * static_cast<size_t>(n_kv_heads * n_ctx);
  const int64_t row = (n_ctx + KvCache::kVtRowAlign - 1) / KvCache::kVtRowAlign * KvCache::kVtRowAlign;
  return sizeof(fp16_t) * static_cast<size_t>(n_kv_heads * head_dim * row);
}
}  // namespace

size_t KvCache::bytes_for(int64_t n_layers, int64_t n_ctx, int64_t n_kv_heads, int64_t head_dim, KvType type) {
  const size_t k_layer = row_bytes(ggml_type_of(type), head_dim) * static_cast<size_t>(n_kv_heads * n_ctx);
  return (k_layer + v_layer_bytes_for(n_ctx, n_kv_heads, head_dim, type)) * static_cast<size_t>(n_layers);
}

Result<std::unique_ptr<KvCache>> KvCache::create(int64_t n_layers, int64_t n_ctx, int64_t n_kv_heads,
                                                 int64_t head_dim, KvType type, bool ring) {
  if (n_ctx < 1) return make_error("context size is %ld but must be at least 1", static_cast<long>(n_ctx));
  if (type == KvType::kQ8_0 && head_dim % 32 != 0) {
    return make_error("KV cache type q8_0 needs head_dim to be a multiple of 32, but head_dim is %ld",
                      static_cast<long>(head_dim));
  }
  std::unique_ptr<KvCache> kv(new KvCache());
  kv->n_layers_ = n_layers;
  kv->n_ctx_ = n_ctx;
  kv->n_kv_heads_ = n_kv_heads;
  kv->type_ = type;
  kv->ring_ = ring;
  kv->layout_.kv_type = ggml_type_of(type);
  kv->layout_.head_dim = head_dim;
  kv->layout_.head_bytes = row_bytes(kv->layout_.kv_type, head_dim);
  kv->layout_.row_bytes = kv->layout_.head_bytes;
  kv->layout_.head_stride = kv->layout_.head_bytes * static_cast<size_t>(n_ctx);
  kv->layout_.n_ctx = n_ctx;
  kv->layout_.v_transposed = type == KvType::kF16;
  kv->layer_bytes_ = kv->layout_.head_stride * static_cast<size_t>(n_kv_heads);
  kv->v_layer_bytes_ = v_layer_bytes_for(n_ctx, n_kv_heads, head_dim, type);
  if (kv->layout_.v_transposed) kv->layout_.vt_row_bytes = kv->v_layer_bytes_ / static_cast<size_t>(n_kv_heads * head_dim);
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
  const KernelTable& kt = get_kernels(layout_.kv_type);
  const int64_t hd = layout_.head_dim;
  const size_t layer = layer_bytes_ * static_cast<size_t>(layer_idx);
  // from_float of the cache type (f16, or q8_0 whose blocks never straddle heads), per head.
  for (int64_t h = 0; h < n_kv_heads_; ++h) {
    const size_t off = layer + layout_.head_stride * static_cast<size_t>(h) + layout_.row_bytes * static_cast<size_t>(pos);
    kt.quantize_act(k + h * hd, k_ + off, hd);
    if (!layout_.v_transposed) kt.quantize_act(v + h * hd, v_ + off, hd);
  }
  if (!layout_.v_transposed) return;
  // f16 V is stored transposed, [n_kv_heads * head_dim][n_ctx] per layer (llama.cpp's layout
  // without flash attention): element (pos, i) lives at row i, column pos.
  uint8_t* vt = v_ + v_layer_bytes_ * static_cast<size_t>(layer_idx) + sizeof(fp16_t) * static_cast<size_t>(pos);
  for (int64_t i = 0; i < n_kv_heads_ * hd; ++i) {
    const fp16_t h = fp32_to_fp16(v[i]);
    std::memcpy(vt + layout_.vt_row_bytes * static_cast<size_t>(i), &h, sizeof(h));
  }
}

template <class F>
void KvCache::for_each_state_piece(int64_t layer_idx, int64_t n, F&& piece) const {
  DCHECK(layer_idx >= 0 && layer_idx < n_layers_ && n >= 0 && n <= n_ctx_);
  const size_t layer = layer_bytes_ * static_cast<size_t>(layer_idx);
  const size_t hb = layout_.head_bytes;
  const size_t pb = position_bytes();
  const size_t v_state = pb * static_cast<size_t>(n);  // V follows K in the saved order
  for (int64_t h = 0; h < n_kv_heads_; ++h) {
    for (int64_t p = 0; p < n; ++p) {
      const size_t cache = layer + layout_.head_stride * static_cast<size_t>(h) + layout_.row_bytes * static_cast<size_t>(p);
      const size_t state = pb * static_cast<size_t>(p) + hb * static_cast<size_t>(h);
      piece(k_ + cache, state, hb);
      if (!layout_.v_transposed) piece(v_ + cache, v_state + state, hb);
    }
  }
  if (!layout_.v_transposed) return;
  // V^T: columns [0, n) of every row.
  const size_t n_rows = static_cast<size_t>(n_kv_heads_ * layout_.head_dim);
  const size_t live = sizeof(fp16_t) * static_cast<size_t>(n);
  uint8_t* vt = v_ + v_layer_bytes_ * static_cast<size_t>(layer_idx);
  for (size_t r = 0; r < n_rows; ++r) piece(vt + r * layout_.vt_row_bytes, v_state + r * live, live);
}

void KvCache::save_layer(int64_t layer_idx, int64_t n, uint8_t* out) const {
  for_each_state_piece(layer_idx, n, [out](uint8_t* cache, size_t state, size_t bytes) {
    std::memcpy(out + state, cache, bytes);
  });
}

void KvCache::load_layer(int64_t layer_idx, int64_t n, const uint8_t* in) {
  for_each_state_piece(layer_idx, n, [in](uint8_t* cache, size_t state, size_t bytes) {
    std::memcpy(cache, in + state, bytes);
  });
}

}  // namespace sniper
