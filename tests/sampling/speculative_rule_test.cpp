// SPDX-License-Identifier: MIT
// The speculative-sampling rule keeps the output distributed as the target's: chi-square tests
// of the emitted token over many seeded trials, for draft distributions q close to, far from and
// disjoint from p, and for n-gram point masses. A deliberately wrong rule (on rejection, draw from
// p instead of norm(max(0, p - q))) fails the same test, so the test can fail.
// Significance: the critical values are chi-square quantiles at 1e-9 (a false failure is
// practically impossible; the draws are seeded, so the outcome is fixed anyway).
#include "sampling/speculative_rule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

namespace sniper {
namespace {

constexpr int32_t kVocab = 8;
constexpr int kTrials = 100000;
// Upper 1e-9 quantile of chi-square with kVocab - 1 = 7 degrees of freedom (bins of p > 0 only:
// the tests keep p > 0 everywhere).
constexpr double kCritical7 = 55.87;

std::vector<float> normalized(std::vector<float> w) {
  const float sum = std::accumulate(w.begin(), w.end(), 0.0f);
  for (float& x : w) x /= sum;
  return w;
}

double chi_square(const std::vector<int64_t>& counts, const std::vector<float>& p, int n) {
  double chi = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double expected = static_cast<double>(p[i]) * n;
    const double d = static_cast<double>(counts[i]) - expected;
    chi += d * d / expected;
  }
  return chi;
}

// The wrong rule the test must catch: accept with min(1, p/q), but on rejection draw from p.
SpecDecision wrong_rule(const float* p, const float* q, int32_t draft, Sampler& s) {
  const double qd = q != nullptr ? q[draft] : 1.0;
  if (s.uniform() * qd < p[draft]) return {draft, true};
  return {s.sample_from(p, kVocab), false};
}

// Emitted-token counts over kTrials: draft d ~ q (or d = point), then the rule.
template <typename Rule>
std::vector<int64_t> run_trials(const std::vector<float>& p, const std::vector<float>* q, int32_t point, Rule rule) {
  SamplerConfig cfg;
  cfg.seed = 1234;
  Sampler rule_rng(cfg);
  cfg.seed = 99;
  Sampler draft_rng(cfg);
  std::vector<int64_t> counts(kVocab, 0);
  for (int t = 0; t < kTrials; ++t) {
    const int32_t d = q != nullptr ? draft_rng.sample_from(q->data(), kVocab) : point;
    const SpecDecision dec = rule(p.data(), q != nullptr ? q->data() : nullptr, d, rule_rng);
    ++counts[static_cast<size_t>(dec.token)];
  }
  return counts;
}

struct Case {
  const char* what;
  std::vector<float> p;
  std::vector<float> q;  // empty: a point mass on `point`
  int32_t point = 0;
};

std::vector<Case> cases() {
  return {
      {"q close to p", normalized({8, 4, 2, 1, 1, 1, 2, 1}), normalized({7, 5, 2, 1, 1, 2, 1, 1})},
      {"q far from p", normalized({1, 1, 1, 1, 2, 4, 8, 16}), normalized({16, 8, 4, 2, 1, 1, 1, 1})},
      {"q mostly off p's mass", normalized({30, 30, 1, 1, 1, 1, 1, 1}), normalized({0, 0, 1, 1, 1, 1, 40, 40})},
      {"n-gram point mass on a likely token", normalized({8, 4, 2, 1, 1, 1, 2, 1}), {}, 0},
      {"n-gram point mass on an unlikely token", normalized({8, 4, 2, 1, 1, 1, 2, 1}), {}, 5},
  };
}

TEST(SpeculativeRule, OutputIsDistributedAsTheTarget) {
  std::vector<float> scratch;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.what);
    const auto counts = run_trials(c.p, c.q.empty() ? nullptr : &c.q, c.point,
                                   [&](const float* p, const float* q, int32_t d, Sampler& s) {
                                     return speculative_accept(p, q, kVocab, d, s, scratch);
                                   });
    EXPECT_LT(chi_square(counts, c.p, kTrials), kCritical7);
  }
}

TEST(SpeculativeRule, AWrongRuleFailsTheSameTest) {
  int failures = 0;
  for (const Case& c : cases()) {
    const auto counts =
        run_trials(c.p, c.q.empty() ? nullptr : &c.q, c.point,
                   [&](const float* p, const float* q, int32_t d, Sampler& s) { return wrong_rule(p, q, d, s); });
    if (chi_square(counts, c.p, kTrials) > kCritical7) ++failures;
  }
  // Every case where q differs from p enough to reject often is caught.
  EXPECT_EQ(failures, static_cast<int>(cases().size()));
}

TEST(SpeculativeRule, AcceptsWithProbabilityMinOneRatio) {
  // p(d) >= q(d): always kept. Point mass: kept with probability p(d).
  std::vector<float> scratch;
  const std::vector<float> p = normalized({8, 4, 2, 1, 1, 1, 2, 1});
  std::vector<float> q = p;
  SamplerConfig cfg;
  Sampler s(cfg);
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(speculative_accept(p.data(), q.data(), kVocab, 0, s, scratch).accepted);
  int kept = 0;
  for (int i = 0; i < kTrials; ++i) kept += speculative_accept(p.data(), nullptr, kVocab, 0, s, scratch).accepted;
  // p(0) = 0.4; the binomial's standard deviation over 1e5 trials is 0.0015: 6 sigma is 0.01.
  EXPECT_NEAR(static_cast<double>(kept) / kTrials, p[0], 0.01);
  // A rejected point-mass draft never comes back as the emitted token.
  for (int i = 0; i < 1000; ++i) {
    const SpecDecision d = speculative_accept(p.data(), nullptr, kVocab, 5, s, scratch);
    EXPECT_EQ(d.accepted, d.token == 5);
  }
}

TEST(SamplerDistribution, MatchesWhatSampleDraws) {
  // sample() and distribution() share one candidate pipeline: frequencies of sample() match
  // distribution() (top-k 5 of 8 with min-p and temperature, so some bins are 0).
  SamplerConfig cfg;
  cfg.temperature = 0.7f;
  cfg.top_k = 5;
  cfg.top_p = 0.97f;
  cfg.min_p = 0.02f;
  cfg.seed = 7;
  Sampler s(cfg);
  const float logits[kVocab] = {1.0f, 2.5f, 0.3f, 2.0f, -1.0f, 1.7f, 0.9f, -3.0f};
  std::vector<float> p(kVocab);
  s.distribution(logits, kVocab, p.data());
  EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-6);
  EXPECT_EQ(p[7], 0.0f);  // outside the top-k
  std::vector<int64_t> counts(kVocab, 0);
  for (int t = 0; t < kTrials; ++t) ++counts[static_cast<size_t>(s.sample(logits, kVocab))];
  double chi = 0;
  int bins = 0;
  for (int i = 0; i < kVocab; ++i) {
    if (p[static_cast<size_t>(i)] == 0) {
      EXPECT_EQ(counts[static_cast<size_t>(i)], 0) << "token " << i;
      continue;
    }
    const double e = static_cast<double>(p[static_cast<size_t>(i)]) * kTrials;
    chi += (counts[static_cast<size_t>(i)] - e) * (counts[static_cast<size_t>(i)] - e) / e;
    ++bins;
  }
  ASSERT_LE(bins, 5);
  EXPECT_LT(chi, 50.69);  // 1e-9 quantile at 5 degrees of freedom (at most 4 are free here)
  // Greedy: a point mass on the argmax.
  cfg.temperature = 0;
  Sampler g(cfg);
  g.distribution(logits, kVocab, p.data());
  EXPECT_EQ(p[1], 1.0f);
  EXPECT_EQ(std::accumulate(p.begin(), p.end(), 0.0), 1.0);
}

}  // namespace
}  // namespace sniper
