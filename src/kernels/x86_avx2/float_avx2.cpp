// SPDX-License-Identifier: MIT
// AVX2 kernels for float weights (F32, F16 via F16C, BF16; 16-lane orders as two __m256) and the activation quantizers
// of every vec_dot_type (bit-identical to the `_ref` quantizers).
#include "kernels/kernel_registry.h"
#include "kernels/x86/dot_float.h"
#include "kernels/x86/gemm_float_block.h"
#include "kernels/x86/isa_policies.h"
#include "kernels/x86/quantize_acts.h"

namespace sniper::kernels_internal {

namespace {
template <class KVec, class KTiny>
void set(KernelTable& t) {
  t.vec_dot = &x86::vec_dot_entry<KVec>;
  t.gemm = &x86::gemm_entry<KVec>;
  t.gemm_batched = &x86::gemm_entry<KTiny>;
}
using V = x86::Vec16x2;
}  // namespace

void patch_float_avx2(KernelTable& t) {
  switch (t.type) {
    case GgmlType::kF32:
      set<x86::DotFloatVec<V, x86::LoadF32>, x86::DotFloatTiny<V, x86::LoadF32>>(t);
      // Register blocks of 2 rows x 2 tokens (x86/gemm_float_block.h): DotFloatTiny's bits.
      t.gemm_batched = &x86::gemm_tiny_block<V, x86::LoadF32, x86::LoadF32, 2, 2>;
      break;
    case GgmlType::kF16:
      set<x86::DotFloatVec<V, x86::LoadF16>, x86::DotFloatTiny<V, x86::LoadF16>>(t);
      t.gemm_batched = &x86::gemm_tiny_block<V, x86::LoadF16, x86::LoadF16, 2, 2>;
      t.gemm_wide = &x86::gemm_entry<x86::DotFloatVec<V, x86::LoadF16, x86::LoadF32>>;
      t.gemm_batched_wide = &x86::gemm_tiny_block<V, x86::LoadF16, x86::LoadF32, 2, 2>;
      break;
    case GgmlType::kBF16: set<x86::DotBF16Vec<V>, x86::DotBF16Tiny<V>>(t); break;
    default: break;
  }
  switch (t.vec_dot_type) {
    case GgmlType::kF32: t.quantize_act = &x86::quantize_f32; break;
    case GgmlType::kF16: t.quantize_act = &x86::quantize_f16; break;
    case GgmlType::kBF16: t.quantize_act = &x86::quantize_bf16; break;
    case GgmlType::kQ8_0: t.quantize_act = &x86::quantize_q8_0; break;
    case GgmlType::kQ8_1: t.quantize_act = &x86::quantize_q8_1; break;
    case GgmlType::kQ8_K: t.quantize_act = &x86::quantize_q8_K; break;
    default: break;
  }
}

}  // namespace sniper::kernels_internal
