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
#include "kernels/window_attention.h"

namespace sniper {

namespace {
void add_bias(float* y, const QTensor& bias, int64_t n_tok, int64_t n) {
  if (bias.data == nullptr) return;
  const float* b = f32_data(bias);
  for (int64_t t = 0; t < n_tok; ++t) add_inplace(y + t * n, b, n);
}

bool own_kv(const ModelConfig&, const LayerPlan& lp) { return lp.kv_shared_with < 0; }
bool shared_kv(const ModelConfig&, const LayerPlan& lp) { return lp.kv_shared_with >= 0; }

// q rows per head: [q | gate] with an output gate.
TensorShape q_shape(const ModelConfig& c, const LayerPlan& lp) {
  return tensor_shape(c.dim, lp.attn_output_gate ? 2 * lp.q_dim() : lp.q_dim());
}
TensorShape kv_shape(const ModelConfig& c, const LayerPlan& lp) { return tensor_shape(c.dim, lp.kv_dim()); }

constexpr LayerTensorSpec kTable[] = {
    {"attn_q.weight", &LayerWeights::wq, q_shape, TensorRole::kAttention, TensorType::kMatrix, false, nullptr},
    {"attn_k.weight", &LayerWeights::wk, kv_shape, TensorRole::kAttention, TensorType::kMatrix, false, own_kv},
    // V = K's projection when a v_optional layer has no attn_v.
    {"attn_v.weight", &LayerWeights::wv, kv_shape, TensorRole::kAttention, TensorType::kMatrix, false,
     [](const ModelConfig& c, const LayerPlan& lp) { return own_kv(c, lp) && !lp.v_optional; }},
    {"attn_v.weight", &LayerWeights::wv, kv_shape, TensorRole::kAttention, TensorType::kMatrix, true,
     [](const ModelConfig& c, const LayerPlan& lp) { return own_kv(c, lp) && lp.v_optional; }},
    {"attn_output.weight", &LayerWeights::wo,
     [](const ModelConfig& c, const LayerPlan& lp) { return tensor_shape(lp.q_dim(), c.dim); }, TensorRole::kAttention,
     TensorType::kMatrix, false, nullptr},
    {"attn_q.bias", &LayerWeights::bq, [](const ModelConfig&, const LayerPlan& lp) { return tensor_shape(lp.q_dim()); },
     TensorRole::kAlways, TensorType::kF32, false, [](const ModelConfig&, const LayerPlan& lp) { return lp.qkv_bias; }},
    {"attn_k.bias", &LayerWeights::bk,
     [](const ModelConfig&, const LayerPlan& lp) { return tensor_shape(lp.kv_dim()); }, TensorRole::kAlways,
     TensorType::kF32, false, [](const ModelConfig& c, const LayerPlan& lp) { return lp.qkv_bias && own_kv(c, lp); }},
    {"attn_v.bias", &LayerWeights::bv,
     [](const ModelConfig&, const LayerPlan& lp) { return tensor_shape(lp.kv_dim()); }, TensorRole::kAlways,
     TensorType::kF32, false, [](const ModelConfig& c, const LayerPlan& lp) { return lp.qkv_bias && own_kv(c, lp); }},
    {"attn_q_norm.weight", &LayerWeights::q_norm,
     [](const ModelConfig&, const LayerPlan& lp) { return tensor_shape(lp.head_dim); }, TensorRole::kAlways,
     TensorType::kF32, false, [](const ModelConfig&, const LayerPlan& lp) { return lp.qk_norm; }},
    {"attn_k_norm.weight", &LayerWeights::k_norm,
     [](const ModelConfig&, const LayerPlan& lp) { return tensor_shape(lp.head_dim); }, TensorRole::kAlways,
     TensorType::kF32, false, [](const ModelConfig& c, const LayerPlan& lp) { return lp.qk_norm && own_kv(c, lp); }},
    // A shared-KV layer reads its source's KV: its own K/V projections, if the file has them, stay unread.
    {"attn_k.weight", nullptr, kv_shape, TensorRole::kUnread, TensorType::kMatrix, true, shared_kv},
    {"attn_v.weight", nullptr, kv_shape, TensorRole::kUnread, TensorType::kMatrix, true, shared_kv},
    {"attn_k_norm.weight", nullptr, [](const ModelConfig&, const LayerPlan& lp) { return tensor_shape(lp.head_dim); },
     TensorRole::kUnread, TensorType::kF32, true, shared_kv},
    {"post_attention_norm.weight", &LayerWeights::post_attn_norm,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim); }, TensorRole::kAlways, TensorType::kF32,
     false, [](const ModelConfig&, const LayerPlan& lp) { return lp.attn_post_norm; }},
};

}  // namespace

std::span<const LayerTensorSpec> AttentionBlock::tensor_table() { return kTable; }

namespace {

// The distinct rope settings of the attention layers, in order of first use, and each layer's index.
std::vector<AttentionBlock::Rope> rope_settings(const ModelConfig& c, std::vector<int32_t>* layer_rope) {
  std::vector<AttentionBlock::Rope> ropes;
  if (layer_rope != nullptr) layer_rope->assign(c.layers.size(), -1);
  for (size_t l = 0; l < c.layers.size(); ++l) {
    const LayerPlan& lp = c.layers[l];
    if (lp.mixer != MixerKind::kAttention) continue;
    const AttentionBlock::Rope r{lp.rope_dims, lp.rope_base, lp.rope_freqs};
    auto it = std::find_if(ropes.begin(), ropes.end(), [&](const AttentionBlock::Rope& o) {
      return o.dims == r.dims && o.base == r.base && o.freqs == r.freqs;
    });
    if (it == ropes.end()) it = ropes.insert(ropes.end(), r);
    if (layer_rope != nullptr) (*layer_rope)[l] = static_cast<int32_t>(it - ropes.begin());
  }
  return ropes;
}

// The largest f(lp) over the attention layers (0 when there are none).
int64_t max_attention(const ModelConfig& c, int64_t (*f)(const LayerPlan&)) {
  int64_t m = 0;
  for (const LayerPlan& lp : c.layers) {
    if (lp.mixer == MixerKind::kAttention) m = std::max(m, f(lp));
  }
  return m;
}
size_t q_floats(const ModelConfig& c, int64_t B) {
  return rows(B, max_attention(c, [](const LayerPlan& lp) { return lp.q_dim(); }));
}
size_t kv_floats(const ModelConfig& c, int64_t B) {
  return rows(B, max_attention(c, [](const LayerPlan& lp) { return lp.kv_dim(); }));
}
size_t gated_q_floats(const ModelConfig& c, int64_t B) {
  return rows(B, max_attention(c, [](const LayerPlan& lp) { return lp.attn_output_gate ? lp.q_dim() : int64_t{0}; }));
}
size_t rope_floats(const ModelConfig& c, int64_t B) {
  size_t n = 0;
  for (const AttentionBlock::Rope& r : rope_settings(c, nullptr)) n += rows(B, r.dims / 2);
  return n;
}

}  // namespace

std::span<const ScratchEntry<AttentionBlock>> AttentionBlock::scratch_table() {
  static constexpr ScratchEntry<AttentionBlock> kScratch[] = {
      {&AttentionBlock::q_, nullptr, q_floats},
      {&AttentionBlock::qg_, nullptr, [](const ModelConfig& c, int64_t B) { return 2 * gated_q_floats(c, B); }},
      {&AttentionBlock::gate_, nullptr, gated_q_floats},
      {&AttentionBlock::k_, nullptr, kv_floats},
      {&AttentionBlock::v_, nullptr, kv_floats},
      {&AttentionBlock::att_, nullptr, q_floats},
      {&AttentionBlock::rope_cos_, nullptr, rope_floats},
      {&AttentionBlock::rope_sin_, nullptr, rope_floats},
  };
  return kScratch;
}

size_t AttentionBlock::scratch_bound(const ModelConfig& c, int64_t max_batch, int64_t n_ctx, int n_threads) {
  // Per thread: the widest layer's attention scratch over the whole context (any cache layout;
  // a sliding layer's ring has at most n_ctx cells), and the widest sliding layer's window tiles
  // (flash attention).
  int64_t full_hd = 0, full_group = 0;
  size_t window_floats = 0;
  for (const LayerPlan& lp : c.layers) {
    if (lp.mixer != MixerKind::kAttention || lp.n_kv_heads <= 0) continue;
    const int64_t group = lp.n_heads / lp.n_kv_heads;
    if (lp.sliding_window > 0) {
      // A widened ring (widen_rings_for_chunks) admits a chunk attending both ways: its tokens see
      // up to the ring's positions.
      const int64_t span = lp.ring_slots > 0 ? sliding_ring_slots(lp) : lp.sliding_window;
      window_floats = std::max(window_floats, window_attention_scratch_floats(lp.head_dim, span, group));
    }
    full_hd = std::max(full_hd, lp.head_dim);
    full_group = std::max(full_group, group);
  }
  size_t lazy = static_cast<size_t>(n_threads) * window_floats * sizeof(float);
  if (full_hd > 0) lazy += static_cast<size_t>(n_threads) * attention_scratch_bound(full_hd, full_group, n_ctx) + 64;
  return scratch_table_bytes(scratch_table(), c, max_batch) + lazy;
}

AttentionBlock::AttentionBlock(const ModelConfig& config, const QTensor& rope_freqs, int64_t max_batch)
    : config_(config), rope_freqs_(rope_freqs), has_rope_freqs_(rope_freqs.data != nullptr) {
  ropes_ = rope_settings(config, &layer_rope_);
  allocate_scratch(*this, scratch_table(), config, max_batch);
  size_t offset = 0;
  for (const Rope& r : ropes_) {
    rope_offset_.push_back(offset);
    offset += rows(max_batch, r.dims / 2);
  }
}

size_t AttentionBlock::scratch_bytes() const {
  return held_scratch_bytes(*this, scratch_table()) + window_scratch_.size() * sizeof(float) + att_scratch_.size();
}

void AttentionBlock::begin_batch(std::span<const SeqRows> seqs, const ChunkInput& in) {
  // Rotation angles for each row's position, once per rope setting (shared by its layers). A
  // row's rope position is its sequence's pos0 + t + in.rope_offset; with in.rope_pos (M-RoPE
  // models: an image's 2D positions, a batch of one sequence) each pair takes its section's
  // component (rope_angles_multi gives plain rope's bits when the components are equal).
  CHECK(in.rope_pos == nullptr || config_.has_mrope(), "2D rope positions for a model without M-RoPE sections");
  const float* factors = has_rope_freqs_ ? f32_data(rope_freqs_) : nullptr;
  for (size_t i = 0; i < ropes_.size(); ++i) {
    const Rope& r = ropes_[i];
    const int64_t half = r.dims / 2;
    float* cos = rope_cos_.data() + rope_offset_[i];
    float* sin = rope_sin_.data() + rope_offset_[i];
    const float* f = r.freqs ? factors : nullptr;
    for (const SeqRows& s : seqs) {
      for (int64_t t = 0; t < s.n_tok; ++t) {
        const int64_t row = s.row0 + t;
        if (in.rope_pos != nullptr) {
          const int64_t n = s.n_tok;
          const int64_t p4[4] = {in.rope_pos[t], in.rope_pos[n + t], in.rope_pos[2 * n + t], in.rope_pos[3 * n + t]};
          rope_angles_multi(p4, config_.rope_sections, /*interleaved=*/true, r.dims, r.base, config_.rope_freq_scale, f,
                            cos + row * half, sin + row * half);
        } else {
          rope_angles(s.pos0 + t + in.rope_offset, r.dims, r.base, config_.rope_freq_scale, f, cos + row * half,
                      sin + row * half);
        }
      }
    }
  }
}

Status AttentionBlock::forward(int64_t layer_idx, const LayerWeights& lw, const BlockIo& io) {
  const ModelConfig& c = config_;
  const LayerPlan& lp = c.layer(layer_idx);
  const int64_t n_tok = io.n_tok;
  ThreadPool& pool = *io.pool;
  const int64_t dim = c.dim, q_dim = lp.q_dim(), kv_dim = lp.kv_dim(), hd = lp.head_dim;
  const int64_t n_heads = lp.n_heads, n_kv_heads = lp.n_kv_heads;
  const bool own_kv = lp.kv_shared_with < 0;
  const bool gated = lp.attn_output_gate;
  const bool has_v = lw.wv.data != nullptr;
  CHECK(has_v || lp.v_optional || !own_kv, "layer %ld: attn_v is missing", static_cast<long>(layer_idx));
  // q, k and v in one parallel pass (k and v are small: alone, each would pay a pass's
  // hand-out and barrier for a few chunks); results equal separate matmul_q calls bit for bit.
  ActCache acts(io.buffers->act_bufs, 3);
  MatmulJob jobs[3];
  size_t n_jobs = 0;
  jobs[n_jobs++] = {&lw.wq, acts.get(lw.wq.type, io.xb, dim, n_tok, pool), gated ? qg_.data() : q_.data(),
                    gated ? 2 * q_dim : q_dim};
  if (own_kv) {
    jobs[n_jobs++] = {&lw.wk, acts.get(lw.wk.type, io.xb, dim, n_tok, pool), k_.data(), kv_dim};
    if (has_v) jobs[n_jobs++] = {&lw.wv, acts.get(lw.wv.type, io.xb, dim, n_tok, pool), v_.data(), kv_dim};
  }
  matmul_q_multi(std::span<const MatmulJob>(jobs, n_jobs), pool, selected_tier(), MatmulOrder::kAuto);
  if (own_kv && !has_v) std::memcpy(v_.data(), k_.data(), sizeof(float) * static_cast<size_t>(n_tok * kv_dim));
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
  if (own_kv) {
    add_bias(k_.data(), lw.bk, n_tok, kv_dim);
    add_bias(v_.data(), lw.bv, n_tok, kv_dim);
  }

  const size_t rope = static_cast<size_t>(layer_rope_[static_cast<size_t>(layer_idx)]);
  const int64_t n_rot = lp.rope_dims, half = n_rot / 2;
  const float* rope_cos = rope_cos_.data() + rope_offset_[rope];
  const float* rope_sin = rope_sin_.data() + rope_offset_[rope];
  for (const SeqRows& seq : io.seqs) {
    const KvSlot slot = seq.state->kv_slot(layer_idx);
    KvCache& kv = *slot.cache;
    CHECK(kv.n_kv_heads() == n_kv_heads && kv.head_dim() == hd, "layer %ld: KV slot shape differs from the layer plan",
          static_cast<long>(layer_idx));
    for (int64_t t = seq.row0; t < seq.row0 + seq.n_tok; ++t) {
      float* qt = q_.data() + t * q_dim;
      if (lp.qk_norm) {
        for (int64_t h = 0; h < n_heads; ++h) rms_norm(qt + h * hd, f32_data(lw.q_norm), qt + h * hd, hd, c.norm_eps);
      }
      rope_apply(qt, n_heads, hd, n_rot, c.rope_style, rope_cos + t * half, rope_sin + t * half);
      if (!own_kv) continue;
      float* kt = k_.data() + t * kv_dim;
      float* vt = v_.data() + t * kv_dim;
      for (int64_t h = 0; h < n_kv_heads; ++h) {
        if (lp.qk_norm) rms_norm(kt + h * hd, f32_data(lw.k_norm), kt + h * hd, hd, c.norm_eps);
        if (lp.v_norm) rms_norm(vt + h * hd, nullptr, vt + h * hd, hd, c.norm_eps);
      }
      rope_apply(kt, n_kv_heads, hd, n_rot, c.rope_style, rope_cos + t * half, rope_sin + t * half);
      kv.store(slot.index, seq.pos0 + (t - seq.row0), kt, vt);
    }
    if (lp.sliding_window > 0) {
      attend_window(lp, kv, slot.index, seq.row0, seq.pos0, seq.n_tok, io.non_causal, pool);
    } else {
      CHECK(!kv.ring(), "layer %ld: a full-attention layer over a ring", static_cast<long>(layer_idx));
      attend_full(lp, kv, slot.index, seq.row0, seq.pos0, seq.n_tok, io.non_causal, pool);
    }
  }
  if (gated) sigmoid_gate(gate_.data(), att_.data(), n_tok * q_dim);
  matmul(lw.wo, att_.data(), io.out, n_tok, io.buffers->act, pool);
  if (lp.attn_post_norm) {
    for (int64_t t = 0; t < n_tok; ++t) {
      rms_norm(io.out + t * dim, f32_data(lw.post_attn_norm), io.out + t * dim, dim, c.norm_eps);
    }
  }
  return ok_status();
}

void AttentionBlock::attend_full(const LayerPlan& lp, const KvCache& kv, int64_t index, int64_t row0, int64_t pos0,
                                 int64_t n_tok, bool non_causal, ThreadPool& pool) {
  // One work item per (tile of tokens, kv head): the query heads sharing a kv head (and, with
  // flash attention, the tokens of a tile) read its K and V once. Items are spread over the pool.
  const int64_t hd = lp.head_dim, q_dim = lp.q_dim(), n_kv_heads = lp.n_kv_heads;
  const AttentionLayout& layout = kv.layout();
  AttentionBatch batch = attention_batch(layout, pos0, n_tok, pool.n_threads());
  batch.causal = !non_causal;
  const int64_t group = lp.n_heads / n_kv_heads;
  // Items of up to tok_tile tokens of one kv head (tok_tile > 1 where their rows share K/V tiles).
  const int64_t tok_tile = attention_token_tile(layout, batch, group);
  const int64_t n_tiles = (n_tok + tok_tile - 1) / tok_tile;
  const size_t need = attention_scratch_bytes(layout, batch.n_kv_padded, group, tok_tile);
  size_t stride = 0;
  uint8_t* scratch_base = thread_scratch_slices(att_scratch_, need, static_cast<size_t>(pool.n_threads()), &stride);
  const uint8_t* k_rows = kv.k_rows(index);
  const uint8_t* v_rows = kv.v_rows(index);
  const float scale = lp.attn_scale;
  const int64_t n_items = n_tiles * n_kv_heads;
  std::atomic<int64_t> next{0};
  pool.run([&](int thread_idx, int) {
    uint8_t* scratch = scratch_base + stride * static_cast<size_t>(thread_idx);
    for (;;) {
      const int64_t item = next.fetch_add(1, std::memory_order_relaxed);
      if (item >= n_items) break;
      // kv head major: consecutive items read the same head's K and V.
      const int64_t kvh = item / n_tiles, t = item % n_tiles * tok_tile, nt = std::min(tok_tile, n_tok - t);
      const int64_t off = (row0 + t) * q_dim + kvh * group * hd;
      attend_tokens(layout, batch, q_.data() + off, q_dim, k_rows, v_rows, kvh, group, nt,
                    batch.causal ? pos0 + t + 1 : pos0 + n_tok, scale, att_.data() + off, q_dim, scratch);
    }
  });
}

void AttentionBlock::attend_window(const LayerPlan& lp, const KvCache& kv, int64_t index, int64_t row0, int64_t pos0,
                                   int64_t n_tok, bool non_causal, ThreadPool& pool) {
  const AttentionLayout& layout = kv.layout();
  if (layout.flash) {
    attend_window_flash(lp, kv, index, row0, pos0, n_tok, non_causal, pool);
    return;
  }
  // The reference's order (kernels/attention.h attend_group), over the ring's cells as llama.cpp
  // lays out its SWA cache (model/config.h sliding_ring_slots): before the ring wraps a token
  // scores cells [0, pos + 1) (the chunk's, non-causal), after it every cell; cells outside the
  // window are masked. One item per (token, kv head).
  const int64_t hd = lp.head_dim, q_dim = lp.q_dim(), cells = layout.n_ctx;
  const int64_t group = lp.n_heads / lp.n_kv_heads;
  const int64_t end = pos0 + n_tok;  // positions stored so far
  AttentionBatch batch = attention_batch(layout, pos0, n_tok, pool.n_threads());
  batch.causal = !non_causal;
  const size_t need = attention_scratch_bytes(layout, batch.n_kv_padded, group, 1);
  size_t stride = 0;
  uint8_t* scratch_base = thread_scratch_slices(att_scratch_, need, static_cast<size_t>(pool.n_threads()), &stride);
  const uint8_t* k_rows = kv.k_rows(index);
  const uint8_t* v_rows = kv.v_rows(index);
  const IsaTier tier = selected_tier();
  const float scale = lp.attn_scale;
  const int64_t n_items = n_tok * lp.n_kv_heads;
  std::atomic<int64_t> next{0};
  pool.run([&](int thread_idx, int) {
    uint8_t* scratch = scratch_base + stride * static_cast<size_t>(thread_idx);
    for (;;) {
      const int64_t item = next.fetch_add(1, std::memory_order_relaxed);
      if (item >= n_items) break;
      // kv head major: consecutive items read the same head's K and V.
      const int64_t kvh = item / n_tok, t = item % n_tok;
      const int64_t pos = pos0 + t;
      const int64_t seen = non_causal ? end : pos + 1;  // positions this token may see
      CellWindow w;
      w.behind = lp.sliding_window;
      w.ahead = seen - 1 - pos;
      w.self = pos % cells;
      const int64_t n_kv = std::min(cells, seen);
      const int64_t off = (row0 + t) * q_dim + kvh * group * hd;
      attend_group(layout, batch, q_.data() + off, k_rows, v_rows, kvh, group, n_kv, scale, att_.data() + off, scratch,
                   tier, w);
    }
  });
}

void AttentionBlock::attend_window_flash(const LayerPlan& lp, const KvCache& kv, int64_t index, int64_t row0,
                                         int64_t pos0, int64_t n_tok, bool non_causal, ThreadPool& pool) {
  // One item per (token, kv head, part of its query-head group): kernels/window_attention.h. A
  // non-causal chunk's token t also sees the chunk's later positions (n_tok - 1 - t ahead), as
  // llama.cpp's window mask lets an image's tokens see each other.
  const AttentionLayout& layout = kv.layout();
  const int64_t hd = lp.head_dim, q_dim = lp.q_dim(), W = lp.sliding_window;
  const int64_t max_ahead = non_causal ? n_tok - 1 : 0;
  const int64_t group = lp.n_heads / lp.n_kv_heads;
  // Split a group's heads into parts when there are fewer (token, kv head) items than threads.
  const int64_t n_threads = pool.n_threads();
  const int64_t base_items = n_tok * lp.n_kv_heads;
  const int64_t parts = std::min<int64_t>(group, std::max<int64_t>(1, (n_threads + base_items - 1) / base_items));
  const int64_t heads_per_part = (group + parts - 1) / parts;
  const size_t per_thread = window_attention_scratch_floats(hd, W + max_ahead, heads_per_part);
  if (window_scratch_.size() < per_thread * static_cast<size_t>(n_threads)) {
    window_scratch_.resize(per_thread * static_cast<size_t>(n_threads));
  }
  const uint8_t* k_rows = kv.k_rows(index);
  const uint8_t* v_rows = kv.v_rows(index);
  const IsaTier tier = selected_tier();
  const float scale = lp.attn_scale;
  const int64_t n_items = base_items * parts;
  std::atomic<int64_t> next{0};
  pool.run([&](int thread_idx, int) {
    float* scratch = window_scratch_.data() + per_thread * static_cast<size_t>(thread_idx);
    for (;;) {
      const int64_t item = next.fetch_add(1, std::memory_order_relaxed);
      if (item >= n_items) break;
      const int64_t part = item % parts, tk = item / parts;
      const int64_t t = tk / lp.n_kv_heads, kvh = tk % lp.n_kv_heads;
      const int64_t h0 = kvh * group + part * heads_per_part;
      const int64_t nh = std::min(heads_per_part, kvh * group + group - h0);
      if (nh <= 0) continue;
      const int64_t off = (row0 + t) * q_dim + h0 * hd;
      const int64_t ahead = non_causal ? n_tok - 1 - t : 0;
      sniper::attend_window(layout, k_rows, v_rows, kvh, q_.data() + off, nh, pos0 + t, W, ahead, scale,
                            att_.data() + off, scratch, tier);
    }
  });
}

}  // namespace sniper
