// SPDX-License-Identifier: MIT
// x86-64 feature detection through cpuid. The OS must have enabled the AVX/AVX-512 register state
// (checked through XGETBV) before a feature counts as present.
#include <cpuid.h>

#include <cstdint>

#include "base/cpu_features.h"

namespace sniper::base_internal {

namespace {

uint64_t xgetbv0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

}  // namespace

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1;
  const bool avx = (c >> 28) & 1;
  f.fma = (c >> 12) & 1;
  f.f16c = (c >> 29) & 1;
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = xgetbv0();
  const bool ymm_ok = (xcr0 & 0x6) == 0x6;
  const bool zmm_ok = (xcr0 & 0xe6) == 0xe6;
  if (!ymm_ok) {
    f.fma = f.f16c = false;
    return f;
  }
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = (b >> 5) & 1;
    if (zmm_ok) {
      f.avx512f = (b >> 16) & 1;
      f.avx512dq = (b >> 17) & 1;
      f.avx512bw = (b >> 30) & 1;
      f.avx512vl = (b >> 31) & 1;
      f.avx512vnni = (c >> 11) & 1;
      f.avx512vbmi = (c >> 1) & 1;
    }
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
    f.avxvnni = (a >> 4) & 1;
    if (zmm_ok) f.avx512bf16 = (a >> 5) & 1;
  }
  return f;
}

std::vector<NamedCpuFeature> named_cpu_features(const CpuFeatures& f) {
  return {{"avx2", f.avx2},
          {"fma", f.fma},
          {"f16c", f.f16c},
          {"avx512f", f.avx512f},
          {"avx512bw", f.avx512bw},
          {"avx512vl", f.avx512vl},
          {"avx512dq", f.avx512dq},
          {"avx512vnni", f.avx512vnni},
          {"avx512bf16", f.avx512bf16},
          {"avx512vbmi", f.avx512vbmi},
          {"avxvnni", f.avxvnni}};
}

IsaTier best_tier_for(const CpuFeatures& f) {
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni && f.avx2 && f.fma && f.f16c) {
    return IsaTier::kAvx512;
  }
  if (f.avx2 && f.fma && f.f16c) return IsaTier::kAvx2;
  return IsaTier::kRef;
}

std::span<const IsaTier> target_tiers() {
  static constexpr IsaTier kTiers[] = {IsaTier::kRef, IsaTier::kAvx2, IsaTier::kAvx512};
  return kTiers;
}

}  // namespace sniper::base_internal
