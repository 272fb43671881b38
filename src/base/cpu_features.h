// SPDX-License-Identifier: MIT
// CPU feature detection and the ISA tier used for kernel dispatch. Detection is per target
// architecture (cpu_detect_x86_64.cpp: cpuid + xgetbv; cpu_detect_aarch64.cpp: the kernel's
// AT_HWCAP/AT_HWCAP2 words); the features of the other architecture stay false.
// Detection runs once; the results are immutable afterwards (thread-safe to read).
#pragma once

#include <string>
#include <vector>

namespace sniper {

struct CpuFeatures {
  // x86-64.
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool avx512vbmi = false;  // byte permutes (vpermb): optional kernels of the kAvx512 tier
  bool avxvnni = false;
  // aarch64 (HWCAP names). AdvSIMD (NEON) is part of the ARMv8-A baseline.
  bool asimd = false;    // AdvSIMD
  bool asimdhp = false;  // AdvSIMD half-precision arithmetic (ARMv8.2 FP16)
  bool asimddp = false;  // SDOT/UDOT (ARMv8.2 DotProd)
  bool i8mm = false;     // SMMLA/UMMLA/USDOT (ARMv8.6 I8MM)
  bool bf16 = false;     // BFDOT/BFMMLA (ARMv8.6 BF16)
  bool sve = false;
  bool sve2 = false;
};

// One feature by its conventional name (cpuid / HWCAP spelling) for reports.
struct NamedCpuFeature {
  const char* name;
  bool present;
};

// Kernel tiers, lowest first. kAvx512 requires F, BW, VL, DQ, VNNI; kAvx2 requires AVX2, FMA, F16C.
enum class IsaTier { kRef = 0, kAvx2 = 1, kAvx512 = 2 };

// Returns the host's features. Thread-safe.
const CpuFeatures& cpu_features();

// The target architecture's features that Sniper looks at, in a fixed order, each with whether
// the host has it (`sniper version` prints the present ones). Thread-safe.
std::vector<NamedCpuFeature> cpu_feature_list();

// Returns the best tier the host supports.
IsaTier host_best_tier();

// Returns the tier to use: host_best_tier(), lowered by SNIPER_ISA=ref|avx2|avx512 if set.
// An SNIPER_ISA above what the host supports is clamped with a warning; an unknown value is
// reported and ignored.
IsaTier selected_tier();

const char* isa_tier_name(IsaTier tier);

namespace base_internal {
// Implemented once per target architecture (cpu_detect_<arch>.cpp).
CpuFeatures detect_cpu_features();
std::vector<NamedCpuFeature> named_cpu_features(const CpuFeatures& f);
IsaTier best_tier_for(const CpuFeatures& f);
}  // namespace base_internal

}  // namespace sniper
