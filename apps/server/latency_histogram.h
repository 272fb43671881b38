// SPDX-License-Identifier: MIT
// LatencyHistogram: a Prometheus histogram of durations in seconds over fixed buckets (5 ms to
// 60 s, then +Inf), for the per-request latencies /metrics shows: queue time, time to first
// token, inter-token latency. render() writes the `_bucket{le=...}` (cumulative), `_sum` and
// `_count` samples; quantile() estimates a quantile as Prometheus's histogram_quantile does
// (linear within the bucket), for `sniper top`. Thread-compatible (Metrics guards it).
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace sniper::server {

class LatencyHistogram {
 public:
  static constexpr std::array<double, 14> kBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                     1,     2.5,  5,     10,   20,  30,   60};
  // Negative or NaN durations are ignored.
  void add(double seconds);
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  // q in [0, 1]; 0 when empty. A quantile in the +Inf bucket gives the last finite bound.
  double quantile(double q) const;
  // The histogram whose cumulative bucket counts (kBounds, then +Inf) were read back from
  // /metrics (`sniper top`); a count that goes down counts as 0 more. Sum stays 0.
  static LatencyHistogram from_cumulative(const std::array<uint64_t, kBounds.size() + 1>& cumulative);
  // Appends the histogram's HELP, TYPE and samples for `name`.
  void render(std::string* out, const char* name, const char* help) const;

 private:
  std::array<uint64_t, kBounds.size() + 1> counts_{};  // per bucket (not cumulative); last: +Inf
  uint64_t count_ = 0;
  double sum_ = 0;
};

}  // namespace sniper::server
