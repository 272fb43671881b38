// SPDX-License-Identifier: MIT
// Causal attention of one query head over a KV cache, computed the way the reference engine
// (llama.cpp, no flash attention, f16 cache) computes it, bit for bit:
//   * n_kv is padded: the reference attends over n_kv_padded = min(n_ctx, max(256,
//     pad256(pos0 + n_tok))) cells with a -inf mask beyond each token's position, which fixes
//     the block structure of its softmax and of its V product (masked cells contribute exact
//     zeros; we skip whole zero blocks, never blocks that decide the order);
//   * Q is rounded to f16; KQ uses ggml's f16 dot in tinyBLAS order for batches of >= 2 tokens
//     when head_dim % 16 == 0 (vec_dot order otherwise); scores are scaled, softmaxed with
//     ggml's vectorised expf (kernels/ops.h softmax), rounded to f16;
//   * KQV is a dot over the cached V transposed ([head_dim][n_ctx] per kv head, as llama.cpp
//     stores V without flash attention), in tinyBLAS order for batches (n_kv_padded % 16 == 0,
//     head_dim % 4 == 0), vec_dot order otherwise.
// Without flash attention K may also be bf16 or a block type (llama.cpp's q8_0k-f16v-fa0): Q
// (rotated first when layout.k_rot) is converted to K's vec_dot_type and every score is that
// type's vec_dot; V^T is f16 as above, or bf16 (its vec_dot, weights rounded to bf16).
// With flash attention (layout.flash, V in rows of any cache type) attend_group runs
// kernels/flash_attention.h: llama.cpp's one_chunk online softmax.
// K (and row-layout V) of kv head h, position j is at h * head_stride + j * row_bytes: a cache
// may interleave the heads per position (row_bytes = n_kv_heads * head_bytes, head_stride =
// head_bytes) or keep each head's positions contiguous (row_bytes = head_bytes), which is what
// kv/kv_cache.h does: a head's keys are then one sequential stream.
// Thread-compatible (scratch is per call).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/cpu_features.h"
#include "gguf/format.h"

namespace sniper {

struct AttentionLayout {
  GgmlType k_type = GgmlType::kF16;  // f16, bf16 or a 32-element block type
  GgmlType v_type = GgmlType::kF16;  // f16 or bf16 (transposed); any of K's types in rows (flash)
  bool flash = false;                // flash attention (kernels/flash_attention.h); V in rows
  int64_t head_dim = 0;
  int64_t n_ctx = 0;          // cache cells per layer
  size_t head_bytes = 0;      // one kv head's K at one position
  size_t row_bytes = 0;       // from one cached position to the next within a kv head
  size_t head_stride = 0;     // from one kv head's K to the next kv head's
  size_t v_head_bytes = 0;    // one kv head's V at one position (rows; 2 * head_dim when transposed)
  size_t v_row_bytes = 0;     // row-layout V: from one position to the next within a kv head
  size_t v_head_stride = 0;   // row-layout V: from one kv head to the next
  bool v_transposed = false;  // no flash attention: V is [n_kv_heads][head_dim][n_ctx] per layer
  size_t vt_row_bytes = 0;    // transposed V: from one V^T row to the next (>= 2 * n_ctx; kv/kv_cache.h
                              // pads rows to whole cache lines so the V product's loads stay aligned)
  int64_t k_rot = 0;          // K stored Hadamard-rotated in chunks of k_rot (kernels/hadamard.h); 0 = not
  int64_t v_rot = 0;          // V likewise in chunks of v_rot (flash only); attend_group un-rotates its output
};

// What one forward call of n_tok tokens starting at pos0 shares across its (token, head) items.
struct AttentionBatch {
  int64_t n_kv_padded = 0;  // the reference engine's n_kv for this call
  bool batched = false;     // n_tok >= 2: tinyBLAS order where the reference's shape rules allow
  int64_t n_tok = 1;        // tokens in the call (flash attention: >= 64 with f16 K and V is the tiled path)
  int64_t n_threads = 1;    // the pool's threads (flash attention: split-KV decode chunks, as llama.cpp)
  // false: every token of a call attends to the same n_kv0 cells, later tokens of the call
  // included (the tokens of an image, which see each other: Gemma 4's media chunks, a vision
  // encoder). Default: token i of a call attends to n_kv0 + i cells (causal).
  bool causal = true;
};

// A sliding window over a ring of cells (cell = position % ring size): of the n_kv cells a query
// scores, cell c is attended iff it lies at most `behind - 1` cells before the query's own cell
// `self` or at most `ahead` cells after it, cyclically modulo n_kv (a ring that has wrapped is
// scored whole: n_kv = its size; before it wraps n_kv = self + 1 + ahead). Other cells get a -inf
// score before the softmax, i.e. llama.cpp's SWA mask over its SWA cache, whose cells it fills
// in the same order (model/config.h sliding_ring_slots). behind = 0: no window (every cell).
struct CellWindow {
  int64_t behind = 0;  // the window: the query's own cell and the behind - 1 before it
  int64_t ahead = 0;   // later cells it also sees (a non-causal chunk's later tokens)
  int64_t self = 0;    // the query's cell
};

// Returns the batch parameters for n_tok tokens at positions [pos0, pos0 + n_tok), attended by
// a pool of n_threads threads.
AttentionBatch attention_batch(const AttentionLayout& layout, int64_t pos0, int64_t n_tok, int64_t n_threads = 1);

// Bytes of scratch attend_group needs for `group` query heads and a batch with this n_kv_padded,
// and attend_tokens for up to n_tok_tile tokens.
size_t attention_scratch_bytes(const AttentionLayout& layout, int64_t n_kv_padded, int64_t group,
                               int64_t n_tok_tile = 1);

// Per-worker scratch for attend_group / attend_tokens carved from one buffer: n_threads slices of
// `need` bytes (attention_scratch_bytes), each 64-byte aligned; `buf` grows when short. Returns
// worker 0's slice; worker t's is at that + t * *stride.
uint8_t* thread_scratch_slices(std::vector<uint8_t>& buf, size_t need, size_t n_threads, size_t* stride);

// An upper bound of attention_scratch_bytes (plus the 64-byte stride rounding a caller adds per
// thread) over every cache layout (K/V types, flash or not, any token tile) for heads of
// head_dim, `group` query heads per kv head and caches of at most n_ctx cells: what memory
// planning counts per thread before the cache types are known.
size_t attention_scratch_bound(int64_t head_dim, int64_t group, int64_t n_ctx);

// Tokens one attend_tokens call should take for this batch: > 1 where their query rows share
// each K/V tile (flash attention, calls of >= 2 tokens), else 1.
int64_t attention_token_tile(const AttentionLayout& layout, const AttentionBatch& batch, int64_t group);

// For the `group` consecutive query heads that share kv head kv_head (grouped-query attention):
// out[g * head_dim + d] = (softmax(scale * q_g.K[0..n_kv)) . V[0..n_kv))[d], each head computed
// exactly as the reference engine computes it alone (the order of every sum is per head), while
// K and V are read once for the whole group. q is the query as the model computed it (rotated
// here when layout.k_rot), out the attention output as the model consumes it (un-rotated here
// when layout.v_rot). n_kv (the query's position + 1) <=
// batch.n_kv_padded. q is f32 [group][head_dim]. scratch must hold attention_scratch_bytes(layout,
// batch.n_kv_padded, group) bytes, 64-byte aligned. `tier` picks the kernels (every tier gives
// the same bits; tests compare them). `window` masks cells outside a sliding window (not with
// flash attention: kernels/window_attention.h serves those).
void attend_group(const AttentionLayout& layout, const AttentionBatch& batch, const float* q, const uint8_t* k_rows,
                  const uint8_t* v_rows, int64_t kv_head, int64_t group, int64_t n_kv, float scale, float* out,
                  uint8_t* scratch, IsaTier tier = selected_tier(), const CellWindow& window = {});

// attend_group for n_tok consecutive tokens of the batch (n_tok <= attention_token_tile(...)):
// token i's group query at q + i * q_stride attends to n_kv0 + i cells (n_kv0 cells when
// !batch.causal) and writes out + i * out_stride. The same bits as n_tok attend_group calls. scratch:
// attention_scratch_bytes(layout, batch.n_kv_padded, group, n_tok) bytes, 64-byte aligned.
void attend_tokens(const AttentionLayout& layout, const AttentionBatch& batch, const float* q, int64_t q_stride,
                   const uint8_t* k_rows, const uint8_t* v_rows, int64_t kv_head, int64_t group, int64_t n_tok,
                   int64_t n_kv0, float scale, float* out, int64_t out_stride, uint8_t* scratch,
                   IsaTier tier = selected_tier());

}  // namespace sniper
