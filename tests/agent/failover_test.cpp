// SPDX-License-Identifier: MIT
// Failover over scripted backends: 429 + Retry-After (seconds and HTTP date) moves to the next
// backend and puts the first on a cooldown that is honoured (skipped until it ends, then retried),
// a hanging backend times out, a down backend is skipped, 5xx is retried, fallback answers are
// marked, and tier chains / pinning pick the right backend.
#include "agent/failover.h"

#include <gtest/gtest.h>

#include <ctime>

#include "agent/scripted_server.h"

namespace sniper::agent {
namespace {

using testing::Mode;
using testing::ScriptedServer;

struct FakeClock {
  std::chrono::steady_clock::time_point steady = std::chrono::steady_clock::now();
  std::chrono::system_clock::time_point system = std::chrono::system_clock::from_time_t(1700000000);
  PoolClocks clocks() {
    PoolClocks c;
    c.steady = [this] { return steady; };
    c.system = [this] { return system; };
    c.sleep = [](double) {};
    return c;
  }
  void advance(double s) {
    steady += std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
    system += std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(s));
  }
};

BackendConfig backend(const std::string& name, const std::string& url, Tier role = Tier::kPrimary) {
  BackendConfig b;
  b.name = name;
  b.url = url;
  b.role = role;
  return b;
}

ChatRequest request(bool stream = true) {
  ChatRequest r;
  r.messages = nlohmann::json::array({{{"role", "user"}, {"content", "hello"}}});
  r.stream = stream;
  return r;
}

class FailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_.set_default_reply("answer from a");
    b_.set_default_reply("answer from b");
    ASSERT_TRUE(a_.start());
    ASSERT_TRUE(b_.start());
    config_.connect_timeout_s = 1;
    config_.read_timeout_s = 0.5;
    config_.cooldown_s = 30;
    config_.retries = 1;
  }
  ScriptedServer a_, b_;
  AgentConfig config_;
  FakeClock clock_;
};

TEST_F(FailoverTest, RateLimitedFailsOverAndCooldownIsHonoured) {
  config_.backends = {backend("a", a_.url()), backend("b", b_.url())};
  BackendPool pool(config_, clock_.clocks());
  a_.set_mode(Mode::kRateLimited);
  a_.set_retry_after("5");
  PoolResult r1 = pool.chat(Tier::kPrimary, request(), {}, nullptr);
  ASSERT_TRUE(r1.result.ok()) << r1.result.error;
  EXPECT_EQ(r1.backend, "b");
  EXPECT_TRUE(r1.fallback);
  EXPECT_EQ(r1.result.content, "answer from b");
  EXPECT_EQ(a_.chat_requests(), 1);  // 429 is not retried on the same backend
  EXPECT_NEAR(pool.cooldown_left_s(0), 5.0, 0.01);

  // Within the cooldown a is skipped without a request.
  a_.set_mode(Mode::kNormal);
  clock_.advance(4.0);
  PoolResult r2 = pool.chat(Tier::kPrimary, request(), {}, nullptr);
  EXPECT_EQ(r2.backend, "b");
  EXPECT_TRUE(r2.fallback);
  EXPECT_EQ(a_.chat_requests(), 1);
  ASSERT_FALSE(r2.notices.empty());
  EXPECT_NE(r2.notices[0].find("a skipped"), std::string::npos) << r2.notices[0];

  // After the cooldown a is tried again and answers as the first choice.
  clock_.advance(1.5);
  PoolResult r3 = pool.chat(Tier::kPrimary, request(), {}, nullptr);
  EXPECT_EQ(r3.backend, "a");
  EXPECT_FALSE(r3.fallback);
  EXPECT_EQ(r3.result.content, "answer from a");
  EXPECT_EQ(a_.chat_requests(), 2);
}

TEST_F(FailoverTest, RetryAfterHttpDate) {
  config_.backends = {backend("a", a_.url()), backend("b", b_.url())};
  BackendPool pool(config_, clock_.clocks());
  a_.set_mode(Mode::kRateLimited);
  std::time_t when = std::chrono::system_clock::to_time_t(clock_.system) + 42;
  char date[64];
  std::tm tm{};
  gmtime_r(&when, &tm);
  std::strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  a_.set_retry_after(date);
  PoolResult r = pool.chat(Tier::kPrimary, request(false), {}, nullptr);
  EXPECT_EQ(r.backend, "b");
  EXPECT_NEAR(pool.cooldown_left_s(0), 42.0, 0.01);
}

TEST_F(FailoverTest, UnparseableRetryAfterUsesDefaultCooldown) {
  config_.backends = {backend("a", a_.url()), backend("b", b_.url())};
  BackendPool pool(config_, clock_.clocks());
  a_.set_mode(Mode::kRateLimited);
  a_.set_retry_after("later");
  EXPECT_EQ(pool.chat(Tier::kPrimary, request(), {}, nullptr).backend, "b");
  EXPECT_NEAR(pool.cooldown_left_s(0), 30.0, 0.01);
}

TEST_F(FailoverTest, TimingOutBackend) {
  config_.backends = {backend("a", a_.url()), backend("b", b_.url())};
  BackendPool pool(config_, clock_.clocks());
  a_.set_mode(Mode::kHang);
  auto t0 = std::chrono::steady_clock::now();
  PoolResult r = pool.chat(Tier::kPrimary, request(), {}, nullptr);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.result.ok()) << r.result.error;
  EXPECT_EQ(r.backend, "b");
  EXPECT_TRUE(r.fallback);
  EXPECT_LT(s, 3.0);
  EXPECT_EQ(a_.chat_requests(), 1);  // a timeout is not retried
  EXPECT_NEAR(pool.cooldown_left_s(0), 30.0, 0.01);
  ASSERT_FALSE(r.notices.empty());
  EXPECT_NE(r.notices[0].find("timeout"), std::string::npos) << r.notices[0];
}

TEST_F(FailoverTest, DownBackend) {
  config_.backends = {backend("gone", testing::closed_port_url()), backend("b", b_.url())};
  BackendPool pool(config_, clock_.clocks());
  PoolResult r = pool.chat(Tier::kPrimary, request(), {}, nullptr);
  ASSERT_TRUE(r.result.ok()) << r.result.error;
  EXPECT_EQ(r.backend, "b");
  EXPECT_TRUE(r.fallback);
  EXPECT_GT(pool.cooldown_left_s(0), 29.0);
  EXPECT_EQ(pool.backend(0).stats.failures, 1);
}

TEST_F(FailoverTest, ServerErrorIsRetriedThenFailsOver) {
  config_.backends = {backend("a", a_.url()), backend("b", b_.url())};
  BackendPool pool(config_, clock_.clocks());
  a_.set_mode(Mode::kServerError);
  PoolResult r = pool.chat(Tier::kPrimary, request(), {}, nullptr);
  EXPECT_EQ(a_.chat_requests(), 2);  // first try + 1 retry
  EXPECT_EQ(r.backend, "b");
  EXPECT_TRUE(r.fallback);
}

TEST_F(FailoverTest, AllBackendsFailing) {
  config_.backends = {backend("a", a_.url()), backend("gone", testing::closed_port_url())};
  BackendPool pool(config_, clock_.clocks());
  a_.set_mode(Mode::kRateLimited);
  PoolResult r = pool.chat(Tier::kPrimary, request(), {}, nullptr);
  EXPECT_FALSE(r.result.ok());
  PoolResult again = pool.chat(Tier::kPrimary, request(), {}, nullptr);
  EXPECT_FALSE(again.result.ok());
  EXPECT_NE(again.result.error.find("cooling down"), std::string::npos) << again.result.error;
  EXPECT_EQ(a_.chat_requests(), 1);
}

TEST_F(FailoverTest, TierChainsAndPinning) {
  config_.backends = {backend("big", b_.url(), Tier::kHeavy), backend("main", a_.url(), Tier::kPrimary),
                      backend("small", b_.url(), Tier::kFast)};
  BackendPool pool(config_, clock_.clocks());
  EXPECT_EQ(pool.chain(Tier::kFast), (std::vector<size_t>{2, 1, 0}));
  EXPECT_EQ(pool.chain(Tier::kPrimary), (std::vector<size_t>{1, 0, 2}));
  EXPECT_EQ(pool.chain(Tier::kHeavy), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(pool.chat(Tier::kFast, request(), {}, nullptr).backend, "small");
  EXPECT_EQ(pool.chat(Tier::kHeavy, request(), {}, nullptr).backend, "big");
  ASSERT_TRUE(pool.pin("small"));
  EXPECT_EQ(pool.chain(Tier::kHeavy).front(), 2u);
  PoolResult pinned = pool.chat(Tier::kPrimary, request(), {}, nullptr);
  EXPECT_EQ(pinned.backend, "small");
  EXPECT_FALSE(pinned.fallback);
  EXPECT_FALSE(pool.pin("nope"));
  ASSERT_TRUE(pool.pin(""));
  EXPECT_EQ(pool.chain(Tier::kPrimary).front(), 1u);
}

TEST_F(FailoverTest, NoFailoverAfterPartialOutput) {
  // The first backend streams slowly and the client times out mid-stream: the text already shown
  // cannot be taken back, so the pool reports the failure instead of answering twice.
  a_.add_rule({{"hello"}, {}, "partial answer that stalls", 800, 8});
  config_.backends = {backend("a", a_.url()), backend("b", b_.url())};
  BackendPool pool(config_, clock_.clocks());
  std::string shown;
  PoolResult r = pool.chat(
      Tier::kPrimary, request(), [&](std::string_view t, bool) { shown += t; }, nullptr);
  EXPECT_FALSE(r.result.ok());
  EXPECT_EQ(r.backend, "a");
  EXPECT_EQ(b_.chat_requests(), 0);
  EXPECT_FALSE(shown.empty());
}

}  // namespace
}  // namespace sniper::agent
