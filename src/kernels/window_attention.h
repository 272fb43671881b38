// SPDX-License-Identifier: MIT
// Sliding-window attention over a ring of cached positions (a sliding layer's KV slot: position p
// lives in cell p % layout.n_ctx, kv/kv_cache.h), for the query heads that share one kv head:
//   for each of the n_heads query heads q_g (consecutive, head_dim apart):
//     q' = round_fp16(rotate(q_g))              (rotated when layout.k_rot, as K is stored)
//     s_j = q' . K[p_j]  for the window's positions p_j = first .. pos + ahead, first = max(0, pos - window + 1)
//                        (ahead > 0: the query also sees the chunk's later positions, a chunk that
//                        attends both ways such as an image; ahead = 0 is causal)
//     w   = round_fp16(softmax(scale * s))      (ggml's softmax; the f16 rounding of the V product's input)
//     out_g = unrotate(sum_j w_j V[p_j])        (un-rotated when layout.v_rot)
// Each s_j and each out_g[d] is one chain of fused multiply-adds in position / dimension order
// started from 0 (kernels/ops.h RowOps::gemm_f32's contract), which is what makes the tier
// kernels and the scalar twin agree bit for bit. The reference engine attends over its whole
// cache with a mask instead: the same terms, summed in another order (within the reference
// bounds, not bit-exact).
// The cache may hold K as f16 (widened in tiles) or any type with a dequant_row (bf16, block
// types), V transposed (f16 or bf16 V^T rows, no flash attention) or in rows of any type (flash
// attention's layout). attend_window gathers the window's K (transposed) and V into tiles and
// runs the two products as gemms with `tier`'s row kernels; attend_window_ref is its scalar twin,
// one position and one head at a time, and defines the result.
// Thread-compatible (scratch is per call; kernels never allocate).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/cpu_features.h"
#include "kernels/attention.h"

namespace sniper {

// Floats of scratch attend_window needs for n_heads query heads of head_dim over a window of
// `window` positions (window + ahead with positions ahead): the K^T and V tiles, scores and
// weights, rotated queries and outputs, and one gathered row.
size_t window_attention_scratch_floats(int64_t head_dim, int64_t window, int64_t n_heads);

// out[g * head_dim + d] for g < n_heads: the window attention above of the query q[g * head_dim,
// (g + 1) * head_dim) at position pos, over kv head kv_head of a cache laid out as `layout`
// (k_rows / v_rows: the layer's K and V, kernels/attention.h), whose ring holds layout.n_ctx
// cells (CHECKed: window + ahead <= layout.n_ctx). scratch: window_attention_scratch_floats(
// head_dim, window + ahead, n_heads) floats. Every tier gives the bits of attend_window_ref.
void attend_window(const AttentionLayout& layout, const uint8_t* k_rows, const uint8_t* v_rows, int64_t kv_head,
                   const float* q, int64_t n_heads, int64_t pos, int64_t window, int64_t ahead, float scale, float* out,
                   float* scratch, IsaTier tier = selected_tier());

// The scalar twin of attend_window (the definition of its bits); scratch as attend_window's.
void attend_window_ref(const AttentionLayout& layout, const uint8_t* k_rows, const uint8_t* v_rows, int64_t kv_head,
                       const float* q, int64_t n_heads, int64_t pos, int64_t window, int64_t ahead, float scale,
                       float* out, float* scratch);

}  // namespace sniper
