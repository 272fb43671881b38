// SPDX-License-Identifier: MIT
// llama.cpp's tiled flash attention kernel (ggml_compute_forward_flash_attn_ext_tiled: f16 K and
// V, calls of >= 64 query rows, head_dim a multiple of 16) for a block of query rows that share
// one kv head: the group's query heads of several consecutive tokens. Each 64-cell K tile is
// widened (and transposed) once and each V tile widened once for all the block's rows, and both
// products are f32 gemms (RowOps::gemm_f32) whose every element is the reference's chain of
// fused multiply-adds in order, so a row's result does not depend on which rows share its block:
//   * scores s = fma-chain over d of q[d] * k[d] from 0 (the query unrounded), times scale;
//     cells past the row's position are -inf (its causal mask);
//   * per tile: M = max(M, tile max); if it grew, the accumulator and S are multiplied by
//     expf(M_old - M) (libm); p = expf(s - M) and its sum (RowOps::exp_sum: ggml_vec_soft_max_f32,
//     the sum in double added to S as float); acc += p . V (fma-chain over the tile's cells in
//     order; masked cells add exact zeros);
//   * a tile with no unmasked cell for a row leaves that row unchanged;
//   * out = acc * (1 / S) (0 when S is 0).
// Thread-compatible (scratch is per call).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/attention.h"
#include "kernels/ops.h"

namespace sniper {

// Query rows one block holds at most (and ggml's GGML_FA_TILE_Q / GGML_FA_TILE_KV).
inline constexpr int64_t kFlashTileRows = 64;
inline constexpr int64_t kFlashTileCells = 64;

// Bytes of scratch flash_tiled_rows needs for blocks of up to n_rows rows of head_dim hd.
size_t flash_tiled_scratch_bytes(int64_t hd, int64_t n_rows);

// Rows of n_tok consecutive tokens times `group` heads of kv head kv_head: token i's head g has
// its query at q + i * q_stride + g * head_dim, attends to cells [0, n_kv0 + i) ([0, n_kv0) when
// !causal: no mask, as llama.cpp's vision encoders call it) and writes
// out + i * out_stride + g * head_dim. n_tok * group <= the n_rows the scratch was sized for;
// n_kv0 >= 1. k_rows / v_rows as attend_group's. scratch 64-byte aligned.
void flash_tiled_rows(const AttentionLayout& layout, const RowOps& ops, const float* q, int64_t q_stride,
                      const uint8_t* k_rows, const uint8_t* v_rows, int64_t kv_head, int64_t group, int64_t n_tok,
                      int64_t n_kv0, float scale, float* out, int64_t out_stride, uint8_t* scratch, bool causal = true);

}  // namespace sniper
