// SPDX-License-Identifier: MIT
// Attention for one head (see attention.h for the reference engine's order of operations).
// The products run through the F16 KernelTable (vec_dot order in `gemm`, tinyBLAS order in
// `gemm_batched`), so the selected SIMD tier applies and every tier gives the same bits.
#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/fp16.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"

namespace sniper {

namespace {

constexpr int64_t kKvPad = 256;  // llama_kv_cache::get_n_kv pads to max(n_pad, 256)

size_t align64(size_t n) { return (n + 63) / 64 * 64; }
int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// Length over which a dot of `len_valid` nonzero terms (zeros after) must run so that every
// element falls in the same SIMD block or tail as in a dot over `len_full` elements whose
// main loop covers blocks of `block`: whole zero blocks change nothing and are skipped.
int64_t dot_length(int64_t len_valid, int64_t len_full, int64_t block) {
  const int64_t len = round_up(len_valid, block);
  return len <= len_full - len_full % block ? len : len_full;
}

void attend_head_q8_0(const AttentionLayout& layout, const float* q, const uint8_t* k_rows, const uint8_t* v_rows,
                      int64_t kv_head, int64_t n_kv, float scale, float* out, uint8_t* scratch) {
  const int64_t hd = layout.head_dim;
  float* scores = reinterpret_cast<float*>(scratch);
  uint8_t* q_conv = scratch + align64(sizeof(float) * static_cast<size_t>(layout.n_ctx));
  float* v_tmp = reinterpret_cast<float*>(q_conv + align64(layout.head_bytes));
  const KernelTable& kt = get_kernels(GgmlType::kQ8_0);
  kt.quantize_act(q, q_conv, hd);
  const size_t head_off = layout.head_bytes * static_cast<size_t>(kv_head);
  kt.gemm(hd, n_kv, 1, k_rows + head_off, layout.row_bytes, q_conv, 0, scores, 1);
  for (int64_t j = 0; j < n_kv; ++j) scores[j] *= scale;
  softmax(scores, n_kv);
  for (int64_t d = 0; d < hd; ++d) out[d] = 0.0f;
  for (int64_t j = 0; j < n_kv; ++j) {
    kt.dequant_row(v_rows + layout.row_bytes * static_cast<size_t>(j) + head_off, v_tmp, hd);
    axpy(round_fp16(scores[j]), v_tmp, out, hd);
  }
}

}  // namespace

AttentionBatch attention_batch(const AttentionLayout& layout, int64_t pos0, int64_t n_tok) {
  AttentionBatch b;
  b.n_kv_padded = std::min(layout.n_ctx, std::max(kKvPad, round_up(pos0 + n_tok, kKvPad)));
  b.batched = n_tok >= 2;
  return b;
}

size_t attention_scratch_bytes(const AttentionLayout& layout, int64_t n_kv_padded) {
  // scores [n_kv_padded] f32 + q (f16 or q8_0 head) + softmax in f16 [n_kv_padded] (or a
  // dequantized v row [head_dim] f32 for q8_0)
  const int64_t n = std::max(n_kv_padded, layout.n_ctx);
  return align64(sizeof(float) * static_cast<size_t>(n)) + align64(layout.head_bytes) +
         align64(std::max(sizeof(fp16_t) * static_cast<size_t>(n), sizeof(float) * static_cast<size_t>(layout.head_dim)));
}

void attend_head(const AttentionLayout& layout, const AttentionBatch& batch, const float* q, const uint8_t* k_rows,
                 const uint8_t* v_rows, int64_t kv_head, int64_t n_kv, float scale, float* out, uint8_t* scratch) {
  if (layout.kv_type != GgmlType::kF16) {
    attend_head_q8_0(layout, q, k_rows, v_rows, kv_head, n_kv, scale, out, scratch);
    return;
  }
  DCHECK(layout.v_transposed && n_kv >= 1 && n_kv <= batch.n_kv_padded);
  const int64_t hd = layout.head_dim;
  const int64_t n_full = batch.n_kv_padded;
  float* scores = reinterpret_cast<float*>(scratch);
  auto* q16 = reinterpret_cast<fp16_t*>(scratch + align64(sizeof(float) * static_cast<size_t>(layout.n_ctx)));
  auto* p16 = reinterpret_cast<fp16_t*>(reinterpret_cast<uint8_t*>(q16) + align64(layout.head_bytes));
  const KernelTable& kt = get_kernels(GgmlType::kF16);
  kt.quantize_act(q, q16, hd);

  // KQ: one output per cached position (mul_mat(k, q): m = n_kv_padded, k = head_dim).
  const size_t head_off = layout.head_bytes * static_cast<size_t>(kv_head);
  const bool kq_tiny = batch.batched && hd % 16 == 0 && n_full % 4 == 0;
  (kq_tiny ? kt.gemm_batched : kt.gemm)(hd, n_kv, 1, k_rows + head_off, layout.row_bytes, q16, 0, scores, 1);

  // soft_max_ext: x * scale + mask, over 16-lane blocks of the padded row (masked cells -inf).
  const int64_t n_soft = dot_length(n_kv, n_full, 16);
  for (int64_t j = 0; j < n_kv; ++j) scores[j] *= scale;
  for (int64_t j = n_kv; j < n_soft; ++j) scores[j] = -INFINITY;
  softmax(scores, n_soft);

  // KQV: out[d] = dot(V^T row d, softmax) over the padded length (m = head_dim, k = n_kv_padded).
  const bool kqv_tiny = batch.batched && n_full % 16 == 0 && hd % 4 == 0;
  const int64_t n_dot = kqv_tiny ? dot_length(n_kv, n_full, 16) : dot_length(n_kv, n_full, 64);
  for (int64_t j = 0; j < n_kv; ++j) p16[j] = fp32_to_fp16(scores[j]);
  for (int64_t j = n_kv; j < n_dot; ++j) p16[j] = 0;
  const size_t vt_row_bytes = sizeof(fp16_t) * static_cast<size_t>(layout.n_ctx);
  const uint8_t* vt = v_rows + vt_row_bytes * static_cast<size_t>(hd * kv_head);
  (kqv_tiny ? kt.gemm_batched : kt.gemm)(n_dot, hd, 1, vt, vt_row_bytes, p16, 0, out, 1);
}

}  // namespace sniper
