// SPDX-License-Identifier: MIT
// The aarch64 tiers of the dispatch record (kernels/kernel_set.h). None is above ref yet: the
// host's best tier on aarch64 is ref (base/cpu_detect_aarch64.cpp), so dispatch.cpp never asks
// for a patch, and a request for one is a programming error.
// TODO(arm): the neon, dotprod and i8mm tiers #45
#include "base/check.h"
#include "kernels/kernel_registry.h"

namespace sniper::kernels_internal {

void patch_arch_tier(IsaTier tier, const CpuFeatures& features, KernelSet& s) {
  (void)features;
  (void)s;
  CHECK(false, "no aarch64 patches for tier %s", isa_tier_name(tier));
}

}  // namespace sniper::kernels_internal
