// SPDX-License-Identifier: MIT
// AVX-512 tier kernels for the 32-element block formats: the row-lane matvec and gemm of
// x86/gemm_q32_rows512.h (16 rows in the lanes of a zmm, VNNI vpdpbusd), with x86/dot_q32.h's
// 256-bit kernel for vec_dot, for one token of Q8_0 (Q32Lanes::kOneTokenLanes) and for rows
// longer than the row-lane path takes. Every entry gives the ref tier's bits.
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the masked-off source, which trips
// -Wuninitialized/-Wmaybe-uninitialized at -O2+ (a false positive: those lanes are never read).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: Clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/kernel_registry.h"
#include "kernels/x86/dot_q32.h"
#include "kernels/x86/gemm_q32_rows512.h"
#include "kernels/x86/isa_policies.h"

namespace sniper::kernels_internal {

namespace {

template <class L>
void gemm_q32(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
              size_t a_row_bytes, float* out, int64_t out_stride) {
  if (x86::q32_rows_fit(n / 32) && (n_tok >= 2 || L::kOneTokenLanes)) {
    x86::gemm_q32_rows<L>(n, n_rows, n_tok, w, w_row_bytes, a, a_row_bytes, out, out_stride);
  } else {
    x86::gemm_entry<x86::DotQ32<x86::VnniInt, typename L::Base>>(n, n_rows, n_tok, w, w_row_bytes, a, a_row_bytes, out,
                                                                 out_stride);
  }
}

template <class L>
void set(KernelTable& t) {
  t.vec_dot = &x86::vec_dot_entry<x86::DotQ32<x86::VnniInt, typename L::Base>>;
  t.gemm = &gemm_q32<L>;
}

}  // namespace

void patch_q32_avx512(KernelTable& t) {
  switch (t.type) {
    case GgmlType::kQ4_0: set<x86::LanesQ4_0>(t); break;
    case GgmlType::kQ4_1: set<x86::LanesQ4_1>(t); break;
    case GgmlType::kQ5_0: set<x86::LanesQ5_0>(t); break;
    case GgmlType::kQ5_1: set<x86::LanesQ5_1>(t); break;
    case GgmlType::kQ8_0: set<x86::LanesQ8_0>(t); break;
    case GgmlType::kIQ4_NL: set<x86::LanesIQ4_NL>(t); break;
    default: break;
  }
}

}  // namespace sniper::kernels_internal
