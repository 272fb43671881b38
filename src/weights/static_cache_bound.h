// SPDX-License-Identifier: MIT
// What a static expert cache would have hit: the `slots` most requested (layer, expert) keys,
// held for a whole run with no eviction. `sniper bench` uses it to state the bytes that must
// cross the SSD per token for a given cache size.
//
// Scoring a cache on the same requests it was chosen from (hindsight) overstates what any
// cache can do: over a short run a few experts are requested more often by chance, and the
// hindsight cache holds exactly those. Under uniform routing, 64 tokens make a cache that
// holds 39% of the experts look like a 58% cache. The held-out figure chooses the cache from
// one half of the run's tokens and scores it on the other half (both ways, averaged; the bench
// splits even from odd tokens, so slow drift in routing counts as real), so it keeps what is
// real in the routing's skew and drops what is noise. It is the bound a cache that knows the
// routing distribution, but not the future tokens, can reach in expectation.
//
// Counts are indexed by key (layer * n_experts + expert); all spans have the same length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace sniper {

struct StaticCacheHits {
  double hindsight = 0;  // chosen from all requests and scored on them
  double held_out = 0;   // chosen from one half, scored on the other, averaged over both halves
};

// Share of `score_on`'s requests that hit a cache holding the `slots` keys with the highest
// `choose_from` counts (ties go to the lower key). Returns 0 when `score_on` has no requests.
// Precondition: both spans have the same length.
double static_cache_hit_rate(std::span<const uint32_t> choose_from, std::span<const uint32_t> score_on, size_t slots);

// Hindsight and held-out hit rates of a static cache of `slots` keys for a run whose requests
// per key were `first_half` then `second_half`.
StaticCacheHits static_cache_hits(std::span<const uint32_t> first_half, std::span<const uint32_t> second_half,
                                  size_t slots);

}  // namespace sniper
