// SPDX-License-Identifier: MIT
// Tests of the Prometheus text parser used by `sniper top`: the shapes /metrics produces, label
// escapes, special values, timestamps, lookups by label, and malformed lines that must be errors.
#include "server/prometheus_text.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sniper::server {
namespace {

constexpr const char* kExposition =
    "# HELP sniper_requests_total Requests handled.\n"
    "# TYPE sniper_requests_total counter\n"
    "sniper_requests_total{endpoint=\"chat\",status=\"ok\"} 12\n"
    "sniper_requests_total{endpoint=\"chat\",status=\"error\"} 2\n"
    "sniper_requests_total{endpoint=\"completions\",status=\"ok\"} 5\n"
    "\n"
    "# TYPE sniper_rss_bytes gauge\n"
    "sniper_rss_bytes 1.2345e+08\n"
    "sniper_expert_cache_hit_rate 0.875\r\n"
    "sniper_time_to_first_token_seconds_sum 1.5\n"
    "sniper_time_to_first_token_seconds_count 3 1700000000000\n";

TEST(PrometheusText, ParsesServerExposition) {
  Result<PromMetrics> r = parse_prometheus_text(kExposition);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const PromMetrics& m = *r;
  ASSERT_EQ(m.samples.size(), 7u);
  EXPECT_EQ(m.samples[0].name, "sniper_requests_total");
  ASSERT_EQ(m.samples[0].labels.size(), 2u);
  EXPECT_EQ(m.samples[0].labels[1].first, "status");
  EXPECT_EQ(m.samples[0].labels[1].second, "ok");
  EXPECT_DOUBLE_EQ(m.get("sniper_rss_bytes"), 1.2345e8);
  EXPECT_DOUBLE_EQ(m.get("sniper_expert_cache_hit_rate"), 0.875);
  EXPECT_DOUBLE_EQ(m.get("sniper_time_to_first_token_seconds_count"), 3.0);
  EXPECT_DOUBLE_EQ(m.sum("sniper_requests_total"), 19.0);
  EXPECT_DOUBLE_EQ(m.sum("sniper_requests_total", {{"status", "ok"}}), 17.0);
  EXPECT_DOUBLE_EQ(m.get("sniper_requests_total", -1, {{"endpoint", "chat"}, {"status", "error"}}), 2.0);
  EXPECT_FALSE(m.find("sniper_requests_total", {{"status", "cancelled"}}).has_value());
  EXPECT_FALSE(m.find("sniper_missing").has_value());
  EXPECT_DOUBLE_EQ(m.get("sniper_missing", 42.0), 42.0);
}

TEST(PrometheusText, EscapesSpecialValuesAndWhitespace) {
  Result<PromMetrics> r = parse_prometheus_text(
      "  a{x=\"q\\\"uote\\\\back\\nline\" , y = \"\",} NaN\n"
      "b +Inf\n"
      "c\t-Inf\n"
      "d{} -0.5e-3");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const PromMetrics& m = *r;
  ASSERT_EQ(m.samples.size(), 4u);
  EXPECT_EQ(m.samples[0].labels[0].second, "q\"uote\\back\nline");
  EXPECT_EQ(m.samples[0].labels[1].second, "");
  EXPECT_TRUE(std::isnan(m.samples[0].value));
  EXPECT_TRUE(std::isinf(m.get("b")) && m.get("b") > 0);
  EXPECT_TRUE(std::isinf(m.get("c")) && m.get("c") < 0);
  EXPECT_DOUBLE_EQ(m.get("d"), -0.0005);
}

TEST(PrometheusText, EmptyAndCommentOnlyInputs) {
  Result<PromMetrics> r = parse_prometheus_text("");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->samples.empty());
  r = parse_prometheus_text("# just a comment\n\n# another\n");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->samples.empty());
}

TEST(PrometheusText, MalformedLinesAreErrorsNamingTheLine) {
  struct Case {
    const char* text;
    const char* needle;
  };
  const Case cases[] = {
      {"ok 1\n9bad 1\n", "line 2"},
      {"m\n", "expected whitespace"},
      {"m abc\n", "not a number"},
      {"m 1e999\n", "not a number"},
      {"m{a=1} 1\n", "quoted string"},
      {"m{a\"x\"} 1\n", "expected '='"},
      {"m{a=\"x} 1\n", "unterminated"},
      {"m{a=\"x\" b=\"y\"} 1\n", "expected ',' or '}'"},
      {"m{a=\"\\t\"} 1\n", "unknown escape"},
      {"m 1 12x\n", "unexpected text"},
      {"m{=\"x\"} 1\n", "label name"},
  };
  for (const Case& c : cases) {
    Result<PromMetrics> r = parse_prometheus_text(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().message.find(c.needle), std::string::npos) << c.text << " -> " << r.error().message;
  }
}

}  // namespace
}  // namespace sniper::server
