// SPDX-License-Identifier: MIT
// A parser for the Prometheus text exposition format 0.0.4 (what GET /metrics returns), used by
// `sniper top`. Accepts `# HELP` / `# TYPE` / other comment lines (ignored), blank lines, and
// samples `name{label="value",...} value [timestamp]`. Values may be NaN, +Inf, -Inf. Label
// values unescape \\, \" and \n. Invariant: every parsed sample has a valid metric name and
// a finite-or-special double value; the parser never reads past the input.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace sniper::server {

struct PromSample {
  std::string name;                                         // e.g. "sniper_requests_total"
  std::vector<std::pair<std::string, std::string>> labels;  // in the order they appear
  double value = 0.0;
};

using PromLabels = std::vector<std::pair<std::string, std::string>>;

class PromMetrics {
 public:
  std::vector<PromSample> samples;

  // Returns the value of the first sample called `name` whose labels include all of `match`
  // (extra labels on the sample are allowed), or nullopt when there is none. Thread-compatible.
  std::optional<double> find(std::string_view name, const PromLabels& match = {}) const;
  // Like find() but returns `fallback` when absent.
  double get(std::string_view name, double fallback = 0.0, const PromLabels& match = {}) const;
  // Sum over all samples called `name` whose labels include all of `match` (0 when none).
  double sum(std::string_view name, const PromLabels& match = {}) const;
};

// Parses a whole exposition. Errors name the 1-based line and what is wrong ("line 3: expected
// '=' after label name 'endpoint'"). Never throws.
[[nodiscard]] Result<PromMetrics> parse_prometheus_text(std::string_view text);

}  // namespace sniper::server
