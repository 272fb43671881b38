// SPDX-License-Identifier: MIT
// AVX2 kernels for float weights (F32, F16 via F16C, BF16) and the activation quantizers of
// every vec_dot_type (bit-identical to the `_ref` quantizers).
#include "kernels/kernel_registry.h"
#include "kernels/x86/dot_float.h"
#include "kernels/x86/isa_policies.h"
#include "kernels/x86/quantize_acts.h"

namespace sniper::kernels_internal {

namespace {
template <class L>
void set(KernelTable& t) {
  using K = x86::DotFloat<x86::Vec256, L>;
  t.vec_dot = &x86::vec_dot_entry<K>;
  t.gemm = &x86::gemm_entry<K>;
}
}  // namespace

void patch_float_avx2(KernelTable& t) {
  switch (t.type) {
    case GgmlType::kF32: set<x86::LoadF32>(t); break;
    case GgmlType::kF16: set<x86::LoadF16>(t); break;
    case GgmlType::kBF16: set<x86::LoadBF16>(t); break;
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
