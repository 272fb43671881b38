// SPDX-License-Identifier: MIT
// AVX2 kernels for the K-quants and IQ4_XS: instantiates x86/dot_kquants.h, and for Q4_K and Q6_K
// batches of 8 or more tokens the row-lane gemms of x86/gemm_q4_k_rows256.h and
// gemm_q6_k_rows256.h (matmul's choice).
#include "kernels/kernel_registry.h"
#include "kernels/x86/dot_kquants.h"
#include "kernels/x86/gemm_q4_k_rows256.h"
#include "kernels/x86/gemm_q6_k_rows256.h"
#include "kernels/x86/isa_policies.h"

namespace sniper::kernels_internal {

namespace {
template <class K>
void set(KernelTable& t) {
  t.vec_dot = &x86::vec_dot_entry<K>;
  t.gemm = &x86::gemm_entry<K>;
}
// The row-lane gemm R (twin: the type's vec_dot ref in quant/) for batches of R::kMinTokens+.
template <class R>
void set_rows(KernelTable& t) {
  t.gemm_rows = &x86::gemm_rows8<R>;
  t.rows_min_tokens = R::kMinTokens;
  t.rows_max_blocks = x86::kRows8MaxSuperBlocks;
  t.rows_group = x86::kRow8Lanes;
}
using Isa = x86::Avx2Int;
}  // namespace

void patch_kquants_avx2(KernelTable& t) {
  switch (t.type) {
    case GgmlType::kQ2_K: set<x86::DotQ2_K<Isa>>(t); break;
    case GgmlType::kQ3_K: set<x86::DotQ3_K<Isa>>(t); break;
    case GgmlType::kQ4_K:
      set<x86::DotQ4_K<Isa>>(t);
      set_rows<x86::Q4KRows8>(t);
      break;
    case GgmlType::kQ5_K: set<x86::DotQ5_K<Isa>>(t); break;
    case GgmlType::kQ6_K:
      set<x86::DotQ6_K<Isa>>(t);
      set_rows<x86::Q6KRows8>(t);
      break;
    case GgmlType::kIQ4_XS: set<x86::DotIQ4_XS<Isa>>(t); break;
    default: break;
  }
}

}  // namespace sniper::kernels_internal
