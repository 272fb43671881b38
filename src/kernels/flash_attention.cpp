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

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

struct FlashScratch {
  float* qf;       // [group][head_dim] the rotated query, or the f16-rounded one widened
  uint8_t* qq;     // [group][q_row] the query in K's vec_dot_type
  float* scores;   // [group][kTile]
  float* acc32;    // [group][head_dim] f32 accumulators (non-f16 V)
  fp16_t* acc16;   // [group][head_dim] f16 accumulators (f16 V)
  float* v32;      // [head_dim] one V row decoded
  float* m;        // [group] running maximum
  float* sum;      // [group] running sum
  float* m_final;  // [group] split-KV: merged maximum
  float* sum_final;  // [group] split-KV: merged sum
};

size_t q_row_bytes(const AttentionLayout& layout) {
  return row_bytes(get_kernels(layout.k_type).vec_dot_type, layout.head_dim);
}

FlashScratch carve(const AttentionLayout& layout, int64_t group, uint8_t* p) {
  const size_t hd = static_cast<size_t>(layout.head_dim), g = static_cast<size_t>(group);
  FlashScratch s;
  s.qf = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * hd * g);
  s.qq = p;
  p += align64(q_row_bytes(layout) * g);
  s.scores = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * static_cast<size_t>(kTile) * g);
  s.acc32 = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * hd * g);
  s.acc16 = reinterpret_cast<fp16_t*>(p);
  p += align64(sizeof(fp16_t) * hd * g);
  s.v32 = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * hd);
  s.m = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * g);
  s.sum = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * g);
  s.m_final = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * g);
  s.sum_final = reinterpret_cast<float*>(p);
  return s;
}

bool tiled_path(const AttentionLayout& layout, const AttentionBatch& batch) {
  return layout.k_type == GgmlType::kF16 && layout.v_type == GgmlType::kF16 && batch.n_tok >= kTiledMinRows &&
         layout.head_dim % 16 == 0;
}

}  // namespace

size_t flash_attention_scratch_bytes(const AttentionLayout& layout, int64_t group, int64_t n_tok_tile) {
  const size_t hd = static_cast<size_t>(layout.head_dim), g = static_cast<size_t>(group);
  const size_t one_chunk = align64(sizeof(float) * hd * g) + align64(q_row_bytes(layout) * g) +
                           align64(sizeof(float) * static_cast<size_t>(kTile) * g) + align64(sizeof(float) * hd * g) +
                           align64(sizeof(fp16_t) * hd * g) + align64(sizeof(float) * hd) + 4 * align64(sizeof(float) * g);
  const bool f16_kv = layout.k_type == GgmlType::kF16 && layout.v_type == GgmlType::kF16;
  const size_t tiled = f16_kv ? flash_tiled_scratch_bytes(layout.head_dim, group * std::max<int64_t>(1, n_tok_tile)) : 0;
  return std::max(one_chunk, tiled);
}

size_t flash_attention_scratch_bound(int64_t head_dim, int64_t group) {
  // flash_attention_scratch_bytes with the widest query row (f32: 4 bytes an element; every
  // vec_dot_type row is narrower) and the most tiled rows: a tile is max(1, kFlashTileRows /
  // group) tokens of `group` rows, so group * tile <= max(group, kFlashTileRows).
  const size_t hd = static_cast<size_t>(head_dim), g = static_cast<size_t>(group);
  const size_t one_chunk = align64(sizeof(float) * hd * g) + align64(sizeof(float) * hd * g) +
                           align64(sizeof(float) * static_cast<size_t>(kTile) * g) + align64(sizeof(float) * hd * g) +
                           align64(sizeof(fp16_t) * hd * g) + align64(sizeof(float) * hd) + 4 * align64(sizeof(float) * g);
  return std::max(one_chunk, flash_tiled_scratch_bytes(head_dim, std::max<int64_t>(group, kFlashTileRows)));
}

int64_t flash_token_tile(const AttentionLayout& layout, const AttentionBatch& batch, int64_t group) {
  return tiled_path(layout, batch) ? std::max<int64_t>(1, kFlashTileRows / group) : 1;
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
  bool avx512;
  bool kq_f16_wide;
  int64_t group;
  const uint8_t* k;  // this kv head's K rows
  const uint8_t* v;  // this kv head's V rows
  float scale;
};

// llama.cpp's one_chunk over cells [c_begin, c_end) for every head of the group, continuing the
// state in s.m / s.sum / the accumulators.
void run_chunk(const FlashCall& f, int64_t c_begin, int64_t c_end) {
  const AttentionLayout& layout = f.layout;
  const FlashScratch& s = f.s;
  const int64_t hd = layout.head_dim, group = f.group;
  const bool v_f16 = layout.v_type == GgmlType::kF16;
  for (int64_t c0 = c_begin; c0 < c_end; c0 += kTile) {
    const int64_t nt = std::min(kTile, c_end - c0);
    const uint8_t* kt = f.k + layout.row_bytes * static_cast<size_t>(c0);
    bool done = false;
    if (layout.k_type == GgmlType::kQ8_0 && f.avx512) {
      done = kernels_internal::attention_kq_q8_0_avx512(hd, nt, group, kt, layout.row_bytes, s.qq, f.q_row, s.scores, kTile);
    } else if (f.kq_f16_wide) {
      done = kernels_internal::attention_kq_f16_avx512(hd, nt, group, kt, layout.row_bytes, s.qf, s.scores, kTile,
                                                       /*tiny=*/false);
    }
    if (!done && layout.k_type == GgmlType::kIQ4_NL) {
      // The KernelTable's iq4_nl dot is tinyBLAS's order; one_chunk calls the single-row kernel.
      for (int64_t t = 0; t < nt; ++t) {
        const auto* krow = reinterpret_cast<const BlockIQ4_NL*>(kt + layout.row_bytes * static_cast<size_t>(t));
        for (int64_t g = 0; g < group; ++g) {
          s.scores[g * kTile + t] = vec_dot_iq4_nl_q8_0_row_ref(
              hd, krow, reinterpret_cast<const BlockQ8_0*>(s.qq + f.q_row * static_cast<size_t>(g)));
        }
      }
      done = true;
    }
    if (!done) f.kk.gemm(hd, nt, group, kt, layout.row_bytes, s.qq, f.q_row, s.scores, kTile);
    for (int64_t t = 0; t < nt; ++t) {
      const uint8_t* vrow = f.v + layout.v_row_bytes * static_cast<size_t>(c0 + t);
      if (!v_f16) f.kv.dequant_row(vrow, s.v32, hd);
      for (int64_t g = 0; g < group; ++g) {
        const float sc = s.scores[g * kTile + t] * f.scale;
        float ms = 1.0f, vs = 1.0f;
        if (sc > s.m[g]) {
          const float m_old = s.m[g];
          s.m[g] = sc;
          ms = std::exp(m_old - sc);
          // The accumulator is still zero while m_old is -inf: scaling it changes nothing.
          if (m_old != -INFINITY) {
            if (v_f16) {
              f.ops.scale_f16(s.acc16 + g * hd, ms, hd);
            } else {
              f.ops.scale_f32(s.acc32 + g * hd, ms, hd);
            }
          }
        } else {
          vs = std::exp(sc - s.m[g]);
        }
        if (v_f16) {
          f.ops.mad_f16(s.acc16 + g * hd, reinterpret_cast<const fp16_t*>(vrow), vs, hd);
        } else {
          f.ops.mad_f32(s.acc32 + g * hd, s.v32, vs, hd);
        }
        // ggml's `S = S*ms + vs`, which its build contracts to one FMA.
        s.sum[g] = std::fma(s.sum[g], ms, vs);
      }
    }
  }
}

void reset(const FlashCall& f) {
  const int64_t n = f.group * f.layout.head_dim;
  for (int64_t g = 0; g < f.group; ++g) {
    f.s.m[g] = -INFINITY;
    f.s.sum[g] = 0.0f;
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
    reset(f);
    run_chunk(f, c_begin, c_end);
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
  const bool avx512 = tier >= IsaTier::kAvx512;
  FlashCall f{layout,
              *find_kernels(layout.k_type, tier),
              *find_kernels(layout.v_type, tier),
              find_row_ops(tier),
              carve(layout, group, scratch),
              q_row_bytes(layout),
              avx512,
              avx512 && layout.k_type == GgmlType::kF16,
              group,
              k_rows + layout.head_stride * static_cast<size_t>(kv_head),
              v_rows + layout.v_head_stride * static_cast<size_t>(kv_head),
              scale};
  const bool f16_kv = layout.k_type == GgmlType::kF16 && layout.v_type == GgmlType::kF16;
  if (tiled_path(layout, batch)) {
    flash_tiled_rows(layout, f.ops, q, group * hd, k_rows, v_rows, kv_head, group, 1, n_kv, scale, out, group * hd,
                     scratch);
    return;
  }
  for (int64_t g = 0; g < group; ++g) {
    const float* qg = q + g * hd;
    if (layout.k_rot > 0) {
      std::memcpy(f.s.qf + g * hd, qg, sizeof(float) * static_cast<size_t>(hd));
      hadamard_rotate(f.s.qf + g * hd, hd, layout.k_rot);
      qg = f.s.qf + g * hd;
    }
    f.kk.quantize_act(qg, f.s.qq + f.q_row * static_cast<size_t>(g), hd);
    if (f.kq_f16_wide) f.ops.round_fp16_row(q + g * hd, f.s.qf + g * hd, hd);
  }
  if (f16_kv && batch.n_tok == 1 && batch.n_kv_padded >= kSplitMinCells) {
    split_kv(f, batch, n_kv, out);
    return;
  }
  reset(f);
  run_chunk(f, 0, n_kv);
  for (int64_t g = 0; g < group; ++g) {
    float* o = out + g * hd;
    accumulator_f32(f, g, o);
    const float inv = f.s.sum[g] == 0.0f ? 0.0f : 1.0f / f.s.sum[g];
    f.ops.scale_f32(o, inv, hd);
    if (layout.v_rot > 0) hadamard_rotate(o, hd, layout.v_rot);
  }
}

void flash_attend_tokens(const AttentionLayout& layout, const AttentionBatch& batch, const float* q, int64_t q_stride,
                         const uint8_t* k_rows, const uint8_t* v_rows, int64_t kv_head, int64_t group, int64_t n_tok,
                         int64_t n_kv0, float scale, float* out, int64_t out_stride, uint8_t* scratch, IsaTier tier) {
  DCHECK(layout.flash && n_tok >= 1 && n_tok <= flash_token_tile(layout, batch, group));
  if (tiled_path(layout, batch)) {
    flash_tiled_rows(layout, find_row_ops(tier), q, q_stride, k_rows, v_rows, kv_head, group, n_tok, n_kv0, scale, out,
                     out_stride, scratch);
    return;
  }
  for (int64_t i = 0; i < n_tok; ++i) {
    flash_attend_group(layout, batch, q + i * q_stride, k_rows, v_rows, kv_head, group, n_kv0 + i, scale,
                       out + i * out_stride, scratch, tier);
  }
}

}  // namespace sniper
