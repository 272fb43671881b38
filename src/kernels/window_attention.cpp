// SPDX-License-Identifier: MIT
#include "kernels/window_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/fp16.h"
#include "kernels/hadamard.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"

namespace sniper {

namespace {

// The window of position pos (and the `ahead` positions after it): its first position and length.
struct Window {
  int64_t first = 0;
  int64_t n = 0;
};

Window window_of(const AttentionLayout& layout, int64_t pos, int64_t window, int64_t ahead) {
  CHECK(pos >= 0 && window >= 1 && ahead >= 0, "window attention at position %ld over a window of %ld and %ld ahead",
        static_cast<long>(pos), static_cast<long>(window), static_cast<long>(ahead));
  CHECK(window + ahead <= layout.n_ctx, "the ring holds %ld positions, the window needs %ld",
        static_cast<long>(layout.n_ctx), static_cast<long>(window + ahead));
  Window w;
  w.first = std::max<int64_t>(0, pos - window + 1);
  w.n = pos + ahead - w.first + 1;
  return w;
}

// Value d of position p's V (kv head kv_head) as f32. `row`: scratch for a dequantized V row.
const float* v_row(const AttentionLayout& layout, const uint8_t* v_rows, int64_t kv_head, int64_t cell,
                   const KernelTable& vk, float* row) {
  const uint8_t* v_head = v_rows + layout.v_head_stride * static_cast<size_t>(kv_head);
  vk.dequant_row(v_head + layout.v_row_bytes * static_cast<size_t>(cell), row, layout.head_dim);
  return row;
}

// Element (d, cell) of transposed V (f16 or bf16 V^T rows), exact.
float vt_at(const AttentionLayout& layout, const uint8_t* v_rows, int64_t kv_head, int64_t d, int64_t cell) {
  const uint8_t* vt_row = v_rows + layout.vt_row_bytes * static_cast<size_t>(kv_head * layout.head_dim + d);
  fp16_t v;
  std::memcpy(&v, vt_row + sizeof(fp16_t) * static_cast<size_t>(cell), sizeof(v));
  return layout.v_type == GgmlType::kBF16 ? bf16_to_fp32(v) : fp16_to_fp32(v);
}

}  // namespace

size_t window_attention_scratch_floats(int64_t head_dim, int64_t window, int64_t n_heads) {
  return static_cast<size_t>(2 * head_dim * window + 2 * n_heads * window + 2 * n_heads * head_dim +
                             std::max(window, head_dim));
}

void attend_window(const AttentionLayout& layout, const uint8_t* k_rows, const uint8_t* v_rows, int64_t kv_head,
                   const float* q, int64_t n_heads, int64_t pos, int64_t window, int64_t ahead, float scale, float* out,
                   float* scratch, IsaTier tier) {
  // The window's keys are gathered once from their ring cells into a transposed f32 tile, the
  // heads' scores are one gemm (heads x head_dim times head_dim x n), and the V product is one
  // gemm over the window's V rows in position order.
  const Window win = window_of(layout, pos, window, ahead);
  const int64_t hd = layout.head_dim, cap = layout.n_ctx, W = window + ahead, n = win.n, nh = n_heads;
  const RowOps& ops = find_row_ops(tier);
  const KernelTable* kk = find_kernels(layout.k_type, tier);
  const KernelTable* vk = find_kernels(layout.v_type, tier);
  CHECK(kk != nullptr && vk != nullptr, "window attention: no kernels for the cache types at this tier");
  float* kt_tile = scratch;          // [hd][n] K^T
  float* v_tile = kt_tile + hd * W;  // [n][hd]
  float* scores = v_tile + W * hd;   // [nh][n]
  float* weights = scores + nh * W;  // [nh][n]
  float* qg = weights + nh * W;      // [nh][hd]
  float* acc = qg + nh * hd;         // [nh][hd]
  float* row = acc + nh * hd;        // [max(W, hd)]
  // The window's cells: at most two contiguous runs of the ring.
  const int64_t s0 = win.first % cap, run0 = std::min(n, cap - s0);
  const uint8_t* k_head = k_rows + layout.head_stride * static_cast<size_t>(kv_head);
  if (layout.k_type == GgmlType::kF16) {
    ops.widen_f16_cols(k_head + layout.row_bytes * static_cast<size_t>(s0), layout.row_bytes, run0, hd, kt_tile, n);
    if (run0 < n) ops.widen_f16_cols(k_head, layout.row_bytes, n - run0, hd, kt_tile + run0, n);
  } else {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t cell = (win.first + j) % cap;
      kk->dequant_row(k_head + layout.row_bytes * static_cast<size_t>(cell), row, hd);
      for (int64_t d = 0; d < hd; ++d) kt_tile[d * n + j] = row[d];
    }
  }
  for (int64_t g = 0; g < nh; ++g) {
    float* qr = qg + g * hd;
    std::memcpy(qr, q + g * hd, sizeof(float) * static_cast<size_t>(hd));
    if (layout.k_rot > 0) hadamard_rotate(qr, hd, layout.k_rot);
    ops.round_fp16_row(qr, qr, hd);
  }
  std::fill(scores, scores + nh * n, 0.0f);
  ops.gemm_f32(scores, qg, kt_tile, nh, hd, n);
  for (int64_t g = 0; g < nh; ++g) {
    float* s = scores + g * n;
    if (scale != 1.0f) {
      for (int64_t j = 0; j < n; ++j) s[j] *= scale;
    }
    ops.softmax(s, n);
    ops.round_fp16_row(s, weights + g * n, n);
  }
  // The window's V rows, in position order.
  if (layout.v_transposed) {
    for (int64_t d = 0; d < hd; ++d) {
      if (layout.v_type == GgmlType::kBF16) {
        for (int64_t j = 0; j < n; ++j) row[j] = vt_at(layout, v_rows, kv_head, d, (win.first + j) % cap);
      } else {
        const auto* cells =
            reinterpret_cast<const uint16_t*>(v_rows + layout.vt_row_bytes * static_cast<size_t>(kv_head * hd + d));
        ops.widen_f16(cells + s0, row, run0);
        if (run0 < n) ops.widen_f16(cells, row + run0, n - run0);
      }
      for (int64_t j = 0; j < n; ++j) v_tile[j * hd + d] = row[j];
    }
  } else {
    for (int64_t j = 0; j < n; ++j) v_row(layout, v_rows, kv_head, (win.first + j) % cap, *vk, v_tile + j * hd);
  }
  std::fill(acc, acc + nh * hd, 0.0f);
  ops.gemm_f32(acc, weights, v_tile, nh, n, hd);
  for (int64_t g = 0; g < nh; ++g) {
    float* o = acc + g * hd;
    if (layout.v_rot > 0) hadamard_rotate(o, hd, layout.v_rot);
    std::memcpy(out + g * hd, o, sizeof(float) * static_cast<size_t>(hd));
  }
}

void attend_window_ref(const AttentionLayout& layout, const uint8_t* k_rows, const uint8_t* v_rows, int64_t kv_head,
                       const float* q, int64_t n_heads, int64_t pos, int64_t window, int64_t ahead, float scale,
                       float* out, float* scratch) {
  // One head and one position at a time, straight from the cache cells.
  const Window win = window_of(layout, pos, window, ahead);
  const int64_t hd = layout.head_dim, cap = layout.n_ctx, n = win.n;
  const KernelTable* kk = find_kernels(layout.k_type, IsaTier::kRef);
  const KernelTable* vk = find_kernels(layout.v_type, IsaTier::kRef);
  CHECK(kk != nullptr && vk != nullptr, "window attention: no kernels for the cache types");
  float* qr = scratch;            // [hd]
  float* k = qr + hd;             // [hd]
  float* w = k + hd;              // [n]
  float* v = w + window + ahead;  // [hd]
  const uint8_t* k_head = k_rows + layout.head_stride * static_cast<size_t>(kv_head);
  for (int64_t g = 0; g < n_heads; ++g) {
    std::memcpy(qr, q + g * hd, sizeof(float) * static_cast<size_t>(hd));
    if (layout.k_rot > 0) hadamard_rotate(qr, hd, layout.k_rot);
    round_fp16_row_ref(qr, qr, hd);
    for (int64_t j = 0; j < n; ++j) {
      kk->dequant_row(k_head + layout.row_bytes * static_cast<size_t>((win.first + j) % cap), k, hd);
      float s = 0.0f;
      for (int64_t d = 0; d < hd; ++d) s = std::fma(qr[d], k[d], s);
      w[j] = s * scale;
    }
    softmax_ref(w, n);
    round_fp16_row_ref(w, w, n);
    float* o = out + g * hd;
    std::fill(o, o + hd, 0.0f);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t cell = (win.first + j) % cap;
      if (layout.v_transposed) {
        for (int64_t d = 0; d < hd; ++d) v[d] = vt_at(layout, v_rows, kv_head, d, cell);
      } else {
        v_row(layout, v_rows, kv_head, cell, *vk, v);
      }
      for (int64_t d = 0; d < hd; ++d) o[d] = std::fma(w[j], v[d], o[d]);
    }
    if (layout.v_rot > 0) hadamard_rotate(o, hd, layout.v_rot);
  }
}

}  // namespace sniper
