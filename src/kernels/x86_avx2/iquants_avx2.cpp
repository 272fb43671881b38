// SPDX-License-Identifier: MIT
// AVX2 kernels for the i-quants and ternary formats (x86/dot_iquants.h) and for the repacked
// i-quant layouts (x86/dot_iq_repacked.h; the IQ3 layouts' one-token matvec in
// x86/matvec_iq_repacked.h).
#include "kernels/kernel_registry.h"
#include "kernels/x86/dot_iq_repacked.h"
#include "kernels/x86/dot_iquants.h"
#include "kernels/x86/matvec_iq_repacked.h"

namespace sniper::kernels_internal {

void patch_iquants_avx2(KernelTable& t) {
  x86::patch_iquants<x86::IqAvx2>(t);
  x86::patch_iq_repacked(t);
  x86::patch_iq3_repacked_matvec(t);
}

}  // namespace sniper::kernels_internal
