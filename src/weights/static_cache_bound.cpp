// SPDX-License-Identifier: MIT
#include "weights/static_cache_bound.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "base/check.h"

namespace sniper {

namespace {

uint64_t total_requests(std::span<const uint32_t> counts) {
  return std::accumulate(counts.begin(), counts.end(), uint64_t{0});
}

// Requests of `score_on` that hit the `slots` keys with the highest `choose_from` counts.
uint64_t static_cache_hit_count(std::span<const uint32_t> choose_from, std::span<const uint32_t> score_on,
                                size_t slots) {
  CHECK(choose_from.size() == score_on.size(), "count spans differ: %zu vs %zu", choose_from.size(), score_on.size());
  std::vector<uint32_t> keys(choose_from.size());
  std::iota(keys.begin(), keys.end(), 0u);
  const size_t keep = std::min(slots, keys.size());
  // Most requested first; equal counts keep the lower key, so the choice does not depend on score_on.
  std::partial_sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(keep), keys.end(),
                    [&](uint32_t a, uint32_t b) {
                      return choose_from[a] != choose_from[b] ? choose_from[a] > choose_from[b] : a < b;
                    });
  uint64_t hits = 0;
  for (size_t i = 0; i < keep; ++i) hits += score_on[keys[i]];
  return hits;
}

double share(uint64_t hits, uint64_t total) {
  return total ? static_cast<double>(hits) / static_cast<double>(total) : 0;
}

}  // namespace

double static_cache_hit_rate(std::span<const uint32_t> choose_from, std::span<const uint32_t> score_on, size_t slots) {
  return share(static_cache_hit_count(choose_from, score_on, slots), total_requests(score_on));
}

StaticCacheHits static_cache_hits(std::span<const uint32_t> first_half, std::span<const uint32_t> second_half,
                                  size_t slots) {
  CHECK(first_half.size() == second_half.size(), "count spans differ: %zu vs %zu", first_half.size(),
        second_half.size());
  std::vector<uint32_t> all(first_half.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = first_half[i] + second_half[i];
  const uint64_t total = total_requests(all);
  StaticCacheHits r;
  r.hindsight = share(static_cache_hit_count(all, all, slots), total);
  // Each half served by the cache chosen from the other: held-out hits over all requests.
  r.held_out = share(
      static_cache_hit_count(first_half, second_half, slots) + static_cache_hit_count(second_half, first_half, slots),
      total);
  return r;
}

}  // namespace sniper
