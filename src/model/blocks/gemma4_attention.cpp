// SPDX-License-Identifier: MIT
#include "model/blocks/gemma4_attention.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "base/check.h"
#include "kernels/attention.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "kernels/window_attention.h"

namespace sniper {

Gemma4Attention::Gemma4Attention(const ModelConfig& config, const QTensor& rope_freqs, int64_t max_batch)
    : config_(config), rope_freqs_(rope_freqs) {
  int64_t q_dim = 0, kv_dim = 0, rot = 0;
  for (const LayerPlan& lp : config.layers) {
    if (lp.mixer != MixerKind::kGemma4Attention) continue;
    q_dim = std::max(q_dim, lp.q_dim());
    kv_dim = std::max(kv_dim, lp.kv_dim());
    rot = std::max(rot, lp.rope_dims);
  }
  const size_t B = static_cast<size_t>(max_batch);
  q_.resize(B * static_cast<size_t>(q_dim));
  k_.resize(B * static_cast<size_t>(kv_dim));
  v_.resize(B * static_cast<size_t>(kv_dim));
  att_.resize(B * static_cast<size_t>(q_dim));
  rope_cos_.resize(B * static_cast<size_t>(rot / 2));
  rope_sin_.resize(B * static_cast<size_t>(rot / 2));
}

size_t Gemma4Attention::scratch_bytes() const {
  return (q_.size() + k_.size() + v_.size() + att_.size() + rope_cos_.size() + rope_sin_.size() +
          ring_scratch_.size()) *
             sizeof(float) +
         att_scratch_.size();
}

Status Gemma4Attention::forward(int64_t layer_idx, const LayerWeights& lw, SequenceState& state, const BlockIo& io) {
  const ModelConfig& c = config_;
  const LayerPlan& lp = c.layer(layer_idx);
  const int64_t n_tok = io.n_tok, pos0 = io.pos0;
  ThreadPool& pool = *io.pool;
  const int64_t dim = c.dim, q_dim = lp.q_dim(), kv_dim = lp.kv_dim(), hd = lp.head_dim;
  const int64_t n_heads = lp.n_heads, n_kv_heads = lp.n_kv_heads;
  const KvSlot slot = state.kv_slot(layer_idx);
  KvCache& kv = *slot.cache;
  CHECK(kv.n_kv_heads() == n_kv_heads && kv.head_dim() == hd, "layer %ld: KV slot shape differs from the layer plan",
        static_cast<long>(layer_idx));
  const bool own_kv = lp.kv_shared_with < 0;
  ActCache acts(io.buffers->act_bufs, 3);
  if (own_kv) {
    const bool has_v = lw.wv.data != nullptr;
    MatmulJob jobs[3] = {{&lw.wq, acts.get(lw.wq.type, io.xb, dim, n_tok, pool), q_.data(), q_dim},
                         {&lw.wk, acts.get(lw.wk.type, io.xb, dim, n_tok, pool), k_.data(), kv_dim},
                         {}};
    if (has_v) jobs[2] = {&lw.wv, acts.get(lw.wv.type, io.xb, dim, n_tok, pool), v_.data(), kv_dim};
    matmul_q_multi(std::span<const MatmulJob>(jobs, has_v ? 3 : 2), pool, selected_tier(), MatmulOrder::kAuto);
    if (!has_v) std::memcpy(v_.data(), k_.data(), sizeof(float) * static_cast<size_t>(n_tok * kv_dim));
  } else {
    matmul(lw.wq, io.xb, q_.data(), n_tok, io.buffers->act, pool);
  }

  // Rope angles of the layer's kind (sliding / full) for the chunk's positions.
  const int64_t n_rot = lp.rope_dims, half = n_rot / 2;
  const float* freq_factors = lp.rope_freqs && rope_freqs_.data ? f32_data(rope_freqs_) : nullptr;
  for (int64_t t = 0; t < n_tok; ++t) {
    rope_angles(pos0 + t, n_rot, lp.rope_base, c.rope_freq_scale, freq_factors, rope_cos_.data() + t * half,
                rope_sin_.data() + t * half);
  }
  for (int64_t t = 0; t < n_tok; ++t) {
    float* qt = q_.data() + t * q_dim;
    for (int64_t h = 0; h < n_heads; ++h) rms_norm(qt + h * hd, f32_data(lw.q_norm), qt + h * hd, hd, c.norm_eps);
    rope_apply(qt, n_heads, hd, n_rot, c.rope_style, rope_cos_.data() + t * half, rope_sin_.data() + t * half);
    if (!own_kv) continue;
    float* kt = k_.data() + t * kv_dim;
    float* vt = v_.data() + t * kv_dim;
    for (int64_t h = 0; h < n_kv_heads; ++h) {
      rms_norm(kt + h * hd, f32_data(lw.k_norm), kt + h * hd, hd, c.norm_eps);
      rms_norm(vt + h * hd, nullptr, vt + h * hd, hd, c.norm_eps);
    }
    rope_apply(kt, n_kv_heads, hd, n_rot, c.rope_style, rope_cos_.data() + t * half, rope_sin_.data() + t * half);
    kv.store(slot.index, pos0 + t, kt, vt);
  }

  if (lp.sliding_window > 0) {
    attend_window(lp, kv, slot.index, pos0, n_tok, pool);
  } else {
    CHECK(!kv.ring(), "layer %ld: a full-attention layer over a ring", static_cast<long>(layer_idx));
    attend_full(lp, kv, slot.index, pos0, n_tok, pool);
  }
  matmul(lw.wo, att_.data(), io.out, n_tok, io.buffers->act, pool);
  for (int64_t t = 0; t < n_tok; ++t) {
    rms_norm(io.out + t * dim, f32_data(lw.post_attn_norm), io.out + t * dim, dim, c.norm_eps);
  }
  return ok_status();
}

void Gemma4Attention::attend_full(const LayerPlan& lp, const KvCache& kv, int64_t index, int64_t pos0, int64_t n_tok,
                                  ThreadPool& pool) {
  // As AttentionBlock, with gemma4's attention scale 1.0: one item per (tile of tokens, kv head).
  const int64_t hd = lp.head_dim, q_dim = lp.q_dim(), n_kv_heads = lp.n_kv_heads;
  const AttentionLayout& layout = kv.layout();
  const AttentionBatch batch = attention_batch(layout, pos0, n_tok, pool.n_threads());
  const int64_t group = lp.n_heads / n_kv_heads;
  // Items of up to tok_tile tokens of one kv head (tok_tile > 1 where their rows share K/V tiles).
  const int64_t tok_tile = attention_token_tile(layout, batch, group);
  const int64_t n_tiles = (n_tok + tok_tile - 1) / tok_tile;
  const size_t need = attention_scratch_bytes(layout, batch.n_kv_padded, group, tok_tile);
  const size_t stride = (need + 63) / 64 * 64;
  const size_t n_threads = static_cast<size_t>(pool.n_threads());
  if (att_scratch_.size() < stride * n_threads + 64) att_scratch_.resize(stride * n_threads + 64);
  uint8_t* scratch_base =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(att_scratch_.data()) + 63) & ~uintptr_t{63});
  const uint8_t* k_rows = kv.k_rows(index);
  const uint8_t* v_rows = kv.v_rows(index);
  const int64_t n_items = n_tiles * n_kv_heads;
  std::atomic<int64_t> next{0};
  pool.run([&](int thread_idx, int) {
    uint8_t* scratch = scratch_base + stride * static_cast<size_t>(thread_idx);
    for (;;) {
      const int64_t item = next.fetch_add(1, std::memory_order_relaxed);
      if (item >= n_items) break;
      // kv head major: consecutive items read the same head's K and V.
      const int64_t kvh = item / n_tiles, t = item % n_tiles * tok_tile, nt = std::min(tok_tile, n_tok - t);
      const int64_t off = t * q_dim + kvh * group * hd;
      attend_tokens(layout, batch, q_.data() + off, q_dim, k_rows, v_rows, kvh, group, nt, pos0 + t + 1, 1.0f,
                    att_.data() + off, q_dim, scratch);
    }
  });
}

void Gemma4Attention::attend_window(const LayerPlan& lp, const KvCache& kv, int64_t index, int64_t pos0, int64_t n_tok,
                                    ThreadPool& pool) {
  // One item per (token, kv head, part of its query-head group): kernels/window_attention.h.
  const AttentionLayout& layout = kv.layout();
  const int64_t hd = lp.head_dim, q_dim = lp.q_dim(), W = lp.sliding_window;
  const int64_t group = lp.n_heads / lp.n_kv_heads;
  // Split a group's heads into parts when there are fewer (token, kv head) items than threads.
  const int64_t n_threads = pool.n_threads();
  const int64_t base_items = n_tok * lp.n_kv_heads;
  const int64_t parts = std::min<int64_t>(group, std::max<int64_t>(1, (n_threads + base_items - 1) / base_items));
  const int64_t heads_per_part = (group + parts - 1) / parts;
  const size_t per_thread = window_attention_scratch_floats(hd, W, heads_per_part);
  if (ring_scratch_.size() < per_thread * static_cast<size_t>(n_threads)) {
    ring_scratch_.resize(per_thread * static_cast<size_t>(n_threads));
  }
  const uint8_t* k_rows = kv.k_rows(index);
  const uint8_t* v_rows = kv.v_rows(index);
  const IsaTier tier = selected_tier();
  const int64_t n_items = base_items * parts;
  std::atomic<int64_t> next{0};
  pool.run([&](int thread_idx, int) {
    float* scratch = ring_scratch_.data() + per_thread * static_cast<size_t>(thread_idx);
    for (;;) {
      const int64_t item = next.fetch_add(1, std::memory_order_relaxed);
      if (item >= n_items) break;
      const int64_t part = item % parts, tk = item / parts;
      const int64_t t = tk / lp.n_kv_heads, kvh = tk % lp.n_kv_heads;
      const int64_t h0 = kvh * group + part * heads_per_part;
      const int64_t nh = std::min(heads_per_part, kvh * group + group - h0);
      if (nh <= 0) continue;
      const int64_t off = t * q_dim + h0 * hd;
      sniper::attend_window(layout, k_rows, v_rows, kvh, q_.data() + off, nh, pos0 + t, W, 1.0f, att_.data() + off,
                            scratch, tier);
    }
  });
}

}  // namespace sniper
