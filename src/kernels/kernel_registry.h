// SPDX-License-Identifier: MIT
// Internal to kernels/: how dispatch.cpp assembles a KernelTable. The ref tier fills every entry
// from the scalar `_ref` codecs; each ISA translation unit then overwrites the entries it
// implements for the table's weight type (by t.type) or activation type (by t.vec_dot_type),
// leaving the others as they were (that is the "fill gaps from lower tiers" rule).
// Callers must only invoke an ISA's patch function on a host that supports that ISA.
#pragma once

#include "base/cpu_features.h"
#include "kernels/kernels.h"

namespace sniper::kernels_internal {

// Fills every entry of t for weight type `type` with the reference kernels. Returns false when
// the type has no reference codec (unsupported weight type).
[[nodiscard]] bool fill_ref_kernels(GgmlType type, KernelTable& t);

// AVX2 tier (x86_avx2/).
void patch_q32_avx2(KernelTable& t);      // Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL
void patch_kquants_avx2(KernelTable& t);  // Q2_K..Q6_K IQ4_XS
void patch_float_avx2(KernelTable& t);    // F32 F16 BF16 weights; all activation quantizers

// AVX-512 tier (x86_avx512/). `features` decides optional extensions (AVX512_BF16).
void patch_q32_avx512(KernelTable& t);
void patch_kquants_avx512(KernelTable& t);
void patch_float_avx512(KernelTable& t, const CpuFeatures& features);

// Row operations (kernels/ops.h) with an AVX-512 twin of the scalar reference.
void softmax_avx512(float* x, int64_t n);
void silu_mul_avx512(const float* gate, const float* up, float* out, int64_t n);

}  // namespace sniper::kernels_internal
