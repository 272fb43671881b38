// SPDX-License-Identifier: MIT
// AVX2 kernels for the 32-element block formats: instantiates x86/dot_q32.h with maddubs/madd.
#include "kernels/kernel_registry.h"
#include "kernels/x86/dot_q32.h"
#include "kernels/x86/isa_policies.h"

namespace sniper::kernels_internal {

namespace {
template <class F>
void set(KernelTable& t) {
  using K = x86::DotQ32<x86::Avx2Int, F>;
  t.vec_dot = &x86::vec_dot_entry<K>;
  t.gemm = &x86::gemm_entry<K>;
}
}  // namespace

void patch_q32_avx2(KernelTable& t) {
  switch (t.type) {
    case GgmlType::kQ4_0: set<x86::FmtQ4_0>(t); break;
    case GgmlType::kQ4_1: set<x86::FmtQ4_1>(t); break;
    case GgmlType::kQ5_0: set<x86::FmtQ5_0>(t); break;
    case GgmlType::kQ5_1: set<x86::FmtQ5_1>(t); break;
    case GgmlType::kQ8_0: set<x86::FmtQ8_0>(t); break;
    case GgmlType::kIQ4_NL: set<x86::FmtIQ4_NL>(t); break;
    default: break;
  }
}

}  // namespace sniper::kernels_internal
