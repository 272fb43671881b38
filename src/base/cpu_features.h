// SPDX-License-Identifier: MIT
// CPU feature detection (cpuid + xgetbv) and the ISA tier used for kernel dispatch.
// Detection runs once; the results are immutable afterwards (thread-safe to read).
#pragma once

#include <string>

namespace sniper {

struct CpuFeatures {
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
};

// Kernel tiers, lowest first. kAvx512 requires F, BW, VL, DQ, VNNI; kAvx2 requires AVX2, FMA, F16C.
enum class IsaTier { kRef = 0, kAvx2 = 1, kAvx512 = 2 };

// Returns the host's features. Thread-safe.
const CpuFeatures& cpu_features();

// Returns the best tier the host supports.
IsaTier host_best_tier();

// Returns the tier to use: host_best_tier(), lowered by SNIPER_ISA=ref|avx2|avx512 if set.
// An SNIPER_ISA above what the host supports is clamped with a warning; an unknown value is
// reported and ignored.
IsaTier selected_tier();

const char* isa_tier_name(IsaTier tier);

}  // namespace sniper
