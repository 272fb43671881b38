// SPDX-License-Identifier: MIT
// static_cache_bound (weights/static_cache_bound.h): exact figures on a hand-worked case, the
// edges, and the property the bench relies on: under uniform routing the held-out hit rate is
// the share of experts the cache holds while hindsight claims far more; under skewed routing the
// held-out rate finds the real skew (close to the best static cache under the true distribution).
#include "weights/static_cache_bound.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

namespace sniper {
namespace {

TEST(StaticCacheBound, HandWorkedCounts) {
  const std::vector<uint32_t> first = {5, 0, 3, 1}, second = {0, 4, 2, 2};
  // All requests {5,4,5,3}: the two slots hold keys 0 and 2, 10 of 17 requests.
  const StaticCacheHits h = static_cache_hits(first, second, 2);
  EXPECT_DOUBLE_EQ(h.hindsight, 10.0 / 17.0);
  // Chosen from the first half (keys 0, 2): 2 of the second half's 8. Chosen from the second
  // half (key 1, then key 2 over key 3 on the tie): 3 of the first half's 9.
  EXPECT_DOUBLE_EQ(static_cache_hit_rate(first, second, 2), 2.0 / 8.0);
  EXPECT_DOUBLE_EQ(static_cache_hit_rate(second, first, 2), 3.0 / 9.0);
  EXPECT_DOUBLE_EQ(h.held_out, 5.0 / 17.0);
}

TEST(StaticCacheBound, Edges) {
  const std::vector<uint32_t> a = {1, 2, 3}, b = {3, 0, 1}, none = {0, 0, 0};
  EXPECT_DOUBLE_EQ(static_cache_hit_rate(a, b, 0), 0.0);
  EXPECT_DOUBLE_EQ(static_cache_hit_rate(a, b, 3), 1.0);
  EXPECT_DOUBLE_EQ(static_cache_hit_rate(a, b, 99), 1.0);  // more slots than keys
  EXPECT_DOUBLE_EQ(static_cache_hit_rate(a, none, 2), 0.0);
  const StaticCacheHits h = static_cache_hits(none, none, 2);
  EXPECT_DOUBLE_EQ(h.hindsight, 0.0);
  EXPECT_DOUBLE_EQ(h.held_out, 0.0);
  // One empty half: the held-out figure is the other half scored by a cache chosen from nothing
  // (ties to the lowest keys): keys 0 and 1 of {1, 2, 3} hit 3 of 6.
  EXPECT_DOUBLE_EQ(static_cache_hits(none, a, 2).held_out, 3.0 / 6.0);
}

// Requests per key for `tokens` tokens, each picking `active` distinct experts per layer with
// probabilities proportional to `weight` (one weight per expert, the same in every layer).
std::vector<uint32_t> route(std::mt19937_64& rng, int tokens, int layers, int active,
                            const std::vector<double>& weight) {
  const int n_experts = static_cast<int>(weight.size());
  std::vector<uint32_t> counts(static_cast<size_t>(layers * n_experts), 0);
  std::vector<double> w(weight);
  for (int t = 0; t < tokens; ++t) {
    for (int l = 0; l < layers; ++l) {
      w = weight;
      for (int k = 0; k < active; ++k) {
        std::discrete_distribution<int> pick(w.begin(), w.end());
        const int e = pick(rng);
        w[static_cast<size_t>(e)] = 0;  // without replacement, like top-k
        ++counts[static_cast<size_t>(l * n_experts + e)];
      }
    }
  }
  return counts;
}

TEST(StaticCacheBound, UniformRoutingHeldOutIsTheCachedShareHindsightIsNot) {
  // The shape of the 8 GiB bench: 48 layers x 128 experts, 8 active, 39% of experts cached, 64 tokens.
  std::mt19937_64 rng(7);
  const std::vector<double> uniform(128, 1.0);
  const auto a = route(rng, 32, 48, 8, uniform), b = route(rng, 32, 48, 8, uniform);
  const size_t slots = 2385;
  const double share = static_cast<double>(slots) / 6144.0;
  const StaticCacheHits h = static_cache_hits(a, b, slots);
  EXPECT_NEAR(h.held_out, share, 0.02);
  EXPECT_GT(h.hindsight, share + 0.12);
}

TEST(StaticCacheBound, SkewedRoutingHeldOutFindsTheSkew) {
  std::mt19937_64 rng(11);
  std::vector<double> zipf(64);
  for (size_t i = 0; i < zipf.size(); ++i) zipf[i] = 1.0 / static_cast<double>(i + 1);
  const int layers = 8, active = 4;
  const auto a = route(rng, 200, layers, active, zipf), b = route(rng, 200, layers, active, zipf);
  const size_t slots = 16 * static_cast<size_t>(layers);  // a quarter of the experts
  const StaticCacheHits h = static_cache_hits(a, b, slots);
  // The best static cache under the true distribution, estimated from a long independent run.
  const auto big = route(rng, 4000, layers, active, zipf);
  const double truth = static_cache_hit_rate(big, big, slots);
  EXPECT_GT(truth, 0.45);  // the skew is real: a quarter of the experts take most requests
  EXPECT_NEAR(h.held_out, truth, 0.03);
  EXPECT_GE(h.hindsight, h.held_out);
}

}  // namespace
}  // namespace sniper
