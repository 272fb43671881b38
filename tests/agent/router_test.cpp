// SPDX-License-Identifier: MIT
// Routing-word parsing on messy model output, tier choice, the labelled routing set, config parsing
// and Retry-After parsing.
#include "agent/router.h"

#include <gtest/gtest.h>

#include <chrono>

#include "agent/config.h"
#include "agent/failover.h"
#include "agent/scripted_server.h"

namespace sniper::agent {
namespace {

TEST(ParseRoute, CleanWords) {
  EXPECT_EQ(parse_route("search"), Route::kSearch);
  EXPECT_EQ(parse_route("shell"), Route::kShell);
  EXPECT_EQ(parse_route("chat"), Route::kChat);
}

TEST(ParseRoute, MessyOutputs) {
  EXPECT_EQ(parse_route("Search."), Route::kSearch);
  EXPECT_EQ(parse_route("**shell**"), Route::kShell);
  EXPECT_EQ(parse_route("<think>the user wants a search maybe</think> chat"), Route::kChat);
  EXPECT_EQ(parse_route("<think>\nhmm shell?\n</think>\n\nSEARCH"), Route::kSearch);
  EXPECT_EQ(parse_route("  `shell`\n"), Route::kShell);
  EXPECT_EQ(parse_route("Answer: search!"), Route::kSearch);
  EXPECT_EQ(parse_route("\"Shell\""), Route::kShell);
  EXPECT_EQ(parse_route("route=search"), Route::kSearch);
  EXPECT_EQ(parse_route("{\"route\": \"shell\""), Route::kShell);            // broken JSON from a 2-bit model
  EXPECT_EQ(parse_route("reasoning about it</think>shell"), Route::kShell);  // think opened by the template
}

TEST(ParseRoute, FirstMatchingWordWins) {
  EXPECT_EQ(parse_route("shell or search"), Route::kShell);
  EXPECT_EQ(parse_route("I'd say search, not chat"), Route::kSearch);
}

TEST(ParseRoute, GarbageIsChat) {
  EXPECT_EQ(parse_route(""), Route::kChat);
  EXPECT_EQ(parse_route("asdkjh 12 ###"), Route::kChat);
  EXPECT_EQ(parse_route("searching shells"), Route::kChat);             // whole words only
  EXPECT_EQ(parse_route("<think>search search search"), Route::kChat);  // unterminated think block
  EXPECT_EQ(parse_route("\xff\xfe garbage \x01"), Route::kChat);
}

TEST(RoutingRequest, ThinkingOffGreedySmall) {
  ChatRequest r = routing_request("list my files");
  ASSERT_TRUE(r.thinking.has_value());
  EXPECT_FALSE(*r.thinking);
  ASSERT_TRUE(r.temperature.has_value());
  EXPECT_EQ(*r.temperature, 0.0);
  EXPECT_GT(r.max_tokens, 0);
  EXPECT_LE(r.max_tokens, 16);
  EXPECT_NE(r.messages.back()["content"].get<std::string>().find("list my files"), std::string::npos);
}

TEST(ChatTier, LengthAndKeywordsGoHeavyOnlyWhenAuto) {
  AgentConfig c;
  c.heavy_min_chars = 100;
  EXPECT_EQ(chat_tier(c, true, "hi"), Tier::kPrimary);
  EXPECT_EQ(chat_tier(c, true, std::string(150, 'a')), Tier::kHeavy);
  EXPECT_EQ(chat_tier(c, true, "Please explain it STEP BY STEP"), Tier::kHeavy);
  EXPECT_EQ(chat_tier(c, false, "Please explain it step by step"), Tier::kPrimary);
}

TEST(RoutingSet, ShippedSetIsBalancedAndParses) {
  std::string text = testing::read_test_file(SNIPER_AGENT_ROUTING_SET);
  ASSERT_FALSE(text.empty()) << SNIPER_AGENT_ROUTING_SET;
  auto set = parse_routing_set(text);
  ASSERT_TRUE(set.ok()) << set.error().message;
  int counts[kNumRoutes] = {};
  for (const auto& r : set.value()) counts[static_cast<int>(r.label)]++;
  EXPECT_GE(set->size(), 54u);
  for (int c : counts) {
    EXPECT_GE(c, 18);
    EXPECT_LE(c, 22);
  }
}

TEST(RoutingSet, BadLinesAreErrors) {
  EXPECT_FALSE(parse_routing_set("{\"text\": \"x\", \"route\": \"web\"}\n").ok());
  EXPECT_FALSE(parse_routing_set("not json\n").ok());
  auto ok = parse_routing_set("# comment\n\n{\"text\": \"x\", \"route\": \"shell\"}\n");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->size(), 1u);
}

TEST(RoutingEval, ConfusionMatrixAgainstScriptedBackend) {
  testing::ScriptedServer server;
  // Routes every request with "disk" to shell, "news" to search, the rest to chat.
  server.add_rule({{"Answer with one word", "disk"}, {}, "Shell.", 0, 6});
  server.add_rule({{"Answer with one word", "news"}, {}, "<think>\n\n</think>\n\n**search**", 0, 6});
  server.add_rule({{"Answer with one word"}, {}, "chat", 0, 6});
  ASSERT_TRUE(server.start());
  AgentConfig config;
  config.backends.push_back({"s", server.url(), "", Tier::kFast, true, "", "", true, std::nullopt});
  BackendPool pool(config);
  std::vector<LabelledRequest> set = {{"free disk space", Route::kShell},
                                      {"latest news", Route::kSearch},
                                      {"tell me a joke", Route::kChat},
                                      {"weather today", Route::kSearch}};  // misrouted to chat
  RoutingEval e = evaluate_routing(pool, set, nullptr, nullptr);
  EXPECT_EQ(e.total, 4);
  EXPECT_EQ(e.correct, 3);
  EXPECT_EQ(e.confusion[static_cast<int>(Route::kSearch)][static_cast<int>(Route::kChat)], 1);
  EXPECT_EQ(e.failed_requests, 0);
  std::ostringstream out;
  print_routing_eval(e, out);
  EXPECT_NE(out.str().find("75.0%"), std::string::npos) << out.str();
  // The routing requests were sent with thinking off and temperature 0.
  auto reqs = server.requests();
  ASSERT_FALSE(reqs.empty());
  EXPECT_EQ(reqs[0]["chat_template_kwargs"]["enable_thinking"], false);
  EXPECT_EQ(reqs[0]["temperature"], 0.0);
  EXPECT_EQ(reqs[0]["stream"], false);
}

TEST(Config, ParsesBackendsAndRejectsTypos) {
  setenv("SNIPER_TEST_KEY", "secret", 1);
  auto c = parse_config(R"({
    "backends": [
      {"name": "small", "url": "http://127.0.0.1:8001", "role": "fast"},
      {"name": "cloud", "url": "https://api.example.com/v1", "role": "heavy", "model": "big", "api_key_env": "SNIPER_TEST_KEY"}
    ],
    "cooldown_s": 12, "retries": 2
  })");
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->backends.size(), 2u);
  EXPECT_EQ(c->backends[0].role, Tier::kFast);
  EXPECT_TRUE(c->backends[0].local);
  EXPECT_FALSE(c->backends[1].local);
  EXPECT_FALSE(c->backends[1].template_kwargs);
  EXPECT_EQ(c->backends[1].api_key, "secret");
  EXPECT_EQ(c->cooldown_s, 12);
  EXPECT_EQ(c->retries, 2);
  EXPECT_FALSE(parse_config(R"({"cooldwn_s": 3})").ok());
  EXPECT_FALSE(parse_config(R"({"backends": [{"name": "x", "url": "ftp://x"}]})").ok());
  EXPECT_FALSE(parse_config(R"({"backends": [{"name": "x", "url": "http://x", "role": "huge"}]})").ok());
  EXPECT_FALSE(parse_config(R"({"retries": -1})").ok());
  // A config nested 100,000 deep is refused while parsing, naming the limit (issue 26).
  auto deep = parse_config("{\"x\":" + std::string(100000, '[') + std::string(100000, ']') + "}");
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.error().message.find("max_depth"), std::string::npos) << deep.error().message;
}

TEST(Config, ExampleConfigParses) {
  std::string text = testing::read_test_file(SNIPER_AGENT_EXAMPLE_CONFIG);
  ASSERT_FALSE(text.empty());
  auto c = parse_config(text);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_GE(c->backends.size(), 3u);
}

TEST(RetryAfter, SecondsAndHttpDates) {
  auto now = std::chrono::system_clock::from_time_t(784111777);  // Sun, 06 Nov 1994 08:49:37 GMT
  EXPECT_EQ(parse_retry_after("3", now), 3.0);
  EXPECT_EQ(parse_retry_after(" 120 ", now), 120.0);
  auto d = parse_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", now);
  ASSERT_TRUE(d.has_value());
  EXPECT_NEAR(*d, 30.0, 1e-6);
  auto rfc850 = parse_retry_after("Sunday, 06-Nov-94 08:49:47 GMT", now);
  ASSERT_TRUE(rfc850.has_value());
  EXPECT_NEAR(*rfc850, 10.0, 1e-6);
  EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now), 0.0);  // in the past
  EXPECT_FALSE(parse_retry_after("soon", now).has_value());
  EXPECT_FALSE(parse_retry_after("-5", now).has_value());
  EXPECT_FALSE(parse_retry_after("", now).has_value());
}

}  // namespace
}  // namespace sniper::agent
