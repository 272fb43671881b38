// SPDX-License-Identifier: MIT
// CPU feature detection and the ISA tier used for kernel dispatch. Detection is per target
// architecture (cpu_detect_x86_64.cpp: cpuid + xgetbv; cpu_detect_aarch64.cpp: the kernel's
// AT_HWCAP/AT_HWCAP2 words); the features of the other architecture stay false.
// Detection runs once; the results are immutable afterwards (thread-safe to read).
#pragma once

#include <cstdint>
#include <span>
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

// The instruction-set families kernel tiers belong to. kPortable holds only the ref tier (plain
// C++, the same bits on every architecture).
enum class IsaArch : uint8_t { kPortable = 0, kX86_64 = 1, kAarch64 = 2 };

// A kernel tier: an architecture and a level in it (ref is level 0 and portable; each level above
// needs what the level below needs and more). Tiers of one architecture are ordered by level;
// tiers of two architectures are not comparable, so code asks host_runs(tier) instead.
//   x86-64:  kAvx2 (AVX2, FMA, F16C), kAvx512 (F, BW, VL, DQ, VNNI; and kAvx2's).
//   aarch64: kNeon (AdvSIMD, ARMv8.0), kDotprod (+ SDOT/UDOT, FP16 arithmetic), kI8mm (+ SMMLA).
struct IsaTier {
  IsaArch arch = IsaArch::kPortable;
  uint8_t level = 0;

  static const IsaTier kRef;
  static const IsaTier kAvx2;
  static const IsaTier kAvx512;
  static const IsaTier kNeon;
  static const IsaTier kDotprod;
  static const IsaTier kI8mm;

  friend constexpr bool operator==(const IsaTier&, const IsaTier&) = default;
};
inline constexpr IsaTier IsaTier::kRef{IsaArch::kPortable, 0};
inline constexpr IsaTier IsaTier::kAvx2{IsaArch::kX86_64, 1};
inline constexpr IsaTier IsaTier::kAvx512{IsaArch::kX86_64, 2};
inline constexpr IsaTier IsaTier::kNeon{IsaArch::kAarch64, 1};
inline constexpr IsaTier IsaTier::kDotprod{IsaArch::kAarch64, 2};
inline constexpr IsaTier IsaTier::kI8mm{IsaArch::kAarch64, 3};

// The highest level of any architecture (dispatch keeps one record per level).
inline constexpr int kMaxIsaLevel = 3;

// Returns the host's features. Thread-safe.
const CpuFeatures& cpu_features();

// The target architecture's features that Sniper looks at, in a fixed order, each with whether
// the host has it (`sniper version` prints the present ones). Thread-safe.
std::vector<NamedCpuFeature> cpu_feature_list();

// Returns the best tier the host supports (ref or a tier of the target architecture).
IsaTier host_best_tier();

// Whether the host can run `tier`: ref always; a tier of the target architecture up to
// host_best_tier()'s level; never another architecture's tier.
bool host_runs(IsaTier tier);

// The target architecture's tiers, lowest first, ref first (x86-64: ref avx2 avx512; aarch64: ref
// neon dotprod i8mm), whether or not the host runs them.
std::span<const IsaTier> arch_tiers();

// Returns the tier to use: host_best_tier(), lowered by SNIPER_ISA if set (one of arch_tiers()'
// names). An SNIPER_ISA the host cannot run (above its best, or another architecture's tier) falls
// back to the best with a warning; an unknown value is reported and ignored.
IsaTier selected_tier();

// "ref", "avx2", "avx512", "neon", "dotprod", "i8mm" ("?" for anything else).
const char* isa_tier_name(IsaTier tier);

namespace base_internal {
// Implemented once per target architecture (cpu_detect_<arch>.cpp).
CpuFeatures detect_cpu_features();
std::vector<NamedCpuFeature> named_cpu_features(const CpuFeatures& f);
IsaTier best_tier_for(const CpuFeatures& f);
std::span<const IsaTier> target_tiers();
// Whether a host whose best tier is `best` runs `tier` (host_runs() with the host's best).
bool tier_runs_under(IsaTier tier, IsaTier best);
// The tier a SNIPER_ISA value `request` (nullptr or empty: none) selects among `tiers` on a host
// whose best tier is `best`: the named tier when the host runs it, else `best` with `warning` set
// to a message naming the value and why (a tier the CPU lacks, or not one of `tiers`' names).
IsaTier choose_tier(const char* request, IsaTier best, std::span<const IsaTier> tiers, std::string* warning);
}  // namespace base_internal

}  // namespace sniper
