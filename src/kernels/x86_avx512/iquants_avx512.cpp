// SPDX-License-Identifier: MIT
// AVX-512 tier kernels for the i-quants and ternary formats: x86/dot_iquants.h with the VNNI
// byte dot (vpdpbusd, 256-bit AVX512VL form), then x86/dot_iquants512.h (two chunks per 512-bit
// step) for IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S. Same integers and float steps as the AVX2 tier.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/kernel_registry.h"
#include "kernels/x86/dot_iquants.h"
#include "kernels/x86/dot_iquants512.h"

namespace sniper::kernels_internal {

void patch_iquants_avx512(KernelTable& t) {
  x86::patch_iquants<x86::IqVnni>(t);
  x86::patch_iquants512(t);
}

}  // namespace sniper::kernels_internal
