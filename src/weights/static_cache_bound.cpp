// SPDX-License-Identifier: MIT
#include "weights/static_cache_bound.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "base/check.h"

namespace sniper {

double static_cache_hit_rate(std::span<const uint32_t> choose_from, std::span<const uint32_t> score_on, size_t slots) {
  CHECK(choose_from.size() == score_on.size(), "count spans differ: %zu vs %zu", choose_from.size(), score_on.size());
  const uint64_t total = std::accumulate(score_on.begin(), score_on.end(), uint64_t{0});
  if (total == 0) return 0;
  std::vector<uint32_t> keys(choose_from.size());
  std::iota(keys.begin(), keys.end(), 0u);
  const size_t keep = std::min(slots, keys.size());
  // Most requested first; equal counts keep the lower key, so the choice does not depend on score_on.
  std::partial_sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(keep), keys.end(),
                    [&](uint32_t a, uint32_t b) { return choose_from[a] != choose_from[b] ? choose_from[a] > choose_from[b] : a < b; });
  uint64_t hits = 0;
  for (size_t i = 0; i < keep; ++i) hits += score_on[keys[i]];
  return static_cast<double>(hits) / static_cast<double>(total);
}

StaticCacheHits static_cache_hits(std::span<const uint32_t> first_half, std::span<const uint32_t> second_half, size_t slots) {
  CHECK(first_half.size() == second_half.size(), "count spans differ: %zu vs %zu", first_half.size(), second_half.size());
  std::vector<uint32_t> all(first_half.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = first_half[i] + second_half[i];
  StaticCacheHits r;
  r.hindsight = static_cache_hit_rate(all, all, slots);
  const uint64_t n1 = std::accumulate(first_half.begin(), first_half.end(), uint64_t{0});
  const uint64_t n2 = std::accumulate(second_half.begin(), second_half.end(), uint64_t{0});
  if (n1 + n2 == 0) return r;
  // Each half's score weighted by its requests: the held-out hits over all requests.
  const double h2 = static_cache_hit_rate(first_half, second_half, slots);
  const double h1 = static_cache_hit_rate(second_half, first_half, slots);
  r.held_out = (h1 * static_cast<double>(n1) + h2 * static_cast<double>(n2)) / static_cast<double>(n1 + n2);
  return r;
}

}  // namespace sniper
