// SPDX-License-Identifier: MIT
// Element-wise and row operations on f32 activations used by every architecture: RMS norm,
// rotary embeddings, SiLU-gating, softmax, top-k. Semantics follow the reference engine (ggml):
// sums that ggml accumulates in double are accumulated in double here too.
// All functions are pure (no allocation, no global state) and thread-compatible.
#pragma once

#include <cstdint>

#include "base/cpu_features.h"

namespace sniper {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]  (w may be null: no scale). out may alias x.
void rms_norm(const float* x, const float* w, float* out, int64_t n, float eps);

enum class RopeStyle {
  kNorm,  // rotate adjacent pairs (x[2i], x[2i+1])  -- llama
  kNeox,  // rotate (x[i], x[i + n_rot/2])           -- qwen2, qwen3
};

// Precomputed per-position rotation for one head: cos/sin of n_rot/2 angles.
// theta_i = pos * freq_scale * base^(-2i/n_rot) / freq_factors[i], computed by repeated float
// multiplication exactly as ggml does (the rounding of theta is part of the reference numerics).
// A freq factor of 1e30 (Gemma 4's rope_freqs for the pairs past partial_rotary_factor) gives
// theta ~ 1e-26: cos 1, sin ~1e-26, so rope_apply leaves such a pair unchanged up to that
// rounding (bit for bit unless the other element is ~1e26 times larger), as the reference does.
void rope_angles(int64_t pos, int64_t n_rot, float base, float freq_scale, const float* freq_factors, float* cos_out,
                 float* sin_out);

// Multi-section rope angles (ggml_rope_multi) for one token with positions pos = {t, h, w, e}:
// pair i (i < n_rot/2) lies in sector i % (sections[0] + ... + sections[3]) and takes its angle
// from one component. Interleaved (IMRoPE, Qwen3.5's rope.dimension_sections): sector % 3 == 0
// and sector < 3 * sections[0] -> t, % 3 == 1 and < 3 * sections[1] -> h, % 3 == 2 and
// < 3 * sections[2] -> w, else e. Not interleaved (MRoPE): consecutive runs of sections[0] t,
// sections[1] h, sections[2] w, then e. Each component's theta is advanced by the same repeated
// float multiplication as rope_angles, so when every component a pair uses equals pos (a text
// token: t = h = w = pos) the result is rope_angles(pos)'s bits. Sections must
// be >= 0 with a positive sum (CHECKed). The pairs rotate NeoX-style (rope_apply kNeox).
void rope_angles_multi(const int64_t pos[4], const int32_t sections[4], bool interleaved, int64_t n_rot, float base,
                       float freq_scale, const float* freq_factors, float* cos_out, float* sin_out);

// Vision rope angles (ggml_rope_multi with GGML_ROPE_TYPE_VISION: the qwen2vl / qwen3vl ViTs) for one
// token with positions pos = {t, h, w, e}: head_dim / 2 pairs, pair i in sector i % (sum of
// sections), non-interleaved sections (t, then h, w, e), and each component's theta restarts at
// its position where its section begins ("independent sections"); every theta is advanced by
// theta_scale = base^(-2 / n_dims), n_dims = head_dim / 2, each pair. The pairs rotate NeoX-style
// over the whole head (rope_apply kNeox with n_rot = head_dim). head_dim even, sections as
// rope_angles_multi's (CHECKed).
void rope_angles_vision(const int64_t pos[4], const int32_t sections[4], int64_t head_dim, float base, float* cos_out,
                        float* sin_out);

// Rotates the first n_rot dims of each of n_heads heads (head_dim apart) in place.
void rope_apply(float* x, int64_t n_heads, int64_t head_dim, int64_t n_rot, RopeStyle style, const float* cos_t,
                const float* sin_t);

// out[i] = silu(gate[i]) * up[i] for one row of n (ggml's swiglu: 16-wide blocks with its
// vectorised expf, then a libm tail, so call it per row). out may alias gate or up.
void silu_mul(const float* gate, const float* up, float* out, int64_t n);

// In-place softmax over n values (max-subtracted, sum in double).
void softmax(float* x, int64_t n);

// silu_mul and softmax dispatch (once, at first use) to the selected ISA tier's twin; every
// tier computes the same bits as the scalar *_ref functions.
void silu_mul_ref(const float* gate, const float* up, float* out, int64_t n);
void softmax_ref(float* x, int64_t n);

// y[i] = round_fp16(x[i]) (base/fp16.h: to half, nearest even, and back). y may alias x.
void round_fp16_row_ref(const float* x, float* y, int64_t n);

// The weights of one attention row as the reference engine computes them (soft_max_ext, then
// the f16 rounding of the V product's input), in one call: x[i] *= scale for i < n_kv and
// x[i] = -inf for n_kv <= i < n_soft (masked cells); softmax over [0, n_soft); then
// w[i] = round_fp16(x[i]) for i < n_kv and w[i] = 0 for n_kv <= i < n_dot. x is clobbered
// (it holds the softmax afterwards, or is scratch). n_kv <= n_soft, n_kv <= n_dot.
void attention_weights_ref(float* x, int64_t n_kv, int64_t n_soft, float scale, float* w, int64_t n_dot);

struct RowOps {
  void (*silu_mul)(const float* gate, const float* up, float* out, int64_t n);
  void (*softmax)(float* x, int64_t n);
  void (*round_fp16_row)(const float* x, float* y, int64_t n);
  void (*attention_weights)(float* x, int64_t n_kv, int64_t n_soft, float scale, float* w, int64_t n_dot);
  // Flash attention's accumulator steps (ggml vec.h): y[i] = fma(x[i], v, y[i]) (ggml_vec_mad_f32);
  // y[i] *= v (ggml_vec_scale_f32); the f16 forms widen, compute in f32 (one rounding: fma, or
  // the product) and round back to f16 (ggml_vec_mad_f16, ggml_vec_scale_f16).
  void (*mad_f32)(float* y, const float* x, float v, int64_t n);
  void (*scale_f32)(float* y, float v, int64_t n);
  void (*mad_f16)(uint16_t* y, const uint16_t* x, float v, int64_t n);
  void (*scale_f16)(uint16_t* y, float v, int64_t n);
  // x[i] = expf(x[i] - max) in ggml_vec_soft_max_f32's order (ggml's vectorised expf on 16-lane
  // blocks, libm on the tail) and the sum of the results (block sums in double), as softmax.
  double (*exp_sum)(float* x, int64_t n, float max);
  // y[i] = the f16 x[i] as f32 (exact).
  void (*widen_f16)(const uint16_t* x, float* y, int64_t n);
  // Flash attention's tiled products (ggml simd_gemm): C[m x n] += A[m x k] * B[k x n], all
  // row-major and dense (strides k, n, n); c[i * n + j] is one chain of fused multiply-adds
  // fma(a[i * k + kk], b[kk * n + j], acc) for kk = 0, 1, ..., k - 1, started from its value.
  void (*gemm_f32)(float* c, const float* a, const float* b, int64_t m, int64_t k, int64_t n);
  // The tiled path's K tile: out[d * out_stride + t] = the f16 rows[t][d] as f32 for t < n_rows,
  // d < n (rows row_bytes apart). Exact.
  void (*widen_f16_cols)(const uint8_t* rows, size_t row_bytes, int64_t n_rows, int64_t n, float* out,
                         int64_t out_stride);
  // One query row's steps of flash attention's per-row kernel (llama.cpp one_chunk) over n
  // consecutive cells with an f32 accumulator acc[0, hd), running maximum *m and sum *sum. For
  // t = 0 .. n-1 in order: s = scores[t] * scale; if s > *m: ms = expf(*m_old - s) (libm),
  // *m = s, acc[d] *= ms unless the old maximum was -inf (acc is still zero then), vs = 1;
  // otherwise ms = 1, vs = expf(s - *m); acc[d] = fma(v[t * hd + d], vs, acc[d]);
  // *sum = fma(*sum, ms, vs). Exactly the bits of that loop written with scale_f32 / mad_f32.
  void (*softmax_mad_f32)(float* acc, float* m, float* sum, const float* scores, int64_t n, float scale, const float* v,
                          int64_t hd);
};
// The scalar twin of RowOps::softmax_mad_f32 (the definition of its bits).
void softmax_mad_f32_ref(float* acc, float* m, float* sum, const float* scores, int64_t n, float scale, const float* v,
                         int64_t hd);
// The row operations of `tier` (lower tiers fill gaps). CHECKs the host can run the tier.
const RowOps& find_row_ops(IsaTier tier);

// y[i] += a * x[i]
void axpy(float a, const float* x, float* y, int64_t n);

// y[i] += x[i]
void add_inplace(float* y, const float* x, int64_t n);

// Writes the indices of the k largest values of x[0, n) to idx (descending by value, lower
// index first on ties). k <= n. No allocation; O(n*k).
void top_k(const float* x, int64_t n, int64_t k, int32_t* idx);

// Index of the largest value (lowest index on ties).
int32_t argmax(const float* x, int64_t n);

}  // namespace sniper
