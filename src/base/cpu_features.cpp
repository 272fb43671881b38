// SPDX-License-Identifier: MIT
// The ISA tier: the host's best (from the architecture's detection, cpu_detect_<arch>.cpp) and
// the one in use (SNIPER_ISA may lower it).
#include "base/cpu_features.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "base/log.h"

namespace sniper {

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = base_internal::detect_cpu_features();
  return features;
}

std::vector<NamedCpuFeature> cpu_feature_list() { return base_internal::named_cpu_features(cpu_features()); }

IsaTier host_best_tier() {
  static const IsaTier best = base_internal::best_tier_for(cpu_features());
  return best;
}

bool host_runs(IsaTier tier) { return base_internal::tier_runs_under(tier, host_best_tier()); }

std::span<const IsaTier> arch_tiers() { return base_internal::target_tiers(); }

namespace {

constexpr struct {
  IsaTier tier;
  const char* name;
} kTierNames[] = {{IsaTier::kRef, "ref"},   {IsaTier::kAvx2, "avx2"},       {IsaTier::kAvx512, "avx512"},
                  {IsaTier::kNeon, "neon"}, {IsaTier::kDotprod, "dotprod"}, {IsaTier::kI8mm, "i8mm"}};

}  // namespace

IsaTier selected_tier() {
  static const IsaTier tier = [] {
    std::string warning;
    const IsaTier t = base_internal::choose_tier(std::getenv("SNIPER_ISA"), host_best_tier(), arch_tiers(), &warning);
    if (!warning.empty()) LOG_WARN("%s", warning.c_str());
    return t;
  }();
  return tier;
}

const char* isa_tier_name(IsaTier tier) {
  for (const auto& n : kTierNames) {
    if (n.tier == tier) return n.name;
  }
  return "?";
}

namespace base_internal {

bool tier_runs_under(IsaTier tier, IsaTier best) {
  if (tier == IsaTier::kRef) return true;
  return tier.arch == best.arch && tier.level <= best.level;
}

IsaTier choose_tier(const char* request, IsaTier best, std::span<const IsaTier> tiers, std::string* warning) {
  warning->clear();
  if (request == nullptr || *request == '\0') return best;
  for (IsaTier t : tiers) {
    if (std::strcmp(request, isa_tier_name(t)) != 0) continue;
    if (tier_runs_under(t, best)) return t;
    *warning = std::string("SNIPER_ISA=") + request + " is not supported by this CPU; using " + isa_tier_name(best);
    return best;
  }
  std::string names;
  for (IsaTier t : tiers) names += std::string(names.empty() ? "" : "|") + isa_tier_name(t);
  *warning = std::string("SNIPER_ISA=") + request + " is not one of this build's tiers (" + names + "); using " +
             isa_tier_name(best);
  return best;
}

}  // namespace base_internal

}  // namespace sniper
