// SPDX-License-Identifier: MIT
#include "server/latency_histogram.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>

namespace sniper::server {

void LatencyHistogram::add(double seconds) {
  if (!(seconds >= 0)) return;
  size_t b = 0;
  while (b < kBounds.size() && seconds > kBounds[b]) ++b;
  ++counts_[b];
  ++count_;
  sum_ += seconds;
}

double LatencyHistogram::quantile(double q) const {
  if (count_ == 0) return 0;
  q = std::fmin(std::fmax(q, 0.0), 1.0);
  const double rank = q * static_cast<double>(count_);
  uint64_t below = 0;
  for (size_t b = 0; b < counts_.size(); ++b) {
    if (counts_[b] > 0 && static_cast<double>(below + counts_[b]) >= rank) {
      if (b == kBounds.size()) return kBounds.back();
      const double lo = b == 0 ? 0.0 : kBounds[b - 1];
      const double frac = (rank - static_cast<double>(below)) / static_cast<double>(counts_[b]);
      return lo + (kBounds[b] - lo) * frac;
    }
    below += counts_[b];
  }
  return kBounds.back();
}

LatencyHistogram LatencyHistogram::from_cumulative(const std::array<uint64_t, kBounds.size() + 1>& cumulative) {
  LatencyHistogram h;
  uint64_t prev = 0;
  for (size_t b = 0; b < cumulative.size(); ++b) {
    h.counts_[b] = cumulative[b] > prev ? cumulative[b] - prev : 0;
    prev = std::max(prev, cumulative[b]);
  }
  h.count_ = prev;
  return h;
}

void LatencyHistogram::render(std::string* out, const char* name, const char* help) const {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
  *out += buf;
  uint64_t cumulative = 0;
  for (size_t b = 0; b < counts_.size(); ++b) {
    cumulative += counts_[b];
    if (b < kBounds.size()) {
      std::snprintf(buf, sizeof(buf), "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name, kBounds[b], cumulative);
    } else {
      std::snprintf(buf, sizeof(buf), "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, cumulative);
    }
    *out += buf;
  }
  std::snprintf(buf, sizeof(buf), "%s_sum %.17g\n%s_count %" PRIu64 "\n", name, sum_, name, count_);
  *out += buf;
}

}  // namespace sniper::server
