// SPDX-License-Identifier: MIT
#include "kernels/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/fp16.h"
#include "kernels/flash_attention_tiled.h"
#include "kernels/hadamard.h"
#include "kernels/kernel_registry.h"
#include "kernels/kernel_set.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "quant/iq4_nl.h"
#include "quant/q8_0.h"

namespace sniper {

namespace {

constexpr int64_t kTile = 64;            // cells whose scores are computed in one pass over K
                                         // (also llama.cpp's GGML_FA_TILE_KV for the tiled path)
constexpr int64_t kTiledMinRows = 64;    // GGML_FA_TILE_Q: query rows from which f16 runs tiled
constexpr int64_t kSplitMinCells = 512;  // padded cells from which f16 decode splits the KV range
constexpr int64_t kChunkRows = 64;       // query rows (tokens x heads) of one per-row-kernel token tile

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

struct FlashScratch {
  float* qf;         // [rows][head_dim] the rotated query, or the f16-rounded one widened
  uint8_t* qq;       // [rows][q_row] the query in K's vec_dot_type
  float* scores;     // [rows][kTile]
  float* acc32;      // [rows][head_dim] f32 accumulators (non-f16 V)
  fp16_t* acc16;     // [rows][head_dim] f16 accumulators (f16 V)
  float* v32;        // [kTile][head_dim] a tile of V rows decoded (split-KV: one accumulator widened)
  float* m;          // [rows] running maximum
  float* sum;        // [rows] running sum
  float* m_final;    // [rows] split-KV: merged maximum
  float* sum_final;  // [rows] split-KV: merged sum
};

size_t q_row_bytes(const AttentionLayout& layout) {
  return row_bytes(get_kernels(layout.k_type).vec_dot_type, layout.head_dim);
}

// The one_chunk scratch for `rows` query rows (a token tile's heads), in carve's order.
size_t one_chunk_bytes(const AttentionLayout& layout, int64_t rows) {
  const size_t hd = static_cast<size_t>(layout.head_dim), r = static_cast<size_t>(rows);
  return align64(sizeof(float) * hd * r) + align64(q_row_bytes(layout) * r) +
         align64(sizeof(float) * static_cast<size_t>(kTile) * r) + align64(sizeof(float) * hd * r) +
         align64(sizeof(fp16_t) * hd * r) + align64(sizeof(float) * hd * static_cast<size_t>(kTile)) +
         4 * align64(sizeof(float) * r);
}

FlashScratch carve(const AttentionLayout& layout, int64_t rows, uint8_t* p) {
  const size_t hd = static_cast<size_t>(layout.head_dim), r = static_cast<size_t>(rows);
  FlashScratch s;
  s.qf = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * hd * r);
  s.qq = p;
  p += align64(q_row_bytes(layout) * r);
  s.scores = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * static_cast<size_t>(kTile) * r);
  s.acc32 = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * hd * r);
  s.acc16 = reinterpret_cast<fp16_t*>(p);
  p += align64(sizeof(fp16_t) * hd * r);
  s.v32 = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * hd * static_cast<size_t>(kTile));
  s.m = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * r);
  s.sum = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * r);
  s.m_final = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * r);
  s.sum_final = reinterpret_cast<float*>(p);
  return s;
}

bool tiled_path(const AttentionLayout& layout, const AttentionBatch& batch) {
  return layout.k_type == GgmlType::kF16 && layout.v_type == GgmlType::kF16 && batch.n_tok >= kTiledMinRows &&
         layout.head_dim % 16 == 0;
}

}  // namespace

size_t flash_attention_scratch_bytes(const AttentionLayout& layout, int64_t group, int64_t n_tok_tile) {
  const int64_t rows = group * std::max<int64_t>(1, n_tok_tile);
  const bool f16_kv = layout.k_type == GgmlType::kF16 && layout.v_type == GgmlType::kF16;
  const size_t tiled = f16_kv ? flash_tiled_scratch_bytes(layout.head_dim, rows) : 0;
  return std::max(one_chunk_bytes(layout, rows), tiled);
}

size_t flash_attention_scratch_bound(int64_t head_dim, int64_t group) {
  // flash_attention_scratch_bytes with the widest query row (f32: 4 bytes an element; every
  // vec_dot_type row is narrower) and the most rows a token tile holds: max(1, 64 / group) tokens
  // of `group` rows, so at most max(group, 64) on the per-row and the tiled path alike.
  const int64_t rows = std::max<int64_t>(group, std::max(kChunkRows, kFlashTileRows));
  const size_t hd = static_cast<size_t>(head_dim), r = static_cast<size_t>(rows);
  const size_t one_chunk = align64(sizeof(float) * hd * r) + align64(sizeof(float) * hd * r) +
                           align64(sizeof(float) * static_cast<size_t>(kTile) * r) + align64(sizeof(float) * hd * r) +
                           align64(sizeof(fp16_t) * hd * r) + align64(sizeof(float) * hd * static_cast<size_t>(kTile)) +
                           4 * align64(sizeof(float) * r);
  return std::max(one_chunk, flash_tiled_scratch_bytes(head_dim, rows));
}

int64_t flash_token_tile(const AttentionLayout& layout, const AttentionBatch& batch, int64_t group) {
  if (tiled_path(layout, batch)) return std::max<int64_t>(1, kFlashTileRows / group);
  return batch.n_tok >= 2 ? std::max<int64_t>(1, kChunkRows / group) : 1;
}

namespace {

// What one call shares: the tables, the scratch and the group's query in K's vec_dot_type.
struct FlashCall {
  const AttentionLayout& layout;
  const KernelTable& kk;
  const KernelTable& kv;
  const RowOps& ops;
  FlashScratch s;
  size_t q_row;
  const AttentionKernels& fast;  // the tier's dedicated K-score products (nullptr: the gemm path)
  bool kq_f16_wide;              // f16 K through fast.kq_f16 (the query widened once per row)
  int64_t group;
  const uint8_t* k;  // this kv head's K rows
  const uint8_t* v;  // this kv head's V rows
  float scale;
};

// llama.cpp's one_chunk for the rows of n_tok consecutive tokens (row r = token r / group, head
// r % group; token i attends to cells [0, n_kv0 + i), or [0, n_kv0) when !causal) over cells
// [c_begin, c_end), continuing
// the state in s.m / s.sum / the accumulators. Each row sees its cells in order and exactly the
// operations of a call for it alone: the tokens share each tile's K gemm (every output is its
// vec_dot) and decoded V rows.
void run_chunk(const FlashCall& f, int64_t c_begin, int64_t c_end, int64_t n_tok, int64_t n_kv0, bool causal = true) {
  const AttentionLayout& layout = f.layout;
  const FlashScratch& s = f.s;
  const int64_t hd = layout.head_dim, group = f.group, rows = n_tok * group;
  const bool v_f16 = layout.v_type == GgmlType::kF16;
  const int64_t c_max = std::min(c_end, causal ? n_kv0 + n_tok - 1 : n_kv0);
  for (int64_t c0 = c_begin; c0 < c_max; c0 += kTile) {
    const int64_t nt = std::min(kTile, c_max - c0);
    // Tokens [0, i0) attend to no cell of this tile.
    const int64_t r0 = causal ? std::max<int64_t>(0, c0 + 1 - n_kv0) * group : 0, n_live = rows - r0;
    const uint8_t* kt = f.k + layout.row_bytes * static_cast<size_t>(c0);
    const uint8_t* qq = s.qq + f.q_row * static_cast<size_t>(r0);
    float* scores = s.scores + r0 * kTile;
    bool done = false;
    if (layout.k_type == GgmlType::kQ8_0 && f.fast.kq_q8_0 != nullptr) {
      done = f.fast.kq_q8_0(hd, nt, n_live, kt, layout.row_bytes, qq, f.q_row, scores, kTile);
    } else if (f.kq_f16_wide) {
      done = f.fast.kq_f16(hd, nt, n_live, kt, layout.row_bytes, s.qf + r0 * hd, scores, kTile, /*tiny=*/false);
    }
    if (!done && layout.k_type == GgmlType::kIQ4_NL && f.fast.kq_iq4_nl != nullptr && hd <= 512) {
      f.fast.kq_iq4_nl(hd, nt, n_live, kt, layout.row_bytes, qq, f.q_row, scores, kTile);
      done = true;
    }
    if (!done && layout.k_type == GgmlType::kIQ4_NL) {
      // The KernelTable's iq4_nl dot is tinyBLAS's order; one_chunk calls the single-row kernel.
      for (int64_t t = 0; t < nt; ++t) {
        const auto* krow = reinterpret_cast<const BlockIQ4_NL*>(kt + layout.row_bytes * static_cast<size_t>(t));
        for (int64_t r = 0; r < n_live; ++r) {
          scores[r * kTile + t] = vec_dot_iq4_nl_q8_0_row_ref(
              hd, krow, reinterpret_cast<const BlockQ8_0*>(qq + f.q_row * static_cast<size_t>(r)));
        }
      }
      done = true;
    }
    if (!done) f.kk.gemm(hd, nt, n_live, kt, layout.row_bytes, qq, f.q_row, scores, kTile);
    if (!v_f16) {
      for (int64_t t = 0; t < nt; ++t) {
        f.kv.dequant_row(f.v + layout.v_row_bytes * static_cast<size_t>(c0 + t), s.v32 + t * hd, hd);
      }
    }
    for (int64_t r = r0; r < rows; ++r) {
      const int64_t n_cells = std::min(nt, (causal ? n_kv0 + r / group : n_kv0) - c0);  // >= 1 for r >= r0
      const float* sc_row = s.scores + r * kTile;
      if (!v_f16) {
        f.ops.softmax_mad_f32(s.acc32 + r * hd, s.m + r, s.sum + r, sc_row, n_cells, f.scale, s.v32, hd);
        continue;
      }
      fp16_t* acc = s.acc16 + r * hd;
      for (int64_t t = 0; t < n_cells; ++t) {
        const auto* vrow = reinterpret_cast<const fp16_t*>(f.v + layout.v_row_bytes * static_cast<size_t>(c0 + t));
        const float sc = sc_row[t] * f.scale;
        float ms = 1.0f, vs = 1.0f;
        if (sc > s.m[r]) {
          const float m_old = s.m[r];
          s.m[r] = sc;
          ms = std::exp(m_old - sc);
          // The accumulator is still zero while m_old is -inf: scaling it changes nothing.
          if (m_old != -INFINITY) f.ops.scale_f16(acc, ms, hd);
        } else {
          vs = std::exp(sc - s.m[r]);
        }
        f.ops.mad_f16(acc, vrow, vs, hd);
        // ggml's `S = S*ms + vs`, which its build contracts to one FMA.
        s.sum[r] = std::fma(s.sum[r], ms, vs);
      }
    }
  }
}

// Clears the state of `rows` rows.
void reset(const FlashCall& f, int64_t rows) {
  const int64_t n = rows * f.layout.head_dim;
  for (int64_t r = 0; r < rows; ++r) {
    f.s.m[r] = -INFINITY;
    f.s.sum[r] = 0.0f;
  }
  if (f.layout.v_type == GgmlType::kF16) {
    std::fill(f.s.acc16, f.s.acc16 + n, fp16_t{0});
  } else {
    std::fill(f.s.acc32, f.s.acc32 + n, 0.0f);
  }
}

// Head g's accumulator as f32 into o (the f16 one widened).
void accumulator_f32(const FlashCall& f, int64_t g, float* o) {
  const int64_t hd = f.layout.head_dim;
  if (f.layout.v_type == GgmlType::kF16) {
    for (int64_t d = 0; d < hd; ++d) o[d] = fp16_to_fp32(f.s.acc16[g * hd + d]);
  } else {
    std::memcpy(o, f.s.acc32 + g * hd, sizeof(float) * static_cast<size_t>(hd));
  }
}

// llama.cpp's split-KV decode (f16 K and V, one query row, n_kv_padded >= 512): the padded
// range in n_threads equal chunks, each a one_chunk pass, merged in chunk order
// (ggml_flash_attn_ext_reduce_partials; its `a*b + c*d` contracted to fma(a, b, c*d)).
void split_kv(const FlashCall& f, const AttentionBatch& batch, int64_t n_kv, float* out) {
  const int64_t hd = f.layout.head_dim, group = f.group;
  const int64_t chunk = (batch.n_kv_padded + batch.n_threads - 1) / batch.n_threads;
  float* m_final = f.s.m_final;
  float* s_final = f.s.sum_final;
  for (int64_t g = 0; g < group; ++g) {
    m_final[g] = -INFINITY;
    s_final[g] = 0.0f;
  }
  std::fill(out, out + group * hd, 0.0f);
  for (int64_t c = 0; c * chunk < batch.n_kv_padded; ++c) {
    const int64_t c_begin = c * chunk, c_end = std::min(c_begin + chunk, n_kv);
    if (c_begin >= c_end) continue;  // masked cells only: S = 0, which the merge skips
    reset(f, group);
    run_chunk(f, c_begin, c_end, 1, c_end);
    for (int64_t g = 0; g < group; ++g) {
      if (f.s.sum[g] == 0.0f) continue;
      accumulator_f32(f, g, f.s.v32);
      const float m_new = std::fmax(m_final[g], f.s.m[g]);
      const float scale_old = std::exp(m_final[g] - m_new);
      const float scale_new = std::exp(f.s.m[g] - m_new);
      float* o = out + g * hd;
      for (int64_t d = 0; d < hd; ++d) o[d] = std::fma(o[d], scale_old, f.s.v32[d] * scale_new);
      s_final[g] = std::fma(s_final[g], scale_old, f.s.sum[g] * scale_new);
      m_final[g] = m_new;
    }
  }
  for (int64_t g = 0; g < group; ++g) {
    if (s_final[g] != 0.0f) f.ops.scale_f32(out + g * hd, 1.0f / s_final[g], hd);
  }
}

}  // namespace

void flash_attend_group(const AttentionLayout& layout, const AttentionBatch& batch, const float* q,
                        const uint8_t* k_rows, const uint8_t* v_rows, int64_t kv_head, int64_t group, int64_t n_kv,
                        float scale, float* out, uint8_t* scratch, IsaTier tier) {
  DCHECK(layout.flash && !layout.v_transposed && group >= 1 && n_kv >= 1);
  const int64_t hd = layout.head_dim;
  if (tiled_path(layout, batch)) {
    flash_tiled_rows(layout, find_row_ops(tier), q, group * hd, k_rows, v_rows, kv_head, group, 1, n_kv, scale, out,
                     group * hd, scratch);
    return;
  }
  // One token: the token tile of one, except the split-KV decode.
  flash_attend_tokens(layout, batch, q, group * hd, k_rows, v_rows, kv_head, group, 1, n_kv, scale, out, group * hd,
                      scratch, tier);
}

void flash_attend_tokens(const AttentionLayout& layout, const AttentionBatch& batch, const float* q, int64_t q_stride,
                         const uint8_t* k_rows, const uint8_t* v_rows, int64_t kv_head, int64_t group, int64_t n_tok,
                         int64_t n_kv0, float scale, float* out, int64_t out_stride, uint8_t* scratch, IsaTier tier) {
  DCHECK(layout.flash && !layout.v_transposed && group >= 1 && n_kv0 >= 1 && n_tok >= 1 &&
         n_tok <= std::max<int64_t>(1, flash_token_tile(layout, batch, group)));
  if (tiled_path(layout, batch)) {
    flash_tiled_rows(layout, find_row_ops(tier), q, q_stride, k_rows, v_rows, kv_head, group, n_tok, n_kv0, scale, out,
                     out_stride, scratch, batch.causal);
    return;
  }
  const int64_t hd = layout.head_dim, rows = n_tok * group;
  const AttentionKernels& fast = get_kernel_set(tier).attention;
  FlashCall f{layout,
              *find_kernels(layout.k_type, tier),
              *find_kernels(layout.v_type, tier),
              find_row_ops(tier),
              carve(layout, rows, scratch),
              q_row_bytes(layout),
              fast,
              fast.kq_f16 != nullptr && layout.k_type == GgmlType::kF16,
              group,
              k_rows + layout.head_stride * static_cast<size_t>(kv_head),
              v_rows + layout.v_head_stride * static_cast<size_t>(kv_head),
              scale};
  // Row r = i * group + g: token i's head g.
  for (int64_t r = 0; r < rows; ++r) {
    const float* qr = q + (r / group) * q_stride + (r % group) * hd;
    const float* qg = qr;
    if (layout.k_rot > 0) {
      std::memcpy(f.s.qf + r * hd, qg, sizeof(float) * static_cast<size_t>(hd));
      hadamard_rotate(f.s.qf + r * hd, hd, layout.k_rot);
      qg = f.s.qf + r * hd;
    }
    f.kk.quantize_act(qg, f.s.qq + f.q_row * static_cast<size_t>(r), hd);
    if (f.kq_f16_wide) f.ops.round_fp16_row(qr, f.s.qf + r * hd, hd);
  }
  const bool f16_kv = layout.k_type == GgmlType::kF16 && layout.v_type == GgmlType::kF16;
  if (f16_kv && n_tok == 1 && batch.n_tok == 1 && batch.n_kv_padded >= kSplitMinCells) {
    split_kv(f, batch, n_kv0, out);
    return;
  }
  reset(f, rows);
  run_chunk(f, 0, batch.causal ? n_kv0 + n_tok - 1 : n_kv0, n_tok, n_kv0, batch.causal);
  for (int64_t r = 0; r < rows; ++r) {
    float* o = out + (r / group) * out_stride + (r % group) * hd;
    accumulator_f32(f, r, o);
    const float inv = f.s.sum[r] == 0.0f ? 0.0f : 1.0f / f.s.sum[r];
    f.ops.scale_f32(o, inv, hd);
    if (layout.v_rot > 0) hadamard_rotate(o, hd, layout.v_rot);
  }
}

}  // namespace sniper
