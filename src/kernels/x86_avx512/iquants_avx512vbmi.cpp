// SPDX-License-Identifier: MIT
// The AVX-512 tier's i-quant kernels that byte permutes make faster, compiled with AVX512_VBMI
// and patched in only on hosts that have it (kernels/dispatch.cpp), over the tier's own:
// x86/dot_iquants512.h (IQ2_XXS, IQ2_XS and IQ3_XXS find a block's signs with one vpermi2b) and
// x86/dot_iq_repacked512.h (the repacked layouts' level lookups become one vpermb each), and
// x86/matvec_iq_repacked512.h (the one-token matvec of the repacked IQ2 and IQ3 layouts).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: Clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/kernel_registry.h"
#include "kernels/x86/dot_iq_repacked512.h"
#include "kernels/x86/dot_iquants512.h"
#include "kernels/x86/matvec_iq_repacked512.h"

namespace sniper::kernels_internal {

void patch_iquants_avx512vbmi(KernelTable& t) {
  x86::patch_iquants512(t);
  x86::patch_iq_repacked512(t);
  x86::patch_iq_repacked_matvec512(t);
}

}  // namespace sniper::kernels_internal
