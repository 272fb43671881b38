// SPDX-License-Identifier: MIT
#include "kernels/flash_attention_tiled.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"

namespace sniper {

namespace {

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

struct TiledScratch {
  float* q;       // [n_rows][hd] the block's queries
  float* scores;  // [n_rows][kFlashTileCells] scores, then probabilities
  float* acc;     // [n_rows][hd] f32 accumulators
  float* m;       // [n_rows] running maximum
  float* sum;     // [n_rows] running sum
  float* ktile;   // [hd][kFlashTileCells] the K tile widened, transposed (cells past the tile 0)
  float* vtile;   // [kFlashTileCells][hd] the V tile widened (cells past the tile 0)
};

TiledScratch carve(int64_t hd, int64_t n_rows, uint8_t* p) {
  const size_t rows = static_cast<size_t>(n_rows), h = static_cast<size_t>(hd), cells = kFlashTileCells;
  TiledScratch s;
  s.q = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * rows * h);
  s.scores = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * rows * cells);
  s.acc = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * rows * h);
  s.m = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * rows);
  s.sum = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * rows);
  s.ktile = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * h * cells);
  s.vtile = reinterpret_cast<float*>(p);
  return s;
}

// The largest of a tile's kFlashTileCells scores (fmax without the libm call: NaN scores never
// win), in kLanes independent chains that the compiler turns into vector maxima, then the chains
// in order. Equal values with other bits are only +0 and -0, and the maximum only enters
// expf(x - max) and expf(old - max), whose arguments then differ at most in the sign of a zero:
// expf(+-0) is 1 in libm and in ggml's vector expf alike, so the bits of the result are the
// one-chain loop's.
float tile_maximum(const float* sc) {
  constexpr int kLanes = 16;
  static_assert(kFlashTileCells % kLanes == 0);
  float m[kLanes];
  for (float& v : m) v = -INFINITY;
  for (int64_t t = 0; t < kFlashTileCells; t += kLanes) {
    for (int j = 0; j < kLanes; ++j) m[j] = sc[t + j] > m[j] ? sc[t + j] : m[j];
  }
  float best = -INFINITY;
  for (float v : m) best = v > best ? v : best;
  return best;
}

}  // namespace

size_t flash_tiled_scratch_bytes(int64_t hd, int64_t n_rows) {
  const size_t rows = static_cast<size_t>(n_rows), h = static_cast<size_t>(hd), cells = kFlashTileCells;
  return 2 * align64(sizeof(float) * rows * h) + align64(sizeof(float) * rows * cells) +
         2 * align64(sizeof(float) * rows) + 2 * align64(sizeof(float) * h * cells);
}

void flash_tiled_rows(const AttentionLayout& layout, const RowOps& ops, const float* q, int64_t q_stride,
                      const uint8_t* k_rows, const uint8_t* v_rows, int64_t kv_head, int64_t group, int64_t n_tok,
                      int64_t n_kv0, float scale, float* out, int64_t out_stride, uint8_t* scratch, bool causal) {
  DCHECK(layout.k_type == GgmlType::kF16 && layout.v_type == GgmlType::kF16 && n_tok >= 1 && n_kv0 >= 1);
  constexpr int64_t kCells = kFlashTileCells;
  const int64_t hd = layout.head_dim, n_rows = n_tok * group;
  const TiledScratch s = carve(hd, n_rows, scratch);
  const uint8_t* k = k_rows + layout.head_stride * static_cast<size_t>(kv_head);
  const uint8_t* v = v_rows + layout.v_head_stride * static_cast<size_t>(kv_head);
  const size_t row_floats = sizeof(float) * static_cast<size_t>(hd);
  for (int64_t i = 0; i < n_tok; ++i) {
    std::memcpy(s.q + i * group * hd, q + i * q_stride, row_floats * static_cast<size_t>(group));
  }
  std::fill(s.acc, s.acc + n_rows * hd, 0.0f);
  std::fill(s.m, s.m + n_rows, -INFINITY);
  std::fill(s.sum, s.sum + n_rows, 0.0f);
  const int64_t n_kv_max = causal ? n_kv0 + n_tok - 1 : n_kv0;
  for (int64_t c0 = 0; c0 < n_kv_max; c0 += kCells) {
    const int64_t nt = std::min(kCells, n_kv_max - c0);
    ops.widen_f16_cols(k + layout.row_bytes * static_cast<size_t>(c0), layout.row_bytes, nt, hd, s.ktile, kCells);
    for (int64_t t = 0; t < nt; ++t) {
      ops.widen_f16(reinterpret_cast<const uint16_t*>(v + layout.v_row_bytes * static_cast<size_t>(c0 + t)),
                    s.vtile + t * hd, hd);
    }
    if (nt < kCells) {  // the last tile: zero cells, so that the products see finite values only
      for (int64_t d = 0; d < hd; ++d) std::fill(s.ktile + d * kCells + nt, s.ktile + (d + 1) * kCells, 0.0f);
      std::fill(s.vtile + nt * hd, s.vtile + kCells * hd, 0.0f);
    }
    // Tokens [0, i0) attend to fewer than c0 + 1 cells: the tile is masked for all their rows.
    const int64_t i0 = causal ? std::max<int64_t>(0, c0 + 1 - n_kv0) : 0, r0 = i0 * group, n_live = n_rows - r0;
    float* sc0 = s.scores + r0 * kCells;
    std::fill(sc0, sc0 + n_live * kCells, 0.0f);
    ops.gemm_f32(sc0, s.q + r0 * hd, s.ktile, n_live, hd, kCells);
    ops.scale_f32(sc0, scale, n_live * kCells);
    for (int64_t r = r0; r < n_rows; ++r) {
      float* sc = s.scores + r * kCells;
      const int64_t valid = std::min(kCells, (causal ? n_kv0 + r / group : n_kv0) - c0);  // >= 1 for r >= r0
      for (int64_t t = valid; t < kCells; ++t) sc[t] = -INFINITY;
      const float tile_max = tile_maximum(sc);
      if (tile_max == -INFINITY) {  // nothing to add: as ggml, the row's weights are zeros
        std::fill(sc, sc + kCells, 0.0f);
        continue;
      }
      const float m_new = tile_max > s.m[r] ? tile_max : s.m[r];  // neither is NaN
      if (m_new > s.m[r]) {
        const float ms = std::exp(s.m[r] - m_new);
        ops.scale_f32(s.acc + r * hd, ms, hd);
        s.sum[r] *= ms;
      }
      s.m[r] = m_new;
      s.sum[r] = static_cast<float>(static_cast<double>(s.sum[r]) + ops.exp_sum(sc, kCells, m_new));
    }
    ops.gemm_f32(s.acc + r0 * hd, sc0, s.vtile, n_live, kCells, hd);
  }
  for (int64_t r = 0; r < n_rows; ++r) {
    float* o = out + (r / group) * out_stride + (r % group) * hd;
    std::memcpy(o, s.acc + r * hd, row_floats);
    ops.scale_f32(o, s.sum[r] == 0.0f ? 0.0f : 1.0f / s.sum[r], hd);
  }
}

}  // namespace sniper
