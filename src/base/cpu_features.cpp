// SPDX-License-Identifier: MIT
// cpuid-based feature detection. The OS must have enabled the AVX/AVX-512 register state
// (checked through XGETBV) before a feature counts as present.
#include "base/cpu_features.h"

#include <cpuid.h>

#include <cstdlib>
#include <cstring>

#include "base/log.h"

namespace sniper {

namespace {

uint64_t xgetbv0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

CpuFeatures detect() {
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

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

IsaTier host_best_tier() {
  const CpuFeatures& f = cpu_features();
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni && f.avx2 && f.fma && f.f16c) {
    return IsaTier::kAvx512;
  }
  if (f.avx2 && f.fma && f.f16c) return IsaTier::kAvx2;
  return IsaTier::kRef;
}

IsaTier selected_tier() {
  static const IsaTier tier = [] {
    IsaTier best = host_best_tier();
    const char* env = std::getenv("SNIPER_ISA");
    if (env == nullptr || *env == '\0') return best;
    IsaTier want;
    if (!std::strcmp(env, "ref")) {
      want = IsaTier::kRef;
    } else if (!std::strcmp(env, "avx2")) {
      want = IsaTier::kAvx2;
    } else if (!std::strcmp(env, "avx512")) {
      want = IsaTier::kAvx512;
    } else {
      LOG_WARN("SNIPER_ISA=%s is not one of ref|avx2|avx512; using %s", env, isa_tier_name(best));
      return best;
    }
    if (static_cast<int>(want) > static_cast<int>(best)) {
      LOG_WARN("SNIPER_ISA=%s is not supported by this CPU; using %s", env, isa_tier_name(best));
      return best;
    }
    return want;
  }();
  return tier;
}

const char* isa_tier_name(IsaTier tier) {
  switch (tier) {
    case IsaTier::kRef: return "ref";
    case IsaTier::kAvx2: return "avx2";
    case IsaTier::kAvx512: return "avx512";
  }
  return "?";
}

}  // namespace sniper
