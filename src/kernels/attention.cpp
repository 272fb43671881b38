// SPDX-License-Identifier: MIT
// Attention for the query heads of one kv head (see attention.h for the reference engine's order
// of operations). Where the tier's KernelSet has dedicated f16 products (attention.kq_f16 and
// kqv_f16; e.g. the AVX-512 tier's, K rows widened once per tile, sixteen horizontal sums in one
// transposed tree, V^T read in L1-sized chunks) they run; otherwise the products run through
// the F16 KernelTable (vec_dot order in `gemm`, tinyBLAS order in `gemm_batched`, their `_wide`
// forms where the tier has them) with the group's heads as the tokens of one gemm call. A q8_0
// K's scores run through attention.kq_q8_0 where the tier has it (eight heads per pass over K),
// other K types through their KernelTable's gemm. Flash attention is kernels/flash_attention.cpp.
// Every tier gives the same bits.
#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/fp16.h"
#include "kernels/flash_attention.h"
#include "kernels/hadamard.h"
#include "kernels/kernel_registry.h"
#include "kernels/kernel_set.h"
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

size_t query_bytes(const AttentionLayout& layout, int64_t group) {
  return std::max(sizeof(float) * static_cast<size_t>(layout.head_dim), layout.head_bytes) * static_cast<size_t>(group);
}

// Scratch of one call: per head a scores row and a weights row of `stride` floats, and the
// group's query in the kernels' activation form.
struct GroupScratch {
  float* scores;   // [group][stride]
  float* weights;  // [group][stride]: the softmax rounded to f16 (widened, or as halves)
  uint8_t* q;      // [group][head_dim] f32 (wide kernels), f16 or q8_0
  float* state;    // the AVX-512 KQV's parked accumulators (kqv_state_floats(head_dim, group))
  float* qrot;     // [group][head_dim] the rotated query (layout.k_rot)
  int64_t stride;
};

GroupScratch carve(const AttentionLayout& layout, int64_t n_kv_padded, int64_t group, uint8_t* scratch) {
  GroupScratch g;
  g.stride = round_up(std::max<int64_t>(n_kv_padded, 1), 16);
  const size_t row = sizeof(float) * static_cast<size_t>(g.stride * group);
  g.scores = reinterpret_cast<float*>(scratch);
  g.weights = reinterpret_cast<float*>(scratch + align64(row));
  g.q = scratch + 2 * align64(row);
  g.state = reinterpret_cast<float*>(g.q + align64(query_bytes(layout, group)));
  const size_t state_bytes =
      align64(sizeof(float) * static_cast<size_t>(kernels_internal::kqv_state_floats(layout.head_dim, group)));
  g.qrot = g.state + state_bytes / sizeof(float);
  return g;
}

// Scores of the group's heads over K positions [0, n_kv) of a K cache that is not f16: Q
// (rotated when layout.k_rot) converted to K's vec_dot_type, each score that type's vec_dot
// (llama.cpp's mul_mat(K, Q) with a quantized or bf16 K). q8_0 at the AVX-512 tier runs the
// dedicated kernel (eight heads per pass over K), with the same bits.
void scores_converted_k(const AttentionLayout& layout, const float* q, const uint8_t* k_rows, int64_t kv_head,
                        int64_t group, int64_t n_kv, const GroupScratch& s, IsaTier tier) {
  const int64_t hd = layout.head_dim;
  const KernelTable& kt = *find_kernels(layout.k_type, tier);
  const size_t q_row = row_bytes(kt.vec_dot_type, hd);
  for (int64_t g = 0; g < group; ++g) {
    const float* qg = q + g * hd;
    if (layout.k_rot > 0) {
      std::memcpy(s.qrot + g * hd, qg, sizeof(float) * static_cast<size_t>(hd));
      hadamard_rotate(s.qrot + g * hd, hd, layout.k_rot);
      qg = s.qrot + g * hd;
    }
    kt.quantize_act(qg, s.q + q_row * static_cast<size_t>(g), hd);
  }
  const uint8_t* k = k_rows + layout.head_stride * static_cast<size_t>(kv_head);
  const AttentionKernels& fast = get_kernel_set(tier).attention;
  if (layout.k_type == GgmlType::kQ8_0 && fast.kq_q8_0 != nullptr &&
      fast.kq_q8_0(hd, n_kv, group, k, layout.row_bytes, s.q, q_row, s.scores, s.stride)) {
    return;
  }
  kt.gemm(hd, n_kv, group, k, layout.row_bytes, s.q, q_row, s.scores, s.stride);
}

// Sets the scores of cells outside `w` (attention.h CellWindow) to -inf: softmax weight 0, the
// reference's SWA mask.
void mask_window(float* sc, int64_t n_kv, const CellWindow& w) {
  if (w.behind <= 0) return;
  for (int64_t c = 0; c < n_kv; ++c) {
    const int64_t back = ((w.self - c) % n_kv + n_kv) % n_kv;
    if (back < w.behind || n_kv - back <= w.ahead) continue;
    sc[c] = -INFINITY;
  }
}

// ggml_vec_dot_f16's scalar tail over positions [i0, i1) of each V^T row, after its main loop's
// float result (already in out): each product rounded to float, the sum kept in double.
void add_vec_dot_f16_tail(int64_t i0, int64_t i1, int64_t hd, int64_t group, const uint8_t* vt, size_t vt_row_bytes,
                          const float* p, int64_t p_stride, float* out) {
  constexpr int64_t kHeads = 16;  // heads summed side by side: independent chains of adds
  for (int64_t d = 0; d < hd; ++d) {
    const auto* row = reinterpret_cast<const fp16_t*>(vt + vt_row_bytes * static_cast<size_t>(d));
    for (int64_t g0 = 0; g0 < group; g0 += kHeads) {
      const int64_t ng = std::min(kHeads, group - g0);
      double sum[kHeads];
      for (int64_t g = 0; g < ng; ++g) sum[g] = out[(g0 + g) * hd + d];
      for (int64_t i = i0; i < i1; ++i) {
        const float v = fp16_to_fp32(row[i]);
        for (int64_t g = 0; g < ng; ++g) sum[g] += static_cast<double>(v * p[(g0 + g) * p_stride + i]);
      }
      for (int64_t g = 0; g < ng; ++g) out[(g0 + g) * hd + d] = static_cast<float>(sum[g]);
    }
  }
}

// No flash attention with a bf16 V^T (not a reference configuration): scores as above, the
// softmax (kernels/ops.h) rounded to bf16 (bf16's vec_dot_type), and each output that bf16 dot
// over the V^T row.
void attend_group_bf16_v(const AttentionLayout& layout, const float* q, const uint8_t* k_rows, const uint8_t* v_rows,
                         int64_t kv_head, int64_t group, int64_t n_kv, float scale, float* out, const GroupScratch& s,
                         IsaTier tier, const CellWindow& window) {
  const int64_t hd = layout.head_dim;
  if (layout.k_type == GgmlType::kF16) {
    // f16 K: the query rounded to f16, K's vec_dot order.
    const KernelTable& kk = *find_kernels(GgmlType::kF16, tier);
    for (int64_t g = 0; g < group; ++g)
      kk.quantize_act(q + g * hd, s.q + layout.head_bytes * static_cast<size_t>(g), hd);
    kk.gemm(hd, n_kv, group, k_rows + layout.head_stride * static_cast<size_t>(kv_head), layout.row_bytes, s.q,
            layout.head_bytes, s.scores, s.stride);
  } else {
    scores_converted_k(layout, q, k_rows, kv_head, group, n_kv, s, tier);
  }
  const KernelTable& kv = *find_kernels(GgmlType::kBF16, tier);
  const RowOps& ops = find_row_ops(tier);
  const size_t p_row = sizeof(uint16_t) * static_cast<size_t>(s.stride);
  for (int64_t g = 0; g < group; ++g) {
    float* sc = s.scores + g * s.stride;
    mask_window(sc, n_kv, window);
    for (int64_t j = 0; j < n_kv; ++j) sc[j] *= scale;
    ops.softmax(sc, n_kv);
    kv.quantize_act(sc, reinterpret_cast<uint8_t*>(s.weights) + p_row * static_cast<size_t>(g), n_kv);
  }
  const uint8_t* vt = v_rows + layout.vt_row_bytes * static_cast<size_t>(hd * kv_head);
  kv.gemm(n_kv, hd, group, vt, layout.vt_row_bytes, s.weights, p_row, out, hd);
}

}  // namespace

AttentionBatch attention_batch(const AttentionLayout& layout, int64_t pos0, int64_t n_tok, int64_t n_threads) {
  AttentionBatch b;
  b.n_kv_padded = std::min(layout.n_ctx, std::max(kKvPad, round_up(pos0 + n_tok, kKvPad)));
  b.batched = n_tok >= 2;
  b.n_tok = n_tok;
  b.n_threads = std::max<int64_t>(1, n_threads);
  return b;
}

size_t attention_scratch_bytes(const AttentionLayout& layout, int64_t n_kv_padded, int64_t group, int64_t n_tok_tile) {
  // scores and weights [group][stride] f32, the query [group][head_dim] in f32 (covers f16 and
  // q8_0 heads too).
  const int64_t stride = round_up(std::max<int64_t>(n_kv_padded, 1), 16);
  // Plus the AVX-512 KQV's parked accumulators, and the rotated query.
  const size_t state_bytes =
      align64(sizeof(float) * static_cast<size_t>(kernels_internal::kqv_state_floats(layout.head_dim, group)));
  const size_t plain = 2 * align64(sizeof(float) * static_cast<size_t>(stride * group)) +
                       align64(query_bytes(layout, group)) + state_bytes +
                       sizeof(float) * static_cast<size_t>(layout.head_dim * group);
  return layout.flash ? flash_attention_scratch_bytes(layout, group, n_tok_tile) : plain;
}

size_t attention_scratch_bound(int64_t head_dim, int64_t group, int64_t n_ctx) {
  // attention_scratch_bytes' plain layout at the longest padded row (n_kv_padded <= the cache's
  // cells, which round up to kKvPad at most) with the widest query (f32), or the flash one.
  const int64_t stride = round_up(round_up(std::max<int64_t>(n_ctx, 1), kKvPad), 16);
  const size_t g = static_cast<size_t>(group), hd = static_cast<size_t>(head_dim);
  const size_t plain =
      2 * align64(sizeof(float) * static_cast<size_t>(stride) * g) + align64(sizeof(float) * hd * g) +
      align64(sizeof(float) * static_cast<size_t>(kernels_internal::kqv_state_floats(head_dim, group))) +
      sizeof(float) * hd * g;
  return std::max(plain, flash_attention_scratch_bound(head_dim, group)) + 64;
}

int64_t attention_token_tile(const AttentionLayout& layout, const AttentionBatch& batch, int64_t group) {
  return layout.flash ? flash_token_tile(layout, batch, group) : 1;
}

void attend_tokens(const AttentionLayout& layout, const AttentionBatch& batch, const float* q, int64_t q_stride,
                   const uint8_t* k_rows, const uint8_t* v_rows, int64_t kv_head, int64_t group, int64_t n_tok,
                   int64_t n_kv0, float scale, float* out, int64_t out_stride, uint8_t* scratch, IsaTier tier) {
  DCHECK(n_tok >= 1 && n_kv0 >= 1 && (batch.causal ? n_kv0 + n_tok - 1 : n_kv0) <= batch.n_kv_padded);
  if (layout.flash) {
    flash_attend_tokens(layout, batch, q, q_stride, k_rows, v_rows, kv_head, group, n_tok, n_kv0, scale, out,
                        out_stride, scratch, tier);
    return;
  }
  for (int64_t i = 0; i < n_tok; ++i) {
    attend_group(layout, batch, q + i * q_stride, k_rows, v_rows, kv_head, group, batch.causal ? n_kv0 + i : n_kv0,
                 scale, out + i * out_stride, scratch, tier);
  }
}

void attend_group(const AttentionLayout& layout, const AttentionBatch& batch, const float* q, const uint8_t* k_rows,
                  const uint8_t* v_rows, int64_t kv_head, int64_t group, int64_t n_kv, float scale, float* out,
                  uint8_t* scratch, IsaTier tier, const CellWindow& window) {
  DCHECK(group >= 1 && n_kv >= 1 && n_kv <= batch.n_kv_padded);
  CHECK(!layout.flash || window.behind == 0, "attend_group: a cell window with flash attention");
  if (layout.flash) {
    flash_attend_group(layout, batch, q, k_rows, v_rows, kv_head, group, n_kv, scale, out, scratch, tier);
    return;
  }
  const GroupScratch s = carve(layout, batch.n_kv_padded, group, scratch);
  DCHECK(layout.v_transposed && layout.vt_row_bytes >= sizeof(fp16_t) * static_cast<size_t>(layout.n_ctx));
  const int64_t hd = layout.head_dim;
  const int64_t n_full = batch.n_kv_padded;
  const KernelTable& kt = *find_kernels(GgmlType::kF16, tier);
  const RowOps& ops = find_row_ops(tier);
  if (layout.v_type == GgmlType::kBF16) {
    attend_group_bf16_v(layout, q, k_rows, v_rows, kv_head, group, n_kv, scale, out, s, tier, window);
    return;
  }
  // The wide kernels take the f16-rounded query and weights as f32 (widened once here); the
  // ref tier takes them as halves. Same bits either way.
  const bool wide = kt.gemm_wide != nullptr;
  const bool k_f16 = layout.k_type == GgmlType::kF16;
  const size_t q_row = wide ? sizeof(float) * static_cast<size_t>(hd) : layout.head_bytes;
  const AttentionKernels& fast = get_kernel_set(tier).attention;
  if (!k_f16) {
    scores_converted_k(layout, q, k_rows, kv_head, group, n_kv, s, tier);
  } else {
    for (int64_t g = 0; g < group; ++g) {
      if (wide) {
        ops.round_fp16_row(q + g * hd, reinterpret_cast<float*>(s.q) + g * hd, hd);
      } else {
        kt.quantize_act(q + g * hd, s.q + q_row * static_cast<size_t>(g), hd);
      }
    }
    // KQ: one output per cached position and head (mul_mat(k, q): m = n_kv_padded, k = head_dim).
    const size_t head_off = layout.head_stride * static_cast<size_t>(kv_head);
    const bool kq_tiny = batch.batched && hd % 16 == 0 && n_full % 4 == 0;
    if (fast.kq_f16 == nullptr || !fast.kq_f16(hd, n_kv, group, k_rows + head_off, layout.row_bytes,
                                               reinterpret_cast<const float*>(s.q), s.scores, s.stride, kq_tiny)) {
      const auto kq = wide ? (kq_tiny ? kt.gemm_batched_wide : kt.gemm_wide) : (kq_tiny ? kt.gemm_batched : kt.gemm);
      kq(hd, n_kv, group, k_rows + head_off, layout.row_bytes, s.q, q_row, s.scores, s.stride);
    }
  }

  // soft_max_ext: x * scale + mask, over 16-lane blocks of the padded row (masked cells -inf);
  // then the weights rounded to f16 with zeros up to the dot length.
  const bool kqv_tiny = batch.batched && n_full % 16 == 0 && hd % 4 == 0;
  const int64_t n_soft = dot_length(n_kv, n_full, 16);
  const int64_t n_dot = kqv_tiny ? dot_length(n_kv, n_full, 16) : dot_length(n_kv, n_full, 64);
  for (int64_t g = 0; g < group; ++g) {
    float* sc = s.scores + g * s.stride;
    mask_window(sc, n_kv, window);
    if (wide) {
      ops.attention_weights(sc, n_kv, n_soft, scale, s.weights + g * s.stride, n_dot);
    } else {
      for (int64_t j = 0; j < n_kv; ++j) sc[j] *= scale;
      for (int64_t j = n_kv; j < n_soft; ++j) sc[j] = -INFINITY;
      ops.softmax(sc, n_soft);
      auto* p16 = reinterpret_cast<fp16_t*>(s.weights) + g * s.stride;
      kt.quantize_act(sc, p16, n_kv);
      for (int64_t j = n_kv; j < n_dot; ++j) p16[j] = 0;
    }
  }

  // KQV: out[g][d] = dot(V^T row d, weights g) over the padded length (m = head_dim, k = n_kv_padded).
  const size_t vt_row_bytes = layout.vt_row_bytes;
  const uint8_t* vt = v_rows + vt_row_bytes * static_cast<size_t>(hd * kv_head);
  const size_t p_row = (wide ? sizeof(float) : sizeof(fp16_t)) * static_cast<size_t>(s.stride);
  if (fast.kqv_f16 != nullptr) {  // tinyBLAS order: n_dot % 16 == 0 (kqv_tiny)
    // vec_dot order: the kernel runs the main loop (whole steps of 64); the rest is
    // ggml_vec_dot_f16's scalar tail, which only the last positions of a context whose size is
    // not a multiple of 64 reach.
    const int64_t n_main = kqv_tiny ? n_dot : n_dot - n_dot % 64;
    if (n_main > 0) {
      fast.kqv_f16(n_main, hd, group, vt, vt_row_bytes, s.weights, s.stride, out, s.state, kqv_tiny);
    } else {
      std::fill(out, out + group * hd, 0.0f);  // the main loop's (0 + 0) + (0 + 0), reduced
    }
    if (n_main < n_dot) add_vec_dot_f16_tail(n_main, n_dot, hd, group, vt, vt_row_bytes, s.weights, s.stride, out);
    return;
  }
  const auto kqv = wide ? (kqv_tiny ? kt.gemm_batched_wide : kt.gemm_wide) : (kqv_tiny ? kt.gemm_batched : kt.gemm);
  kqv(n_dot, hd, group, vt, vt_row_bytes, s.weights, p_row, out, hd);
}

uint8_t* thread_scratch_slices(std::vector<uint8_t>& buf, size_t need, size_t n_threads, size_t* stride) {
  *stride = (need + 63) / 64 * 64;
  if (buf.size() < *stride * n_threads + 64) buf.resize(*stride * n_threads + 64);
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t{63});
}

}  // namespace sniper
