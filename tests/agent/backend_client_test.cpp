// SPDX-License-Identifier: MIT
// OpenAI client against the scripted server: SSE parsing, streamed and plain replies, request
// body (thinking control), cancellation mid-stream, error classification.
#include "agent/backend_client.h"

#include <gtest/gtest.h>

#include <thread>

#include "agent/scripted_server.h"

namespace sniper::agent {
namespace {

using testing::Mode;
using testing::Rule;
using testing::ScriptedServer;

BackendConfig backend(const std::string& name, const std::string& url, Tier role = Tier::kPrimary) {
  BackendConfig b;
  b.name = name;
  b.url = url;
  b.role = role;
  return b;
}

ChatRequest user_request(const std::string& text, bool stream) {
  ChatRequest r;
  r.messages = nlohmann::json::array({{{"role", "user"}, {"content", text}}});
  r.stream = stream;
  return r;
}

TEST(Sse, SplitsEventsAcrossFeeds) {
  SseParser p;
  std::vector<std::string> events;
  auto on = [&](const std::string& d) { events.push_back(d); };
  std::string stream = ": comment\r\ndata: {\"a\":1}\r\n\r\nevent: x\ndata: line1\ndata: line2\n\ndata:[DONE]\n\n";
  for (char c : stream) p.feed(std::string_view(&c, 1), on);
  p.finish(on);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0], "{\"a\":1}");
  EXPECT_EQ(events[1], "line1\nline2");
  EXPECT_EQ(events[2], "[DONE]");
}

TEST(Url, SplitAndEndpoints) {
  std::string origin, path;
  ASSERT_TRUE(split_url("https://api.example.com/v1/", &origin, &path));
  EXPECT_EQ(origin, "https://api.example.com");
  EXPECT_EQ(path, "/v1");
  EXPECT_EQ(endpoint_path(path, "chat/completions"), "/v1/chat/completions");
  ASSERT_TRUE(split_url("http://127.0.0.1:8000", &origin, &path));
  EXPECT_EQ(origin, "http://127.0.0.1:8000");
  EXPECT_EQ(endpoint_path(path, "models"), "/v1/models");
  EXPECT_EQ(endpoint_path("/api", "models"), "/api/v1/models");
  EXPECT_FALSE(split_url("ftp://x", &origin, &path));
  EXPECT_FALSE(split_url("http://", &origin, &path));
}

TEST(BackendClient, StreamsDeltas) {
  ScriptedServer server;
  server.add_rule({{"hello"}, {}, "Hi there, streaming works.", 0, 4});
  ASSERT_TRUE(server.start());
  BackendClient client(backend("s", server.url()), 2, 5);
  std::string seen;
  int deltas = 0;
  ChatResult r = client.chat(
      user_request("hello", true),
      [&](std::string_view t, bool reasoning) {
        EXPECT_FALSE(reasoning);
        seen += t;
        ++deltas;
      },
      nullptr);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.content, "Hi there, streaming works.");
  EXPECT_EQ(seen, r.content);
  EXPECT_EQ(deltas, 7);
  EXPECT_EQ(r.completion_tokens, 7);  // from usage
  EXPECT_EQ(r.prompt_tokens, 10);
  EXPECT_EQ(r.finish_reason, "stop");
}

TEST(BackendClient, PlainReplyAndRequestBody) {
  ScriptedServer server;
  server.set_default_reply("plain answer");
  ASSERT_TRUE(server.start());
  BackendConfig b = backend("s", server.url());
  b.model = "m1";
  BackendClient client(b, 2, 5);
  ChatRequest req = user_request("x", false);
  req.thinking = false;
  req.temperature = 0.0;
  req.max_tokens = 7;
  ChatResult r = client.chat(req, {}, nullptr);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.content, "plain answer");
  auto sent = server.requests().at(0);
  EXPECT_EQ(sent["model"], "m1");
  EXPECT_EQ(sent["chat_template_kwargs"]["enable_thinking"], false);
  EXPECT_EQ(sent["max_tokens"], 7);
  EXPECT_EQ(sent["stream"], false);
  // A backend that rejects unknown fields gets no chat_template_kwargs.
  b.template_kwargs = false;
  EXPECT_FALSE(BackendClient(b, 2, 5).request_body(req).contains("chat_template_kwargs"));
  auto models = client.list_models();
  ASSERT_TRUE(models.ok()) << models.error().message;
  EXPECT_EQ(models.value(), std::vector<std::string>{"scripted"});
}

// A hostile backend's reply nested 100,000 deep is refused while parsing (issue 26): an
// error, never a stack overflow in the walks after the parse.
TEST(BackendClient, DeeplyNestedRepliesAreRefused) {
  ScriptedServer server;
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  server.add_page("/deep/models", R"({"data":)" + deep + "}", "application/json");
  ASSERT_TRUE(server.start());
  BackendClient client(backend("s", server.url() + "/deep"), 2, 5);
  auto models = client.list_models();
  EXPECT_FALSE(models.ok());
}

TEST(BackendClient, CancelStopsASlowStream) {
  ScriptedServer server;
  server.add_rule({{"long"}, {}, std::string(400, 'x'), 20, 2});  // 200 chunks, 20 ms apart = 4 s
  ASSERT_TRUE(server.start());
  BackendClient client(backend("s", server.url()), 2, 5);
  std::atomic<bool> cancel{false};
  size_t got = 0;
  ChatResult r = client.chat(
      user_request("long story", true),
      [&](std::string_view t, bool) {
        got += t.size();
        if (got >= 20) cancel.store(true);
      },
      &cancel);
  EXPECT_EQ(r.failure, FailureKind::kCancelled);
  EXPECT_LT(r.elapsed_s, 2.0);
  EXPECT_GE(r.content.size(), 20u);
  EXPECT_LT(r.content.size(), 400u);
}

TEST(BackendClient, ClassifiesFailures) {
  ScriptedServer server;
  ASSERT_TRUE(server.start());
  BackendClient client(backend("s", server.url()), 1, 0.5);
  server.set_mode(Mode::kRateLimited);
  server.set_retry_after("7");
  ChatResult r = client.chat(user_request("x", true), {}, nullptr);
  EXPECT_EQ(r.failure, FailureKind::kRateLimited);
  EXPECT_EQ(r.http_status, 429);
  EXPECT_EQ(r.retry_after, "7");
  EXPECT_NE(r.error.find("rate limited"), std::string::npos) << r.error;
  server.set_mode(Mode::kServerError);
  EXPECT_EQ(client.chat(user_request("x", true), {}, nullptr).failure, FailureKind::kServer);
  server.set_mode(Mode::kHang);
  ChatResult hang = client.chat(user_request("x", true), {}, nullptr);
  EXPECT_EQ(hang.failure, FailureKind::kTimeout) << hang.error;
  EXPECT_LT(hang.elapsed_s, 3.0);
  BackendClient down(backend("d", testing::closed_port_url()), 1, 0.5);
  EXPECT_EQ(down.chat(user_request("x", true), {}, nullptr).failure, FailureKind::kDown);
  server.stop();
}

}  // namespace
}  // namespace sniper::agent
