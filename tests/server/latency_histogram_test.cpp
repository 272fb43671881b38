// SPDX-License-Identifier: MIT
// LatencyHistogram: cumulative buckets, sum and count as Prometheus reads them (the text parses
// back with sniper top's parser), quantiles interpolated within a bucket, bad input ignored.
#include "server/latency_histogram.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <limits>

#include "server/prometheus_text.h"

namespace sniper::server {
namespace {

TEST(LatencyHistogram, RendersCumulativeBucketsThatParseBack) {
  LatencyHistogram h;
  for (double s : {0.001, 0.004, 0.02, 0.3, 0.3, 100.0}) h.add(s);
  h.add(-1);
  h.add(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(h.count(), 6u);
  EXPECT_NEAR(h.sum(), 100.625, 1e-9);
  std::string text;
  h.render(&text, "sniper_x_seconds", "A test.");
  auto m = parse_prometheus_text(text);
  ASSERT_TRUE(m.ok()) << m.error().message << "\n" << text;
  EXPECT_EQ(m->get("sniper_x_seconds_bucket", -1, {{"le", "0.005"}}), 2);
  EXPECT_EQ(m->get("sniper_x_seconds_bucket", -1, {{"le", "0.025"}}), 3);
  EXPECT_EQ(m->get("sniper_x_seconds_bucket", -1, {{"le", "0.5"}}), 5);
  EXPECT_EQ(m->get("sniper_x_seconds_bucket", -1, {{"le", "60"}}), 5);
  EXPECT_EQ(m->get("sniper_x_seconds_bucket", -1, {{"le", "+Inf"}}), 6);
  EXPECT_EQ(m->get("sniper_x_seconds_count", -1), 6);
  EXPECT_NEAR(m->get("sniper_x_seconds_sum", -1), 100.625, 1e-9);
  EXPECT_NE(text.find("# TYPE sniper_x_seconds histogram\n"), std::string::npos);
  // Read back from the text (sniper top): the same quantiles.
  std::array<uint64_t, LatencyHistogram::kBounds.size() + 1> cumulative{};
  for (size_t b = 0; b < cumulative.size(); ++b) {
    char le[32];
    std::snprintf(le, sizeof(le), "%g", b < LatencyHistogram::kBounds.size() ? LatencyHistogram::kBounds[b] : 0.0);
    cumulative[b] = static_cast<uint64_t>(
        m->get("sniper_x_seconds_bucket", 0, {{"le", b < LatencyHistogram::kBounds.size() ? le : "+Inf"}}));
  }
  const LatencyHistogram back = LatencyHistogram::from_cumulative(cumulative);
  EXPECT_EQ(back.count(), 6u);
  for (double q : {0.1, 0.5, 0.9, 1.0}) EXPECT_EQ(back.quantile(q), h.quantile(q)) << q;
}

TEST(LatencyHistogram, QuantilesInterpolateWithinTheBucket) {
  LatencyHistogram h;
  EXPECT_EQ(h.quantile(0.5), 0);
  for (int i = 0; i < 10; ++i) h.add(0.07);  // all in (0.05, 0.1]
  EXPECT_NEAR(h.quantile(0.5), 0.075, 1e-12);
  EXPECT_NEAR(h.quantile(1.0), 0.1, 1e-12);
  h.add(1000);  // beyond the last bound
  EXPECT_EQ(h.quantile(1.0), 60);
  EXPECT_LE(h.quantile(0.5), 0.1);
}

}  // namespace
}  // namespace sniper::server
