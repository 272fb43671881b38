// SPDX-License-Identifier: MIT
#include "model/blocks/gemma4_attention.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "base/check.h"
#include "base/fp16.h"
#include "kernels/attention.h"
#include "kernels/hadamard.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"

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
    attend_window(lp, kv, slot.index, pos0, n_tok, io.non_causal, pool);
  } else {
    CHECK(!kv.ring(), "layer %ld: a full-attention layer over a ring", static_cast<long>(layer_idx));
    attend_full(lp, kv, slot.index, pos0, n_tok, io.non_causal, pool);
  }
  matmul(lw.wo, att_.data(), io.out, n_tok, io.buffers->act, pool);
  for (int64_t t = 0; t < n_tok; ++t) {
    rms_norm(io.out + t * dim, f32_data(lw.post_attn_norm), io.out + t * dim, dim, c.norm_eps);
  }
  return ok_status();
}

void Gemma4Attention::attend_full(const LayerPlan& lp, const KvCache& kv, int64_t index, int64_t pos0, int64_t n_tok,
                                  bool non_causal, ThreadPool& pool) {
  // As AttentionBlock, with gemma4's attention scale 1.0: one item per (tile of tokens, kv head).
  const int64_t hd = lp.head_dim, q_dim = lp.q_dim(), n_kv_heads = lp.n_kv_heads;
  const AttentionLayout& layout = kv.layout();
  AttentionBatch batch = attention_batch(layout, pos0, n_tok, pool.n_threads());
  batch.causal = !non_causal;
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
      attend_tokens(layout, batch, q_.data() + off, q_dim, k_rows, v_rows, kvh, group, nt,
                    non_causal ? pos0 + n_tok : pos0 + t + 1, 1.0f, att_.data() + off, q_dim, scratch);
    }
  });
}

void Gemma4Attention::attend_window(const LayerPlan& lp, const KvCache& kv, int64_t index, int64_t pos0, int64_t n_tok,
                                    bool non_causal, ThreadPool& pool) {
  // Per (token, kv head, part of its query-head group): the keys of positions [p - window + 1, p]
  // (to the chunk's last position when non_causal: a media chunk's tokens see each other, as
  // llama.cpp's window mask lets them) are gathered once from their ring slots (p % capacity)
  // into a transposed f32 tile, the
  // group's scores are one gemm (heads x head_dim times head_dim x window), each head's softmax
  // (scale 1.0) and the f16 rounding of its probabilities follow the reference, and the V product
  // is one gemm over the window's V rows in position order. Q is rounded to f16 as the
  // reference's f16 K product does. The reference attends over its full-size cache with a mask:
  // the same terms, summed in another order (within the reference bounds, not bit-exact).
  const AttentionLayout& layout = kv.layout();
  // K and V may have different types; a quantized K is stored Hadamard-rotated (layout.k_rot),
  // so the query is rotated the same way, and a rotated V's output is rotated back.
  const KernelTable& kt = get_kernels(layout.k_type);
  const KernelTable& vt_kernels = get_kernels(layout.v_type);
  const RowOps& ops = find_row_ops(selected_tier());
  const bool k_f16 = layout.k_type == GgmlType::kF16;
  const bool vt_bf16 = layout.v_type == GgmlType::kBF16;
  const int64_t hd = lp.head_dim, q_dim = lp.q_dim(), cap = kv.n_ctx();
  // The most cells one token sees: the window, and the chunk's later tokens when non_causal.
  const int64_t W = lp.sliding_window + (non_causal ? n_tok - 1 : 0);
  const int64_t group = lp.n_heads / lp.n_kv_heads;
  // Split a group's heads into parts when there are fewer (token, kv head) items than threads.
  const int64_t n_threads = pool.n_threads();
  const int64_t base_items = n_tok * lp.n_kv_heads;
  const int64_t parts = std::min<int64_t>(group, std::max<int64_t>(1, (n_threads + base_items - 1) / base_items));
  const int64_t heads_per_part = (group + parts - 1) / parts;
  // Per thread: K^T tile [hd x W], V tile [W x hd], scores and weights [heads x W], queries and
  // outputs [heads x hd], and one row: a dequantized K row [hd] or a gathered V^T row [W].
  const size_t per_thread =
      static_cast<size_t>(2 * hd * W + 2 * heads_per_part * W + 2 * heads_per_part * hd + std::max(W, hd));
  if (ring_scratch_.size() < per_thread * static_cast<size_t>(n_threads)) {
    ring_scratch_.resize(per_thread * static_cast<size_t>(n_threads));
  }
  const uint8_t* k_rows = kv.k_rows(index);
  const uint8_t* v_rows = kv.v_rows(index);
  const int64_t n_items = base_items * parts;
  std::atomic<int64_t> next{0};
  pool.run([&](int thread_idx, int) {
    float* kt_tile = ring_scratch_.data() + per_thread * static_cast<size_t>(thread_idx);
    float* v_tile = kt_tile + hd * W;
    float* scores = v_tile + W * hd;
    float* weights = scores + heads_per_part * W;
    float* qg = weights + heads_per_part * W;
    float* acc = qg + heads_per_part * hd;
    float* vcol = acc + heads_per_part * hd;
    for (;;) {
      const int64_t item = next.fetch_add(1, std::memory_order_relaxed);
      if (item >= n_items) break;
      const int64_t part = item % parts, tk = item / parts;
      const int64_t t = tk / lp.n_kv_heads, kvh = tk % lp.n_kv_heads;
      const int64_t h0 = kvh * group + part * heads_per_part;
      const int64_t nh = std::min(heads_per_part, kvh * group + group - h0);
      if (nh <= 0) continue;
      const int64_t p = pos0 + t, first = std::max<int64_t>(0, p - lp.sliding_window + 1);
      const int64_t last = non_causal ? pos0 + n_tok - 1 : p, n = last - first + 1;
      CHECK(last - first < cap, "the ring holds %ld positions, the window needs %ld", static_cast<long>(cap),
            static_cast<long>(n));
      // The window's slots: at most two contiguous runs of the ring.
      const int64_t s0 = first % cap, run0 = std::min(n, cap - s0);
      const uint8_t* k_head = k_rows + layout.head_stride * static_cast<size_t>(kvh);
      if (k_f16) {
        ops.widen_f16_cols(k_head + layout.row_bytes * static_cast<size_t>(s0), layout.row_bytes, run0, hd, kt_tile, n);
        if (run0 < n) ops.widen_f16_cols(k_head, layout.row_bytes, n - run0, hd, kt_tile + run0, n);
      } else {
        for (int64_t j = 0; j < n; ++j) {
          const int64_t s = (first + j) % cap;
          kt.dequant_row(k_head + layout.row_bytes * static_cast<size_t>(s), vcol, hd);
          for (int64_t d = 0; d < hd; ++d) kt_tile[d * n + j] = vcol[d];
        }
      }
      for (int64_t g = 0; g < nh; ++g) {
        const float* q = q_.data() + t * q_dim + (h0 + g) * hd;
        float* qr = qg + g * hd;
        std::memcpy(qr, q, sizeof(float) * static_cast<size_t>(hd));
        if (layout.k_rot > 0) hadamard_rotate(qr, hd, layout.k_rot);
        ops.round_fp16_row(qr, qr, hd);
      }
      std::fill(scores, scores + nh * n, 0.0f);
      ops.gemm_f32(scores, qg, kt_tile, nh, hd, n);
      for (int64_t g = 0; g < nh; ++g) {
        softmax(scores + g * n, n);
        ops.round_fp16_row(scores + g * n, weights + g * n, n);
      }
      // The window's V rows, in position order.
      if (layout.v_transposed) {
        for (int64_t d = 0; d < hd; ++d) {
          const uint8_t* vt_row = v_rows + layout.vt_row_bytes * static_cast<size_t>(kvh * hd + d);
          const auto* cells = reinterpret_cast<const uint16_t*>(vt_row);
          if (vt_bf16) {
            for (int64_t j = 0; j < n; ++j) {
              fp16_t v;
              std::memcpy(&v, vt_row + sizeof(fp16_t) * static_cast<size_t>((first + j) % cap), sizeof(v));
              vcol[j] = bf16_to_fp32(v);
            }
          } else {
            ops.widen_f16(cells + s0, vcol, run0);
            if (run0 < n) ops.widen_f16(cells, vcol + run0, n - run0);
          }
          for (int64_t j = 0; j < n; ++j) v_tile[j * hd + d] = vcol[j];
        }
      } else {
        const uint8_t* v_head = v_rows + layout.v_head_stride * static_cast<size_t>(kvh);
        for (int64_t j = 0; j < n; ++j) {
          vt_kernels.dequant_row(v_head + layout.v_row_bytes * static_cast<size_t>((first + j) % cap), v_tile + j * hd,
                                 hd);
        }
      }
      std::fill(acc, acc + nh * hd, 0.0f);
      ops.gemm_f32(acc, weights, v_tile, nh, n, hd);
      for (int64_t g = 0; g < nh; ++g) {
        float* out = acc + g * hd;
        if (layout.v_rot > 0) hadamard_rotate(out, hd, layout.v_rot);
        std::memcpy(att_.data() + t * q_dim + (h0 + g) * hd, out, sizeof(float) * static_cast<size_t>(hd));
      }
    }
  });
}

}  // namespace sniper
