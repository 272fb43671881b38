// SPDX-License-Identifier: MIT
// The ISA tier: the host's best (from the architecture's detection, cpu_detect_<arch>.cpp) and
// the one in use (SNIPER_ISA may lower it).
#include "base/cpu_features.h"

#include <cstdlib>
#include <cstring>

#include "base/log.h"

namespace sniper {

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = base_internal::detect_cpu_features();
  return features;
}

std::vector<NamedCpuFeature> cpu_feature_list() { return base_internal::named_cpu_features(cpu_features()); }

IsaTier host_best_tier() { return base_internal::best_tier_for(cpu_features()); }

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
