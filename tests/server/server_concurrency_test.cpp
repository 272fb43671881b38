// SPDX-License-Identifier: MIT
// The scheduler under load: several clients stream at once and all finish; a full queue
// answers 503; a client that disconnects mid-stream is cancelled and frees its slot; a
// request extending an earlier one reuses that slot's KV prefix and evaluates only new tokens.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "server/test_server.h"
#include "test_wait.h"

namespace sniper::server {
namespace {

// POST /v1/completions: 8 greedy tokens after `prompt`; expects 200 and returns the response.
TJson complete_greedy(httplib::Client& cli, const std::string& prompt) {
  auto r = cli.Post("/v1/completions", TJson{{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}}.dump(),
                    "application/json");
  EXPECT_TRUE(r);
  if (!r) return TJson::object();
  EXPECT_EQ(r->status, 200);
  return TJson::parse(r->body);
}

TEST(ServerConcurrency, FourClientsStreamAtOnce) {
  ServerOptions o;
  o.n_slots = 2;
  o.context_dir = ::testing::TempDir() + "/sniper_conc_ctx";
  TestServer server(models_dir() + "/stories260K.gguf", o, 256);
  ASSERT_TRUE(server.ok()) << server.error();
  std::vector<std::thread> threads;
  std::vector<std::string> texts(4);
  std::vector<int> statuses(4, 0);
  std::vector<char> dones(4, 0);  // one byte each: vector<bool> packs them into one shared word
  threads.reserve(4);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      auto cli = server.client();
      const TJson body = {{"messages", {{{"role", "user"}, {"content", "Once upon a time " + std::to_string(i)}}}},
                          {"max_tokens", 40},
                          {"temperature", 0.8},
                          {"seed", i},
                          {"stream", true},
                          {"ignore_eos", true}};
      auto r = cli->Post("/v1/chat/completions", body.dump(), "application/json");
      if (!r) return;
      statuses[i] = r->status;
      bool done = false;
      for (const auto& c : parse_sse(r->body, &done)) {
        const auto& d = c["choices"][0]["delta"];
        if (d.contains("content")) texts[i] += d["content"].get<std::string>();
      }
      dones[i] = done;
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(statuses[i], 200) << i;
    EXPECT_TRUE(dones[i]) << i;
    EXPECT_FALSE(texts[i].empty()) << i;
  }
  EXPECT_TRUE(wait_for_metric(server, "sniper_requests_total{endpoint=\"chat\",status=\"ok\"} 4\n"));
  EXPECT_TRUE(wait_for_metric(server, "sniper_slots_busy 0\n"));
}

TEST(ServerConcurrency, FullQueueAnswers503AndDisconnectFreesTheSlot) {
  ServerOptions o;
  o.n_slots = 1;
  o.queue_capacity = 0;
  o.context_dir = ::testing::TempDir() + "/sniper_conc_ctx2";
  // 2000 tokens take ~1.2 s here (500 took 0.12 s, short enough for the whole request to finish
  // before a loaded CI machine ran the hang-up below, so it was never cancelled).
  TestServer server(models_dir() + "/stories260K.gguf", o, 2048);
  ASSERT_TRUE(server.ok()) << server.error();
  const std::string long_req =
      TJson{{"prompt", "Once upon a time"}, {"max_tokens", 2000}, {"ignore_eos", true}, {"stream", true}}.dump();
  test::Event got_first, release;
  std::thread streamer([&] {
    auto cli = server.client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = long_req;
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
      got_first.set();
      release.wait_for(std::chrono::seconds(60));
      return false;  // hang up mid-stream
    };
    auto r = cli->send(req);
    (void)r;
  });
  if (!got_first.wait_for(std::chrono::seconds(60))) {
    release.set();
    streamer.join();
    FAIL() << "the streamed request sent nothing in 60 s";
  }
  // The only slot is busy and there is no queue: 503 with the OpenAI error shape.
  auto busy = server.client()->Post("/v1/completions", R"({"prompt":"a","max_tokens":2})", "application/json");
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->status, 503) << busy->body;
  EXPECT_EQ(TJson::parse(busy->body)["error"]["type"], "server_error");
  release.set();
  streamer.join();
  // The disconnect is noticed at the next token: the job is cancelled and the slot freed.
  EXPECT_TRUE(wait_for_metric(server, "sniper_requests_total{endpoint=\"completions\",status=\"cancelled\"} 1\n"));
  EXPECT_TRUE(wait_for_metric(server, "sniper_slots_busy 0\n"));
  auto after = server.client()->Post("/v1/completions", R"({"prompt":"a","max_tokens":2})", "application/json");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200) << after->body;
  auto metrics = server.client()->Get("/metrics");
  ASSERT_TRUE(metrics);
  // Far fewer than 2000 tokens were generated for the cancelled request.
  const size_t at = metrics->body.find("\nsniper_generated_tokens_total ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_LT(std::stoll(metrics->body.substr(at + 31)), 1500);
}

TEST(ServerConcurrency, ExtendingAPromptReusesTheSlotsPrefix) {
  ServerOptions o;
  o.n_slots = 2;
  o.context_dir = ::testing::TempDir() + "/sniper_conc_ctx3";
  TestServer server(models_dir() + "/stories260K.gguf", o, 512);
  ASSERT_TRUE(server.ok()) << server.error();
  auto cli = server.client();
  auto complete = [&](const std::string& prompt) { return complete_greedy(*cli, prompt); };
  const std::string base =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park";
  auto a = complete(base);
  EXPECT_EQ(a["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  auto other = complete("The big dog ran");  // goes to the other, least recently used slot
  EXPECT_EQ(other["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  auto b = complete(base + ". One day, she saw a bird");
  const int64_t n_a = a["usage"]["prompt_tokens"];
  const int64_t cached = b["usage"]["prompt_tokens_details"]["cached_tokens"];
  const int64_t n_b = b["usage"]["prompt_tokens"];
  EXPECT_GE(cached, n_a);  // the whole first prompt (and maybe some of its reply) is reused
  EXPECT_LT(cached, n_b);
  // The identical prompt again: everything but the last token is reused.
  auto c = complete(base + ". One day, she saw a bird");
  EXPECT_EQ(c["usage"]["prompt_tokens_details"]["cached_tokens"], n_b - 1);
  EXPECT_EQ(c["choices"][0]["text"], b["choices"][0]["text"]);
  EXPECT_TRUE(wait_for_metric(server, "sniper_prompt_tokens_cached_total " + std::to_string(cached + n_b - 1) + "\n"));
}

// A hybrid model's delta-net state cannot be cut back to a shared prefix: without state
// checkpoints (--ctx-checkpoints 0) a prompt that does not extend the slot's whole history is
// evaluated from the start (cached_tokens 0), with the same result as the first time.
TEST(ServerConcurrency, HybridModelRecomputesWithoutCheckpoints) {
  ServerOptions o;
  o.n_slots = 1;
  o.session.n_checkpoints = 0;
  o.context_dir = ::testing::TempDir() + "/sniper_conc_ctx_hybrid";
  TestServer server(models_dir() + "/syn-qwen35moe-small.gguf", o, 256);
  ASSERT_TRUE(server.ok()) << server.error();
  auto cli = server.client();
  auto complete = [&](const std::string& prompt) { return complete_greedy(*cli, prompt); };
  const std::string base = "Once upon a time, there was a little girl named Lily";
  auto a = complete(base);
  EXPECT_EQ(a["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  auto b = complete(base);  // would reuse all but the last token on a KV-only model
  EXPECT_EQ(b["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_EQ(b["choices"][0]["text"], a["choices"][0]["text"]);
  auto c = complete(base + ". She loved to play");
  EXPECT_EQ(c["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  auto d = complete(base);
  EXPECT_EQ(d["choices"][0]["text"], a["choices"][0]["text"]);
}

// With state checkpoints a hybrid slot goes back to the checkpoint its prompt took
// kPromptCheckpointTail tokens before the end, evaluates only the rest, and answers as the first
// time (the same chunks from the same state: the same bits). The reuse shows in cached_tokens and
// the /metrics counters, and the checkpoints' memory in their gauges. (gemma4's sliding rings are
// llama.cpp's SWA cache size, 768 cells for the fixture's 16-token window: in this 256-token
// context they never wrap, so it reuses prefixes as a KV-only model does.)
TEST(ServerConcurrency, HybridModelReusesAStateCheckpoint) {
  for (const char* name : {"syn-qwen35moe-small.gguf"}) {
    SCOPED_TRACE(name);
    ServerOptions o;
    o.n_slots = 1;
    o.session.n_checkpoints = 4;
    o.session.checkpoint_interval = 512;  // only the prompt-end checkpoints
    o.context_dir = ::testing::TempDir() + "/sniper_conc_ctx_hybrid_cp";
    TestServer server(models_dir() + "/" + name, o, 256);
    ASSERT_TRUE(server.ok()) << server.error();
    auto cli = server.client();
    auto complete = [&](const std::string& prompt) { return complete_greedy(*cli, prompt); };
    const std::string base =
        "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends";
    auto a = complete(base);
    EXPECT_EQ(a["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    const int64_t n_a = a["usage"]["prompt_tokens"];
    ASSERT_GT(n_a, 32);
    const int64_t kept = n_a - kPromptCheckpointTail;
    auto b = complete(base);  // all but the last token shared: back to the checkpoint before the tail
    EXPECT_EQ(b["usage"]["prompt_tokens_details"]["cached_tokens"], kept);
    EXPECT_EQ(b["choices"][0]["text"], a["choices"][0]["text"]);
    auto c = complete(base + ". She saw a bird");  // departs after the prompt: the same checkpoint
    EXPECT_EQ(c["usage"]["prompt_tokens_details"]["cached_tokens"], kept);
    auto d = complete(base);
    EXPECT_EQ(d["choices"][0]["text"], a["choices"][0]["text"]);
    const int64_t cached_d = d["usage"]["prompt_tokens_details"]["cached_tokens"];
    EXPECT_GT(cached_d, 0);
    EXPECT_TRUE(
        wait_for_metric(server, "sniper_prompt_tokens_cached_total " + std::to_string(2 * kept + cached_d) + "\n"));
    auto metrics = cli->Get("/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_EQ(metrics->body.find("sniper_state_checkpoints 0\n"), std::string::npos) << metrics->body;
    EXPECT_EQ(metrics->body.find("sniper_state_checkpoint_bytes 0\n"), std::string::npos);
  }
}

}  // namespace
}  // namespace sniper::server
