// SPDX-License-Identifier: MIT
#include "model/blocks/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/activations.h"
#include "kernels/attention.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"

namespace sniper {

namespace {
void add_bias(float* y, const QTensor& bias, int64_t n_tok, int64_t n) {
  if (bias.data == nullptr) return;
  const float* b = f32_data(bias);
  for (int64_t t = 0; t < n_tok; ++t) add_inplace(y + t * n, b, n);
}
}  // namespace

AttentionBlock::AttentionBlock(const ModelConfig& config, const QTensor& rope_freqs, int64_t max_batch)
    : config_(config), rope_freqs_(rope_freqs) {
  int64_t q_dim = 0, kv_dim = 0;
  bool gated = false;
  for (const LayerPlan& lp : config.layers) {
    if (lp.mixer != MixerKind::kAttention) continue;
    q_dim = std::max(q_dim, lp.q_dim());
    kv_dim = std::max(kv_dim, lp.kv_dim());
    gated = gated || lp.attn_output_gate;
  }
  const size_t B = static_cast<size_t>(max_batch);
  q_.resize(B * static_cast<size_t>(q_dim));
  k_.resize(B * static_cast<size_t>(kv_dim));
  v_.resize(B * static_cast<size_t>(kv_dim));
  att_.resize(B * static_cast<size_t>(q_dim));
  if (gated) {
    qg_.resize(2 * B * static_cast<size_t>(q_dim));
    gate_.resize(B * static_cast<size_t>(q_dim));
  }
  rope_cos_.resize(B * static_cast<size_t>(config.rope_dims / 2));
  rope_sin_.resize(B * static_cast<size_t>(config.rope_dims / 2));
}

size_t AttentionBlock::scratch_bytes() const {
  return (q_.size() + qg_.size() + gate_.size() + k_.size() + v_.size() + att_.size() + rope_cos_.size() +
          rope_sin_.size()) *
             sizeof(float) +
         att_scratch_.size();
}

void AttentionBlock::begin_chunk(int64_t pos0, int64_t n_tok, const ChunkInput& in) {
  // Rotation angles for each position of the chunk (shared by all layers). M-RoPE tokens with 2D
  // positions (an image) take their sections' components; every other token has one position in
  // all components, which is plain rope (rope_angles_multi gives the same bits then).
  const ModelConfig& c = config_;
  const int64_t half = c.rope_dims / 2;
  const float* freq_factors = rope_freqs_.data ? f32_data(rope_freqs_) : nullptr;
  for (int64_t t = 0; t < n_tok; ++t) {
    float* cos_t = rope_cos_.data() + t * half;
    float* sin_t = rope_sin_.data() + t * half;
    if (in.rope_pos != nullptr) {
      CHECK(c.has_mrope(), "2D rope positions for a model without M-RoPE sections");
      const int64_t p4[4] = {in.rope_pos[t], in.rope_pos[n_tok + t], in.rope_pos[2 * n_tok + t],
                             in.rope_pos[3 * n_tok + t]};
      rope_angles_multi(p4, c.rope_sections, /*interleaved=*/true, c.rope_dims, c.rope_base, c.rope_freq_scale,
                        freq_factors, cos_t, sin_t);
    } else {
      rope_angles(pos0 + t + in.rope_offset, c.rope_dims, c.rope_base, c.rope_freq_scale, freq_factors, cos_t, sin_t);
    }
  }
}

Status AttentionBlock::forward(int64_t layer_idx, const LayerWeights& lw, SequenceState& state, const BlockIo& io) {
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
  CHECK(!kv.ring(), "layer %ld: attention over a sliding-window ring is not supported by this block",
        static_cast<long>(layer_idx));
  ActCache acts(io.buffers->act_bufs, 3);
  // q, k and v in one parallel pass (k and v are small: alone, each would pay a pass's
  // hand-out and barrier for a few chunks); results equal three matmul_q calls bit for bit.
  const bool gated = lp.attn_output_gate;
  const MatmulJob qkv[3] = {{&lw.wq, acts.get(lw.wq.type, io.xb, dim, n_tok, pool), gated ? qg_.data() : q_.data(),
                             gated ? 2 * q_dim : q_dim},
                            {&lw.wk, acts.get(lw.wk.type, io.xb, dim, n_tok, pool), k_.data(), kv_dim},
                            {&lw.wv, acts.get(lw.wv.type, io.xb, dim, n_tok, pool), v_.data(), kv_dim}};
  matmul_q_multi(qkv, pool, selected_tier(), MatmulOrder::kAuto);
  if (gated) {
    // W_q's rows per head: [q (hd) | gate (hd)].
    for (int64_t t = 0; t < n_tok; ++t) {
      for (int64_t h = 0; h < n_heads; ++h) {
        const float* src = qg_.data() + t * 2 * q_dim + h * 2 * hd;
        std::memcpy(q_.data() + t * q_dim + h * hd, src, sizeof(float) * static_cast<size_t>(hd));
        std::memcpy(gate_.data() + t * q_dim + h * hd, src + hd, sizeof(float) * static_cast<size_t>(hd));
      }
    }
  }
  add_bias(q_.data(), lw.bq, n_tok, q_dim);
  add_bias(k_.data(), lw.bk, n_tok, kv_dim);
  add_bias(v_.data(), lw.bv, n_tok, kv_dim);

  const int64_t half = c.rope_dims / 2;
  const bool own_kv = lp.kv_shared_with < 0;
  for (int64_t t = 0; t < n_tok; ++t) {
    float* qt = q_.data() + t * q_dim;
    float* kt = k_.data() + t * kv_dim;
    if (c.qk_norm) {
      for (int64_t h = 0; h < n_heads; ++h) rms_norm(qt + h * hd, f32_data(lw.q_norm), qt + h * hd, hd, c.norm_eps);
      for (int64_t h = 0; h < n_kv_heads; ++h) rms_norm(kt + h * hd, f32_data(lw.k_norm), kt + h * hd, hd, c.norm_eps);
    }
    rope_apply(qt, n_heads, hd, c.rope_dims, c.rope_style, rope_cos_.data() + t * half, rope_sin_.data() + t * half);
    rope_apply(kt, n_kv_heads, hd, c.rope_dims, c.rope_style, rope_cos_.data() + t * half, rope_sin_.data() + t * half);
    if (own_kv) kv.store(slot.index, pos0 + t, kt, v_.data() + t * kv_dim);
  }

  // Attention: one work item per (tile of tokens, kv head): the query heads sharing a kv head
  // (and, with flash attention, the tokens of a tile) read its K and V once. Items are spread
  // over the pool.
  const AttentionLayout& layout = kv.layout();
  AttentionBatch batch = attention_batch(layout, pos0, n_tok, pool.n_threads());
  batch.causal = !io.non_causal;
  const int64_t group = n_heads / n_kv_heads;
  // Items of up to tok_tile tokens of one kv head (tok_tile > 1 where their rows share K/V tiles).
  const int64_t tok_tile = attention_token_tile(layout, batch, group);
  const int64_t n_tiles = (n_tok + tok_tile - 1) / tok_tile;
  const size_t need = attention_scratch_bytes(layout, batch.n_kv_padded, group, tok_tile);
  const size_t stride = (need + 63) / 64 * 64;
  const size_t n_threads = static_cast<size_t>(pool.n_threads());
  if (att_scratch_.size() < stride * n_threads + 64) att_scratch_.resize(stride * n_threads + 64);
  uint8_t* scratch_base =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(att_scratch_.data()) + 63) & ~uintptr_t{63});
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const uint8_t* k_rows = kv.k_rows(slot.index);
  const uint8_t* v_rows = kv.v_rows(slot.index);
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
      attend_tokens(layout, batch, q_.data() + off, q_dim, k_rows, v_rows, kvh, group, nt,
                    batch.causal ? pos0 + t + 1 : pos0 + n_tok, scale, att_.data() + off, q_dim, scratch);
    }
  });

  if (gated) sigmoid_gate(gate_.data(), att_.data(), n_tok * q_dim);
  matmul(lw.wo, att_.data(), io.out, n_tok, io.buffers->act, pool);
  return ok_status();
}

}  // namespace sniper
