// SPDX-License-Identifier: MIT
// Internal to kernels/: how dispatch.cpp assembles the KernelSets (kernels/kernel_set.h). The ref
// tier fills every entry from the scalar `_ref` codecs; each tier above starts from the tier
// below, and its architecture's patch_arch_tier lets each ISA translation unit overwrite the
// entries it implements, for a table's weight type (by t.type) or activation type (by
// t.vec_dot_type), leaving the others as they were (that is the "fill gaps from lower tiers"
// rule). Callers must only invoke an ISA's patch function on a host that supports that ISA.
// Below the dispatch hooks: the x86 kernels those patches name.
#pragma once

#include "base/cpu_features.h"
#include "kernels/delta_net.h"
#include "kernels/kernel_set.h"
#include "kernels/kernels.h"

namespace sniper::kernels_internal {

// Fills every entry of t for weight type `type` with the reference kernels. Returns false when
// the type has no reference codec (unsupported weight type).
[[nodiscard]] bool fill_ref_kernels(GgmlType type, KernelTable& t);

// The ref tier's KernelSet (ref/ref_kernels.cpp): every weight type's reference table, the scalar
// row operations (ref_row_ops(), kernels/ops.cpp), GELU and delta net, no attention fast paths.
// Leaves the activation quantizers to dispatch.cpp.
void fill_ref_set(KernelSet& s);
const RowOps& ref_row_ops();

// The target architecture's tiers above ref, one file per architecture (x86/x86_tiers.cpp,
// arm/arm_tiers.cpp): patches s, a copy of the set of the tier below `tier`, with the entries
// `tier` implements (`features` decides optional extensions). dispatch.cpp calls it only for
// tiers the host runs, lowest first.
void patch_arch_tier(IsaTier tier, const CpuFeatures& features, KernelSet& s);

// AVX2 tier (x86_avx2/).
void patch_q32_avx2(KernelTable& t);      // Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL
void patch_kquants_avx2(KernelTable& t);  // Q2_K..Q6_K IQ4_XS
void patch_float_avx2(KernelTable& t);    // F32 F16 BF16 weights; all activation quantizers
void patch_iquants_avx2(KernelTable& t);  // IQ1_* IQ2_* IQ3_XXS IQ3_S TQ1_0 TQ2_0, the *_RP layouts

// AVX-512 tier (x86_avx512/). `features` decides optional extensions (AVX512_BF16).
void patch_q32_avx512(KernelTable& t);
void patch_kquants_avx512(KernelTable& t);
void patch_float_avx512(KernelTable& t, const CpuFeatures& features);
void patch_iquants_avx512(KernelTable& t);
// AVX-512 tier with AVX512_VBMI (x86_avx512/*_avx512vbmi.cpp), after the tier's own patches.
void patch_iquants_avx512vbmi(KernelTable& t);

// Row operations (kernels/ops.h) with an AVX-512 twin of the scalar reference.
void softmax_avx512(float* x, int64_t n);
void silu_mul_avx512(const float* gate, const float* up, float* out, int64_t n);
void round_fp16_row_avx512(const float* x, float* y, int64_t n);
void attention_weights_avx512(float* x, int64_t n_kv, int64_t n_soft, float scale, float* w, int64_t n_dot);

// Grouped attention products over an f16 cache (x86_avx512/attention_avx512.cpp); bit-identical
// to the F16 table's gemm_wide / gemm_batched_wide (tiny = tinyBLAS order) for the same call.
// kq: scores[g * s_stride + j] = dot(K row j, q + g * hd), j < n_rows, g < n_heads, for head
//     dims 64, 128 and 256; returns false (nothing written) for any other head_dim.
// kqv: out[g * hd + d] = dot(V^T row d, p + g * p_stride) over n elements; needs n % 64 == 0
//     (n % 16 == 0 when tiny) and state: kqv_state_floats(hd, n_heads) floats, 64-byte aligned.
inline constexpr int64_t kqv_state_floats(int64_t hd, int64_t n_heads) { return (n_heads + 3) / 4 * hd * 4 * 4 * 16; }
bool attention_kq_f16_avx512(int64_t hd, int64_t n_rows, int64_t n_heads, const uint8_t* k, size_t k_row_bytes,
                             const float* q, float* scores, int64_t s_stride, bool tiny);
void attention_kqv_f16_avx512(int64_t n, int64_t hd, int64_t n_heads, const uint8_t* vt, size_t vt_row_bytes,
                              const float* p, int64_t p_stride, float* out, float* state, bool tiny);
// Grouped attention KQ over a q8_0 cache (x86_avx512/attention_q8_0_avx512.cpp), bit-identical
// to the Q8_0 table's gemm of the same call: scores[g * s_stride + j] = dot(K row j, q8_0 query
// row g at q + g * q_row_bytes) over n elements, j < n_rows, g < n_heads. Returns false (nothing
// written) unless n % 32 == 0 and n <= 256.
bool attention_kq_q8_0_avx512(int64_t n, int64_t n_rows, int64_t n_heads, const uint8_t* k, size_t k_row_bytes,
                              const uint8_t* q, size_t q_row_bytes, float* scores, int64_t s_stride);
// Flash attention's K scores over an iq4_nl cache (x86_avx2/attention_iq4_nl_avx2.cpp; AVX2 and
// up): scores[g * s_stride + j] = dot(K row j, q8_0 query row g at q + g * q_row_bytes) over n
// elements (n % 32 == 0, n <= 512), each bitwise vec_dot_iq4_nl_q8_0_row_ref.
void attention_kq_iq4_nl_avx2(int64_t n, int64_t n_rows, int64_t n_heads, const uint8_t* k, size_t k_row_bytes,
                              const uint8_t* q, size_t q_row_bytes, float* scores, int64_t s_stride);
// Flash attention's row steps (RowOps::mad_f32 ... gemm_f32; x86/flash_ops.h instantiated in
// x86_avx512/flash_ops_avx512.cpp; exp_sum in x86_avx512/ops_avx512.cpp).
void mad_f32_avx512(float* y, const float* x, float v, int64_t n);
void scale_f32_avx512(float* y, float v, int64_t n);
void mad_f16_avx512(uint16_t* y, const uint16_t* x, float v, int64_t n);
void scale_f16_avx512(uint16_t* y, float v, int64_t n);
double exp_sum_avx512(float* x, int64_t n, float max);
void widen_f16_avx512(const uint16_t* x, float* y, int64_t n);
void gemm_f32_avx512(float* c, const float* a, const float* b, int64_t m, int64_t k, int64_t n);
void softmax_mad_f32_avx512(float* acc, float* m, float* sum, const float* scores, int64_t n, float scale,
                            const float* v, int64_t hd);
// Softmax, SwiGLU, f16 rounding, attention weights and exp-and-sum at the AVX2 tier
// (x86_avx2/ops_avx2.cpp), bit-identical to the scalar twins in kernels/ops.cpp.
void softmax_avx2(float* x, int64_t n);
void silu_mul_avx2(const float* gate, const float* up, float* out, int64_t n);
void round_fp16_row_avx2(const float* x, float* y, int64_t n);
void attention_weights_avx2(float* x, int64_t n_kv, int64_t n_soft, float scale, float* w, int64_t n_dot);
double exp_sum_avx2(float* x, int64_t n, float max);
// The same steps at the AVX2 tier (x86_avx2/flash_ops_avx2.cpp).
void mad_f32_avx2(float* y, const float* x, float v, int64_t n);
void scale_f32_avx2(float* y, float v, int64_t n);
void mad_f16_avx2(uint16_t* y, const uint16_t* x, float v, int64_t n);
void scale_f16_avx2(uint16_t* y, float v, int64_t n);
void widen_f16_avx2(const uint16_t* x, float* y, int64_t n);
void widen_f16_cols_avx2(const uint8_t* rows, size_t row_bytes, int64_t n_rows, int64_t n, float* out,
                         int64_t out_stride);
void gemm_f32_avx2(float* c, const float* a, const float* b, int64_t m, int64_t k, int64_t n);
void softmax_mad_f32_avx2(float* acc, float* m, float* sum, const float* scores, int64_t n, float scale, const float* v,
                          int64_t hd);

// Gated delta net (kernels/delta_net.h). The check CHECKs a call's shape; the AVX2 and AVX-512
// twins run head dims 64, 128, 192 and 256 themselves and hand any other to delta_net_ref.
void check_delta_net_args(const DeltaNetArgs& a, int64_t head_begin, int64_t head_end);
void delta_net_avx2(const DeltaNetArgs& a, int64_t head_begin, int64_t head_end);
void delta_net_avx512(const DeltaNetArgs& a, int64_t head_begin, int64_t head_end);

// GELU (kernels/activations.h): the widened f16 GELU table (65536 floats, built on first use)
// and the AVX2 / AVX-512 twins of gelu_ref / geglu_ref.
const float* gelu_table_f32();
void gelu_avx2(const float* x, float* y, int64_t n);
void geglu_avx2(const float* gate, const float* up, float* out, int64_t n);
void gelu_avx512(const float* x, float* y, int64_t n);
void geglu_avx512(const float* gate, const float* up, float* out, int64_t n);
// GELU-quick (kernels/activations.h): its widened f16 table and the twins of gelu_quick_ref /
// geglu_quick_ref.
const float* gelu_quick_table_f32();
void gelu_quick_avx2(const float* x, float* y, int64_t n);
void geglu_quick_avx2(const float* gate, const float* up, float* out, int64_t n);
void gelu_quick_avx512(const float* x, float* y, int64_t n);
void geglu_quick_avx512(const float* gate, const float* up, float* out, int64_t n);

// LayerNorm (kernels/layer_norm.h): the AVX2 and AVX-512 twins of layer_norm_ref.
void layer_norm_avx2(const float* x, const float* w, const float* b, float* out, int64_t n, float eps);
void layer_norm_avx512(const float* x, const float* w, const float* b, float* out, int64_t n, float eps);

}  // namespace sniper::kernels_internal
