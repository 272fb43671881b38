// SPDX-License-Identifier: MIT
// AVX-512 tier kernels for the K-quants and IQ4_XS, each type's one-row kernel behind vec_dot and
// pair tiles (x86/gemm_kquants512.h, x86/gemm_kquants512_low.h) for batches:
//   Q4_K:   one token through x86/matvec_q4_k512.h, the Q4_K row-lane gemm of
//           x86/gemm_q4_k_rows512.h for batches of 8 or more (matmul's choice), x86/dot_kquants512.h
//   Q5_K:   one token through x86/matvec_q5_k512.h
//   Q6_K:   x86/dot_kquants512.h
//   Q2_K, Q3_K, IQ4_XS: x86/dot_kquants512_low.h
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the masked-off source, which trips
// -Wuninitialized/-Wmaybe-uninitialized at -O2+ (a false positive: those lanes are never read).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: Clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/kernel_registry.h"
#include "kernels/x86/dot_kquants512.h"
#include "kernels/x86/dot_kquants512_low.h"
#include "kernels/x86/gemm_kquants512.h"
#include "kernels/x86/gemm_kquants512_low.h"
#include "kernels/x86/gemm_q4_k_rows512.h"
#include "kernels/x86/isa_policies.h"

namespace sniper::kernels_internal {

void patch_kquants_avx512(KernelTable& t) {
  switch (t.type) {
    case GgmlType::kQ2_K:
      t.vec_dot = &x86::vec_dot_entry<x86::DotQ2_K512>;
      t.gemm = &x86::gemm_tiles<x86::TilesQ2_K, x86::DotQ2_K512>;
      break;
    case GgmlType::kQ3_K:
      t.vec_dot = &x86::vec_dot_entry<x86::DotQ3_K512>;
      t.gemm = &x86::gemm_tiles<x86::TilesQ3_K, x86::DotQ3_K512>;
      break;
    case GgmlType::kQ4_K:
      t.vec_dot = &x86::vec_dot_entry<x86::DotQ4_K512>;
      t.gemm = &x86::gemm_tiles<x86::TilesQ4_K, x86::DotQ4_K512, x86::matvec_q4_k>;
      t.gemm_rows = &x86::gemm_rows<x86::Q4KRows>;  // twin: vec_dot_q4_K_q8_K_ref
      t.rows_min_tokens = x86::Q4KRows::kMinTokens;
      t.rows_max_blocks = x86::kRowsMaxSuperBlocks;
      t.rows_group = x86::kRowLanes;
      break;
    case GgmlType::kQ5_K:
      t.vec_dot = &x86::vec_dot_q5_k_512;
      t.gemm = &x86::gemm_tiles<x86::TilesQ5_K, x86::DotQ5_K<x86::VnniInt>, x86::matvec_q5_k>;
      break;
    case GgmlType::kQ6_K:
      t.vec_dot = &x86::vec_dot_entry<x86::DotQ6_K512>;
      t.gemm = &x86::gemm_tiles<x86::TilesQ6_K, x86::DotQ6_K512>;
      break;
    case GgmlType::kIQ4_XS:
      t.vec_dot = &x86::vec_dot_entry<x86::DotIQ4_XS512>;
      t.gemm = &x86::gemm_tiles<x86::TilesIQ4_XS, x86::DotIQ4_XS512>;
      break;
    default: break;
  }
}

}  // namespace sniper::kernels_internal
