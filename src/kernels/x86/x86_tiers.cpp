// SPDX-License-Identifier: MIT
// The x86-64 tiers of the dispatch record (kernels/kernel_set.h): what the AVX2 and AVX-512
// tiers patch into the set of the tier below. Compiled with the baseline flags: it only takes the
// addresses of the kernels, which live in the x86_avx2/ and x86_avx512/ translation units.
#include "base/check.h"
#include "kernels/kernel_registry.h"

namespace sniper::kernels_internal {

namespace {

void patch_avx2(KernelSet& s) {
  for (uint32_t slot = 0; slot < kGgmlTypeSlots; ++slot) {
    if (!s.present[slot]) continue;
    KernelTable& t = s.weights[slot];
    patch_q32_avx2(t);
    patch_kquants_avx2(t);
    patch_float_avx2(t);
    patch_iquants_avx2(t);
  }
  s.rows = {silu_mul_avx2,  softmax_avx2,        round_fp16_row_avx2, attention_weights_avx2, mad_f32_avx2,
            scale_f32_avx2, mad_f16_avx2,        scale_f16_avx2,      exp_sum_avx2,           widen_f16_avx2,
            gemm_f32_avx2,  widen_f16_cols_avx2, softmax_mad_f32_avx2};
  s.gelu = {gelu_avx2, geglu_avx2, gelu_quick_avx2, geglu_quick_avx2};
  s.delta_net = delta_net_avx2;
  s.layer_norm = layer_norm_avx2;
  s.attention.kq_iq4_nl = attention_kq_iq4_nl_avx2;
}

void patch_avx512(const CpuFeatures& features, KernelSet& s) {
  for (uint32_t slot = 0; slot < kGgmlTypeSlots; ++slot) {
    if (!s.present[slot]) continue;
    KernelTable& t = s.weights[slot];
    patch_q32_avx512(t);
    patch_kquants_avx512(t);
    patch_float_avx512(t, features);
    patch_iquants_avx512(t);
    if (features.avx512vbmi) patch_iquants_avx512vbmi(t);
  }
  // widen_f16_cols keeps the AVX2 tier's.
  s.rows.silu_mul = silu_mul_avx512;
  s.rows.softmax = softmax_avx512;
  s.rows.round_fp16_row = round_fp16_row_avx512;
  s.rows.attention_weights = attention_weights_avx512;
  s.rows.mad_f32 = mad_f32_avx512;
  s.rows.scale_f32 = scale_f32_avx512;
  s.rows.mad_f16 = mad_f16_avx512;
  s.rows.scale_f16 = scale_f16_avx512;
  s.rows.exp_sum = exp_sum_avx512;
  s.rows.widen_f16 = widen_f16_avx512;
  s.rows.gemm_f32 = gemm_f32_avx512;
  s.rows.softmax_mad_f32 = softmax_mad_f32_avx512;
  s.gelu = {gelu_avx512, geglu_avx512, gelu_quick_avx512, geglu_quick_avx512};
  s.delta_net = delta_net_avx512;
  s.layer_norm = layer_norm_avx512;
  s.attention.kq_q8_0 = attention_kq_q8_0_avx512;
  s.attention.kq_f16 = attention_kq_f16_avx512;
  s.attention.kqv_f16 = attention_kqv_f16_avx512;
}

}  // namespace

void patch_arch_tier(IsaTier tier, const CpuFeatures& features, KernelSet& s) {
  if (tier == IsaTier::kAvx2) {
    patch_avx2(s);
    return;
  }
  if (tier == IsaTier::kAvx512) {
    patch_avx512(features, s);
    return;
  }
  CHECK(false, "no x86-64 patches for tier %s", isa_tier_name(tier));
}

}  // namespace sniper::kernels_internal
