// SPDX-License-Identifier: MIT
// aarch64 feature detection on Linux: the kernel publishes what the CPU and the kernel together
// support in the auxiliary vector (AT_HWCAP, AT_HWCAP2; bit numbers from the kernel's
// arch/arm64/include/uapi/asm/hwcap.h, stable ABI). Reading them needs no privileged MRS access
// and works under qemu-user, which fills them for its -cpu model.
#include <sys/auxv.h>

#include <cstdint>

#include "base/cpu_features.h"

namespace sniper::base_internal {

namespace {

// AT_HWCAP bits.
constexpr uint64_t kHwcapAsimd = uint64_t{1} << 1;
constexpr uint64_t kHwcapAsimdHp = uint64_t{1} << 10;
constexpr uint64_t kHwcapAsimdDp = uint64_t{1} << 20;
constexpr uint64_t kHwcapSve = uint64_t{1} << 22;
// AT_HWCAP2 bits.
constexpr uint64_t kHwcap2Sve2 = uint64_t{1} << 1;
constexpr uint64_t kHwcap2I8mm = uint64_t{1} << 13;
constexpr uint64_t kHwcap2Bf16 = uint64_t{1} << 14;

}  // namespace

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
  const uint64_t hwcap = getauxval(AT_HWCAP);
  const uint64_t hwcap2 = getauxval(AT_HWCAP2);
  f.asimd = (hwcap & kHwcapAsimd) != 0;
  f.asimdhp = (hwcap & kHwcapAsimdHp) != 0;
  f.asimddp = (hwcap & kHwcapAsimdDp) != 0;
  f.sve = (hwcap & kHwcapSve) != 0;
  f.sve2 = (hwcap2 & kHwcap2Sve2) != 0;
  f.i8mm = (hwcap2 & kHwcap2I8mm) != 0;
  f.bf16 = (hwcap2 & kHwcap2Bf16) != 0;
  return f;
}

std::vector<NamedCpuFeature> named_cpu_features(const CpuFeatures& f) {
  return {{"asimd", f.asimd}, {"asimdhp", f.asimdhp}, {"asimddp", f.asimddp}, {"i8mm", f.i8mm},
          {"bf16", f.bf16},   {"sve", f.sve},         {"sve2", f.sve2}};
}

IsaTier best_tier_for(const CpuFeatures& f) {
  // TODO(arm): the neon, dotprod and i8mm tiers #45
  (void)f;
  return IsaTier::kRef;
}

// Only the tiers that have kernels are listed (SNIPER_ISA names the others "not one of this
// build's tiers"); kNeon, kDotprod and kI8mm join with their kernels (arm_tiers.cpp).
std::span<const IsaTier> target_tiers() {
  static constexpr IsaTier kTiers[] = {IsaTier::kRef};
  return kTiers;
}

}  // namespace sniper::base_internal
