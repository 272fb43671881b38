// SPDX-License-Identifier: MIT
// Flash attention over a KV cache whose V is stored in rows (AttentionLayout::flash), computed
// the way llama.cpp's CPU backend computes it per query row
// (ggml_compute_forward_flash_attn_ext_f16_one_chunk), bit for bit:
//   * the query (Hadamard-rotated first when layout.k_rot) is converted to K's vec_dot_type
//     (f16 for f16 K, bf16 for bf16, q8_0 for q8_0 / q4_0 / q5_0 / iq4_nl, q8_1 for q4_1 /
//     q5_1) and every score is K's vec_dot with it, times scale;
//   * online softmax one cell at a time in position order: a new maximum M rescales the
//     accumulator and the sum S by expf(M_old - M), otherwise the cell's weight is
//     expf(s - M) (libm expf); S = fma(S, ms, vs) (ggml's S*ms + vs, contracted by its build);
//   * an f16 V accumulates in an f16 accumulator (load, FMA in f32, round to f16 per cell:
//     ggml_vec_mad_f16 / ggml_vec_scale_f16); any other V type is decoded to f32 (to_float)
//     and accumulated with f32 FMAs (ggml_vec_mad_f32);
//   * out = acc * (1 / S), then Hadamard-rotated back when layout.v_rot.
// With f16 K and V llama.cpp picks two other kernels, and so does this file: calls of >= 64
// query rows run its tiled f32 kernel (kernels/flash_attention_tiled.h: unrounded query, f32
// scores and V products by in-order fused multiply-adds, a softmax per 64-cell tile; there the
// tokens of a call share each K/V tile, see flash_attend_tokens), and single-row decode over >= 512 padded
// cells its split-KV loop (the padded range in batch.n_threads chunks, merged in order). The
// result then depends on the thread count, as llama.cpp's does.
// K and V are read once per token tile of query rows sharing a kv head (the group's heads of up
// to 64 / group consecutive tokens of a prompt chunk; one token in decode): scores come a tile of
// 64 cells at a time for all the rows (K's gemm, each output exactly its vec_dot), each V row is
// decoded once for them, and each row then runs its own online softmax over the tile's cells in
// order (RowOps::softmax_mad_f32 for an f32 accumulator), so a row's bits do not depend on
// which rows share its tile. Thread-compatible (scratch is per call).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/cpu_features.h"
#include "kernels/attention.h"

namespace sniper {

// Bytes of scratch flash_attend_group needs for `group` query heads, and flash_attend_tokens for
// up to n_tok_tile tokens of them.
size_t flash_attention_scratch_bytes(const AttentionLayout& layout, int64_t group, int64_t n_tok_tile = 1);

// An upper bound of flash_attention_scratch_bytes over every K/V type and token tile.
size_t flash_attention_scratch_bound(int64_t head_dim, int64_t group);

// Tokens flash_attend_tokens takes at once for this batch: max(1, 64 / group) for calls of >= 2
// tokens (64 query rows, on the tiled f32 path and the per-row path alike); 1 for decode.
int64_t flash_token_tile(const AttentionLayout& layout, const AttentionBatch& batch, int64_t group);

// attend_group's contract (kernels/attention.h) for a layout.flash cache: out[g * head_dim + d]
// for the `group` query heads of kv_head over positions [0, n_kv). scratch: 64-byte aligned,
// flash_attention_scratch_bytes(layout, group) bytes. Every tier gives the same bits.
void flash_attend_group(const AttentionLayout& layout, const AttentionBatch& batch, const float* q,
                        const uint8_t* k_rows, const uint8_t* v_rows, int64_t kv_head, int64_t group, int64_t n_kv,
                        float scale, float* out, uint8_t* scratch, IsaTier tier);

// flash_attend_group for n_tok <= flash_token_tile(...) consecutive tokens of the batch: token i's
// group query at q + i * q_stride attends to n_kv0 + i cells (n_kv0 when !batch.causal), its output goes to
// out + i * out_stride. The same bits as n_tok flash_attend_group calls. scratch:
// flash_attention_scratch_bytes(layout, group, n_tok) bytes, 64-byte aligned.
void flash_attend_tokens(const AttentionLayout& layout, const AttentionBatch& batch, const float* q, int64_t q_stride,
                         const uint8_t* k_rows, const uint8_t* v_rows, int64_t kv_head, int64_t group, int64_t n_tok,
                         int64_t n_kv0, float scale, float* out, int64_t out_stride, uint8_t* scratch, IsaTier tier);

}  // namespace sniper
