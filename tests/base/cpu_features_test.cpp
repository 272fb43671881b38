// SPDX-License-Identifier: MIT
// IsaTier as an (architecture, level) pair: names, which tiers a host runs, what SNIPER_ISA
// selects (and the warning it gets when it cannot), and the detection's tier for given features.
#include "base/cpu_features.h"

#include <gtest/gtest.h>

#include <string>

namespace sniper {
namespace {

constexpr IsaTier kEveryTier[] = {IsaTier::kRef,  IsaTier::kAvx2,    IsaTier::kAvx512,
                                  IsaTier::kNeon, IsaTier::kDotprod, IsaTier::kI8mm};

TEST(IsaTier, NamesAreDistinctAndUnknownTiersPrintAsQuestionMark) {
  const std::string names[] = {"ref", "avx2", "avx512", "neon", "dotprod", "i8mm"};
  for (size_t i = 0; i < std::size(kEveryTier); ++i) {
    EXPECT_EQ(isa_tier_name(kEveryTier[i]), names[i]);
    for (size_t j = 0; j < std::size(kEveryTier); ++j) EXPECT_EQ(kEveryTier[i] == kEveryTier[j], i == j);
  }
  EXPECT_STREQ(isa_tier_name(IsaTier{IsaArch::kX86_64, 7}), "?");
  EXPECT_STREQ(isa_tier_name(IsaTier{IsaArch::kPortable, 1}), "?");
}

TEST(IsaTier, TiersRunUnderTheBestOfTheirOwnArchitectureOnly) {
  for (IsaTier best : kEveryTier) EXPECT_TRUE(base_internal::tier_runs_under(IsaTier::kRef, best));
  EXPECT_TRUE(base_internal::tier_runs_under(IsaTier::kAvx2, IsaTier::kAvx512));
  EXPECT_TRUE(base_internal::tier_runs_under(IsaTier::kAvx512, IsaTier::kAvx512));
  EXPECT_FALSE(base_internal::tier_runs_under(IsaTier::kAvx512, IsaTier::kAvx2));
  EXPECT_FALSE(base_internal::tier_runs_under(IsaTier::kAvx2, IsaTier::kRef));
  EXPECT_TRUE(base_internal::tier_runs_under(IsaTier::kNeon, IsaTier::kI8mm));
  EXPECT_TRUE(base_internal::tier_runs_under(IsaTier::kDotprod, IsaTier::kDotprod));
  EXPECT_FALSE(base_internal::tier_runs_under(IsaTier::kI8mm, IsaTier::kDotprod));
  // Levels are not comparable across architectures: avx2 (level 1) never runs on an i8mm host.
  EXPECT_FALSE(base_internal::tier_runs_under(IsaTier::kAvx2, IsaTier::kI8mm));
  EXPECT_FALSE(base_internal::tier_runs_under(IsaTier::kNeon, IsaTier::kAvx512));
}

TEST(IsaTier, SniperIsaSelectsARunnableTierOrWarnsAndKeepsTheBest) {
  constexpr IsaTier x86[] = {IsaTier::kRef, IsaTier::kAvx2, IsaTier::kAvx512};
  constexpr IsaTier arm[] = {IsaTier::kRef, IsaTier::kNeon, IsaTier::kDotprod, IsaTier::kI8mm};
  std::string warning = "stale";
  EXPECT_EQ(base_internal::choose_tier(nullptr, IsaTier::kAvx2, x86, &warning), IsaTier::kAvx2);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(base_internal::choose_tier("", IsaTier::kAvx2, x86, &warning), IsaTier::kAvx2);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(base_internal::choose_tier("ref", IsaTier::kAvx2, x86, &warning), IsaTier::kRef);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(base_internal::choose_tier("avx2", IsaTier::kAvx512, x86, &warning), IsaTier::kAvx2);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(base_internal::choose_tier("avx512", IsaTier::kAvx2, x86, &warning), IsaTier::kAvx2);
  EXPECT_EQ(warning, "SNIPER_ISA=avx512 is not supported by this CPU; using avx2");
  EXPECT_EQ(base_internal::choose_tier("neon", IsaTier::kAvx512, x86, &warning), IsaTier::kAvx512);
  EXPECT_EQ(warning, "SNIPER_ISA=neon is not one of this build's tiers (ref|avx2|avx512); using avx512");
  EXPECT_EQ(base_internal::choose_tier("AVX2", IsaTier::kAvx512, x86, &warning), IsaTier::kAvx512);
  EXPECT_EQ(warning, "SNIPER_ISA=AVX2 is not one of this build's tiers (ref|avx2|avx512); using avx512");

  EXPECT_EQ(base_internal::choose_tier("neon", IsaTier::kDotprod, arm, &warning), IsaTier::kNeon);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(base_internal::choose_tier("dotprod", IsaTier::kDotprod, arm, &warning), IsaTier::kDotprod);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(base_internal::choose_tier("i8mm", IsaTier::kDotprod, arm, &warning), IsaTier::kDotprod);
  EXPECT_EQ(warning, "SNIPER_ISA=i8mm is not supported by this CPU; using dotprod");
  EXPECT_EQ(base_internal::choose_tier("avx2", IsaTier::kNeon, arm, &warning), IsaTier::kNeon);
  EXPECT_EQ(warning, "SNIPER_ISA=avx2 is not one of this build's tiers (ref|neon|dotprod|i8mm); using neon");
}

TEST(IsaTier, TheBuildsTiersStartAtRefAndTheHostRunsAPrefixEndingAtItsBest) {
  const std::span<const IsaTier> tiers = arch_tiers();
  ASSERT_FALSE(tiers.empty());
  EXPECT_EQ(tiers.front(), IsaTier::kRef);
  EXPECT_TRUE(host_runs(IsaTier::kRef));
  EXPECT_TRUE(host_runs(host_best_tier()));
  bool found_best = false;
  for (size_t i = 0; i < tiers.size(); ++i) {
    if (i > 0) {
      EXPECT_EQ(tiers[i].arch, tiers[1].arch);
      EXPECT_EQ(tiers[i].level, i);
    }
    EXPECT_EQ(host_runs(tiers[i]), !found_best) << isa_tier_name(tiers[i]);
    if (tiers[i] == host_best_tier()) found_best = true;
  }
  EXPECT_TRUE(found_best);
  EXPECT_TRUE(host_runs(selected_tier()));
  // No features: every architecture's best is ref; every feature: the build's top tier.
  EXPECT_EQ(base_internal::best_tier_for(CpuFeatures{}), IsaTier::kRef);
  CpuFeatures all;
  for (bool* f : {&all.avx2, &all.fma, &all.f16c, &all.avx512f, &all.avx512bw, &all.avx512vl, &all.avx512dq,
                  &all.avx512vnni, &all.avx512bf16, &all.avx512vbmi, &all.avxvnni, &all.asimd, &all.asimdhp,
                  &all.asimddp, &all.i8mm, &all.bf16, &all.sve, &all.sve2}) {
    *f = true;
  }
  EXPECT_EQ(base_internal::best_tier_for(all), tiers.back());
}

#if defined(__x86_64__)
TEST(IsaTier, X86TiersNeedAllTheirFeatures) {
  CpuFeatures f;
  f.avx2 = f.fma = true;
  EXPECT_EQ(base_internal::best_tier_for(f), IsaTier::kRef);  // no F16C
  f.f16c = true;
  EXPECT_EQ(base_internal::best_tier_for(f), IsaTier::kAvx2);
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = true;
  EXPECT_EQ(base_internal::best_tier_for(f), IsaTier::kAvx2);  // no VNNI
  f.avx512vnni = true;
  EXPECT_EQ(base_internal::best_tier_for(f), IsaTier::kAvx512);
}
#endif

}  // namespace
}  // namespace sniper
