// SPDX-License-Identifier: MIT
// Tests of Sampler: greedy ties, seeded determinism, the sampled distribution against softmax,
// top-k/top-p/min-p cut-offs, llama.cpp penalty arithmetic, no allocation per sample, and
// config validation messages.
#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>
#include <vector>

// Counts heap allocations while enabled, to prove sample() reuses its buffers. The replacement
// operators pair malloc with free, which GCC's -Wmismatched-new-delete cannot see through once
// they are inlined into callers, so that warning is off for this file.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<bool> g_count_allocs{false};
std::atomic<int64_t> g_allocs{0};
}  // namespace

void* operator new(size_t n) {
  if (g_count_allocs.load(std::memory_order_relaxed)) g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace sniper {
namespace {

SamplerConfig plain_config(float temperature, uint64_t seed = 1) {
  SamplerConfig c;
  c.temperature = temperature;
  c.top_k = 0;
  c.top_p = 1.0f;
  c.min_p = 0.0f;
  c.seed = seed;
  return c;
}

// Logits whose softmax is exactly `probs` (up to float rounding).
std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

std::vector<int64_t> histogram(Sampler& s, const std::vector<float>& logits, int n_draws) {
  std::vector<int64_t> counts(logits.size(), 0);
  for (int i = 0; i < n_draws; ++i) {
    const int32_t t = s.sample(logits.data(), static_cast<int32_t>(logits.size()));
    EXPECT_GE(t, 0);
    EXPECT_LT(t, static_cast<int32_t>(logits.size()));
    ++counts[static_cast<size_t>(t)];
  }
  return counts;
}

TEST(Sampler, GreedyPicksArgmaxWithLowestIndexOnTies) {
  Sampler s(plain_config(0.0f));
  const std::vector<float> a = {1.0f, 3.0f, 3.0f, 2.0f};
  EXPECT_EQ(s.sample(a.data(), 4), 1);
  const std::vector<float> b = {0.5f, 0.5f, 0.5f};
  EXPECT_EQ(s.sample(b.data(), 3), 0);
  const std::vector<float> c = {-5.0f, NAN, -1.0f};
  EXPECT_EQ(s.sample(c.data(), 3), 2);  // NaN counts as -inf
}

TEST(Sampler, SameSeedSameSequenceAndResetRestarts) {
  std::vector<float> logits(100);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(std::sin(static_cast<double>(i)));
  Sampler a(plain_config(1.0f, 42));
  Sampler b(plain_config(1.0f, 42));
  Sampler c(plain_config(1.0f, 43));
  std::vector<int32_t> seq_a, seq_b, seq_c;
  for (int i = 0; i < 64; ++i) {
    seq_a.push_back(a.sample(logits.data(), 100));
    seq_b.push_back(b.sample(logits.data(), 100));
    seq_c.push_back(c.sample(logits.data(), 100));
  }
  EXPECT_EQ(seq_a, seq_b);
  EXPECT_NE(seq_a, seq_c);
  a.reset();
  for (int i = 0; i < 64; ++i) EXPECT_EQ(a.sample(logits.data(), 100), seq_a[static_cast<size_t>(i)]);
}

TEST(Sampler, FrequenciesMatchSoftmaxAtTemperatureOne) {
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f, 0.5f, -1.0f, 1.5f, -2.0f, 0.25f};
  std::vector<double> p(logits.size());
  double z = 0;
  for (size_t i = 0; i < logits.size(); ++i) z += p[i] = std::exp(static_cast<double>(logits[i]));
  for (double& x : p) x /= z;
  constexpr int kDraws = 100000;
  Sampler s(plain_config(1.0f, 7));
  const std::vector<int64_t> counts = histogram(s, logits, kDraws);
  double chi2 = 0;
  double chi2_uniform = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double expected = kDraws * p[i];
    const double uniform = kDraws / static_cast<double>(p.size());
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
    chi2_uniform += (counts[i] - uniform) * (counts[i] - uniform) / uniform;
  }
  // 7 degrees of freedom: P(chi2 > 24.3) = 0.001 for a correct sampler.
  EXPECT_LT(chi2, 24.3);
  EXPECT_GT(chi2_uniform, 1000.0);  // the test can tell distributions apart
}

TEST(Sampler, TemperatureSharpensTheDistribution) {
  const std::vector<float> logits = logits_of({0.6, 0.4});
  SamplerConfig cold = plain_config(0.25f, 3);
  Sampler s(cold);
  const std::vector<int64_t> counts = histogram(s, logits, 20000);
  // p0 = 0.6^4 / (0.6^4 + 0.4^4) = 0.835 at temperature 0.25.
  EXPECT_NEAR(static_cast<double>(counts[0]) / 20000, 0.835, 0.015);
}

TEST(Sampler, TopKOneEqualsGreedy) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<float> logits(50);
    uint64_t x = seed * 2654435761u + 1;
    for (float& l : logits) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      l = static_cast<float>(x >> 40) / 1e5f;
    }
    SamplerConfig k1 = plain_config(1.5f, seed);
    k1.top_k = 1;
    Sampler sampled(k1);
    Sampler greedy(plain_config(0.0f));
    EXPECT_EQ(sampled.sample(logits.data(), 50), greedy.sample(logits.data(), 50));
  }
}

TEST(Sampler, TopKKeepsTheBestKWithLowIdsWinningTies) {
  const std::vector<float> logits = {1.0f, 5.0f, 5.0f, 5.0f, 0.0f};
  SamplerConfig c = plain_config(1.0f, 11);
  c.top_k = 2;
  Sampler s(c);
  const std::vector<int64_t> counts = histogram(s, logits, 4000);
  EXPECT_GT(counts[1], 1500);
  EXPECT_GT(counts[2], 1500);
  EXPECT_EQ(counts[0] + counts[3] + counts[4], 0);
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingP) {
  const std::vector<float> logits = logits_of({0.05, 0.5, 0.15, 0.3});
  SamplerConfig c = plain_config(1.0f, 5);
  c.top_p = 0.75f;  // 0.5 < 0.75 <= 0.5 + 0.3: keeps ids 1 and 3
  Sampler s(c);
  const std::vector<int64_t> counts = histogram(s, logits, 20000);
  EXPECT_EQ(counts[0] + counts[2], 0);
  EXPECT_NEAR(static_cast<double>(counts[1]) / 20000, 0.5 / 0.8, 0.015);
  EXPECT_NEAR(static_cast<double>(counts[3]) / 20000, 0.3 / 0.8, 0.015);
}

TEST(Sampler, MinPDropsTokensBelowTheRelativeThreshold) {
  const std::vector<float> logits = logits_of({0.5, 0.3, 0.15, 0.05});
  SamplerConfig c = plain_config(1.0f, 9);
  c.min_p = 0.2f;  // threshold 0.1: keeps 0.5, 0.3, 0.15
  Sampler s(c);
  std::vector<int64_t> counts = histogram(s, logits, 20000);
  EXPECT_EQ(counts[3], 0);
  EXPECT_NEAR(static_cast<double>(counts[2]) / 20000, 0.15 / 0.95, 0.015);
  c.min_p = 0.31f;  // threshold 0.155: also drops 0.15
  Sampler t(c);
  counts = histogram(t, logits, 20000);
  EXPECT_EQ(counts[2] + counts[3], 0);
  EXPECT_GT(counts[1], 5000);
}

TEST(Sampler, PenaltiesFollowLlamaCpp) {
  SamplerConfig c = plain_config(0.0f);
  c.repeat_penalty = 2.0f;
  c.presence_penalty = 0.5f;
  c.frequency_penalty = 0.25f;
  c.repeat_last_n = 3;
  Sampler s(c);
  for (int32_t t : {7, 5, 5, 2}) s.accept(t);  // window: 5, 5, 2 (7 fell out)
  std::vector<float> logits = {0.0f, 1.0f, -1.0f, 1.0f, 1.0f, 4.0f, 1.0f, 3.0f};
  s.apply_penalties(logits.data(), 8);
  EXPECT_FLOAT_EQ(logits[5], 4.0f / 2.0f - (2 * 0.25f + 0.5f));   // positive: divided
  EXPECT_FLOAT_EQ(logits[2], -1.0f * 2.0f - (1 * 0.25f + 0.5f));  // negative: multiplied
  EXPECT_FLOAT_EQ(logits[7], 3.0f);                               // outside the window
  EXPECT_FLOAT_EQ(logits[0], 0.0f);
  // Applying twice with the same history penalises again (the buffer was reset in between).
  s.apply_penalties(logits.data(), 8);
  EXPECT_FLOAT_EQ(logits[5], 1.0f / 2.0f - 1.0f);
}

TEST(Sampler, RepeatPenaltyChangesTheGreedyChoice) {
  SamplerConfig c = plain_config(0.0f);
  c.repeat_penalty = 1.5f;
  Sampler s(c);
  const std::vector<float> logits = {0.0f, 2.0f, 1.5f};
  EXPECT_EQ(s.sample(logits.data(), 3), 1);
  s.accept(1);  // 2.0 / 1.5 = 1.33 < 1.5
  EXPECT_EQ(s.sample(logits.data(), 3), 2);
  s.reset();
  EXPECT_EQ(s.sample(logits.data(), 3), 1);
}

// logit_bias (issue 40 finding 8), as llama.cpp's logit-bias sampler: added before penalties,
// summed when a token repeats, -inf bans, ids past the vocabulary ignored; the distribution and
// greedy choice both see it.
TEST(Sampler, LogitBiasComesFirstAndBans) {
  SamplerConfig c = plain_config(0.0f);
  c.logit_bias = {{0, 1.5f}, {0, 1.0f}, {1, -std::numeric_limits<float>::infinity()}, {99, 50.0f}};
  c.repeat_penalty = 2.0f;
  Sampler s(c);
  const std::vector<float> logits = {1.0f, 5.0f, 3.0f};
  EXPECT_EQ(s.sample(logits.data(), 3), 0);  // 1 + 2.5 = 3.5 > 3; token 1 banned
  s.accept(0);                               // penalised after the bias: 3.5 / 2 = 1.75 < 3
  EXPECT_EQ(s.sample(logits.data(), 3), 2);
  std::vector<float> probs(3);
  c.temperature = 1.0f;
  Sampler t(c);
  t.distribution(logits.data(), 3, probs.data());
  EXPECT_EQ(probs[1], 0.0f);
  EXPECT_NEAR(probs[0] / probs[2], std::exp(0.5), 1e-5);
  for (int i = 0; i < 200; ++i) EXPECT_NE(t.sample(logits.data(), 3), 1);
}

TEST(Sampler, NoAllocationPerSampleAfterTheFirst) {
  SamplerConfig c;  // default chain: penalties off, top-k 40, top-p 0.95, min-p 0.05
  c.repeat_penalty = 1.1f;
  c.frequency_penalty = 0.1f;
  Sampler s(c);
  std::vector<float> logits(32000);
  for (size_t i = 0; i < logits.size(); ++i)
    logits[i] = static_cast<float>(std::cos(0.001 * static_cast<double>(i * i)));
  s.accept(s.sample(logits.data(), 32000));
  g_allocs = 0;
  g_count_allocs = true;
  operator delete(operator new(16));  // the counter works: one allocation
  const int64_t probe = g_allocs.exchange(0);
  for (int i = 0; i < 50; ++i) s.accept(s.sample(logits.data(), 32000));
  g_count_allocs = false;
  const int64_t n_allocs = g_allocs.load();
  EXPECT_EQ(probe, 1);
  EXPECT_EQ(n_allocs, 0);
}

TEST(Sampler, ValidateNamesTheBadField) {
  struct Bad {
    void (*mutate)(SamplerConfig&);
    const char* field;
  };
  const Bad cases[] = {
      {[](SamplerConfig& c) { c.temperature = -0.5f; }, "temperature is -0.5"},
      {[](SamplerConfig& c) { c.temperature = NAN; }, "temperature"},
      {[](SamplerConfig& c) { c.top_k = -1; }, "top_k is -1"},
      {[](SamplerConfig& c) { c.top_p = 0.0f; }, "top_p is 0"},
      {[](SamplerConfig& c) { c.top_p = 1.5f; }, "top_p is 1.5"},
      {[](SamplerConfig& c) { c.min_p = -0.1f; }, "min_p"},
      {[](SamplerConfig& c) { c.min_p = 2.0f; }, "min_p is 2"},
      {[](SamplerConfig& c) { c.repeat_penalty = 0.0f; }, "repeat_penalty is 0"},
      {[](SamplerConfig& c) { c.repeat_last_n = -1; }, "repeat_last_n is -1"},
      {[](SamplerConfig& c) { c.presence_penalty = INFINITY; }, "presence_penalty"},
      {[](SamplerConfig& c) { c.frequency_penalty = NAN; }, "frequency_penalty"},
      {[](SamplerConfig& c) {
         c.logit_bias = {{-1, 1.0f}};
       },
       "logit_bias has token -1"},
      {[](SamplerConfig& c) {
         c.logit_bias = {{3, NAN}};
       },
       "logit_bias of token 3"},
      {[](SamplerConfig& c) {
         c.logit_bias = {{3, INFINITY}};
       },
       "logit_bias of token 3 is inf"},
  };
  EXPECT_TRUE(SamplerConfig{}.validate().ok());
  for (const Bad& b : cases) {
    SamplerConfig c;
    b.mutate(c);
    const Status st = c.validate();
    ASSERT_FALSE(st.ok()) << b.field;
    EXPECT_NE(st.error().message.find(b.field), std::string::npos) << st.error().message;
  }
}

}  // namespace
}  // namespace sniper
