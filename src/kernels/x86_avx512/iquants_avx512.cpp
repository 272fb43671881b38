// SPDX-License-Identifier: MIT
// AVX-512 tier kernels for the i-quants and ternary formats, two chunks per 512-bit step:
// x86/dot_iquants512.h for IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S, x86/dot_ternary512.h for
// IQ1_S, IQ1_M, TQ1_0 and TQ2_0, x86/dot_iq_repacked512.h for the repacked layouts
// (IQ2_RP, IQ3_XXS_RP, IQ3_S_RP). Same integers and float steps as the AVX2 tier (x86/dot_iquants.h).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: Clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/kernel_registry.h"
#include "kernels/x86/dot_iq_repacked512.h"
#include "kernels/x86/dot_iquants512.h"
#include "kernels/x86/dot_ternary512.h"

namespace sniper::kernels_internal {

void patch_iquants_avx512(KernelTable& t) {
  x86::patch_iquants512(t);
  x86::patch_ternary512(t);
  x86::patch_iq_repacked512(t);
}

}  // namespace sniper::kernels_internal
