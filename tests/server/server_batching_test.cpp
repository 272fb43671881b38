// SPDX-License-Identifier: MIT
// Continuous batching under load (issue 42): 8 clients at once on 8 slots (streaming ones,
// stop strings, a grammar job, one that hangs up mid-stream) are served by shared passes
// (/metrics: more slots than passes), and each client's text equals the text it gets alone
// (greedy, a quantized model: each row's logits are its solo run's); the slots all come free
// and a request afterwards still answers its solo text (no slot leak, no cross-talk). The
// per-request latency histograms count every request.
#include <gtest/gtest.h>

#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "server/test_server.h"

namespace sniper::server {
namespace {

uint64_t metric_value(TestServer& s, const std::string& name) {
  auto r = s.client()->Get("/metrics");
  if (!r) return 0;
  const size_t at = r->body.find("\n" + name + " ");
  if (at == std::string::npos) return 0;
  return std::stoull(r->body.substr(at + name.size() + 2));
}

struct Request {
  std::string prompt;
  bool stream = false;
  std::string stop;      // "": none
  bool grammar = false;  // a GBNF grammar: lowercase words
  bool hang_up = false;  // streams and hangs up after the first piece
};

TJson body_of(const Request& q) {
  TJson b = {{"prompt", q.prompt},
             {"max_tokens", 24},
             {"temperature", 0},
             {"ignore_eos", true},
             {"stream", q.stream || q.hang_up}};
  if (q.hang_up) b["max_tokens"] = 2000;
  if (!q.stop.empty()) b["stop"] = TJson::array({q.stop});
  if (q.grammar) b["grammar"] = "root ::= [a-z ]+";
  return b;
}

// The text of one completion (streamed or not); empty on a hang-up.
std::string run(TestServer& server, const Request& q) {
  auto cli = server.client();
  if (q.hang_up) {
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = body_of(q).dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [](const char*, size_t, uint64_t, uint64_t) { return false; };
    (void)cli->send(req);
    return {};
  }
  auto r = cli->Post("/v1/completions", body_of(q).dump(), "application/json");
  EXPECT_TRUE(r);
  if (!r) return {};
  EXPECT_EQ(r->status, 200) << r->body;
  if (!q.stream) return TJson::parse(r->body)["choices"][0]["text"].get<std::string>();
  bool done = false;
  std::string text;
  for (const auto& c : parse_sse(r->body, &done)) text += c["choices"][0]["text"].get<std::string>();
  EXPECT_TRUE(done);
  return text;
}

TEST(ServerBatching, EightClientsGetTheirSoloTextsFromSharedPasses) {
  ServerOptions o;
  o.n_slots = 8;
  o.queue_capacity = 8;
  o.session.batch = 16;  // prompts of several clients split across passes
  o.context_dir = ::testing::TempDir() + "/sniper_batching_ctx";
  TestServer server(models_dir() + "/stories260K-Q8_0.gguf", o, 2048);
  ASSERT_TRUE(server.ok()) << server.error();
  std::vector<Request> reqs;
  const char* starts[] = {"Once upon a time", "The little dog", "Lily wanted to play with her ball in the park",
                          "Tom and Sam",      "One day a bird", "The sun was",
                          "A big red",        "Mom said"};
  for (int i = 0; i < 8; ++i) {
    Request q;
    q.prompt = starts[i];
    q.stream = i % 2 == 0;
    reqs.push_back(q);
  }
  reqs[6].grammar = true;
  reqs[7].hang_up = true;
  // Alone, one at a time.
  std::vector<std::string> solo(8);
  for (int i = 0; i < 7; ++i) solo[i] = run(server, reqs[i]);
  // Stop strings from the solo texts: the text ends right before them.
  for (int i : {2, 5}) {
    ASSERT_GT(solo[i].size(), 12u) << solo[i];
    reqs[i].stop = solo[i].substr(8, 4);
    solo[i] = solo[i].substr(0, solo[i].find(reqs[i].stop));
  }
  const uint64_t passes0 = metric_value(server, "sniper_batch_passes_total");
  const uint64_t seqs0 = metric_value(server, "sniper_batch_sequences_total");
  // All at once.
  std::vector<std::string> texts(8);
  std::latch go(8);
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      go.arrive_and_wait();
      texts[i] = run(server, reqs[i]);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 7; ++i) EXPECT_EQ(texts[i], solo[i]) << "client " << i;
  for (char ch : texts[6]) EXPECT_TRUE((ch >= 'a' && ch <= 'z') || ch == ' ') << texts[6];
  EXPECT_TRUE(wait_for_metric(server, "sniper_requests_total{endpoint=\"completions\",status=\"cancelled\"} 1\n"));
  EXPECT_TRUE(wait_for_metric(server, "sniper_slots_busy 0\n"));
  // Passes were shared: more slot-rows than passes.
  const uint64_t passes = metric_value(server, "sniper_batch_passes_total") - passes0;
  const uint64_t seqs = metric_value(server, "sniper_batch_sequences_total") - seqs0;
  EXPECT_GT(seqs, passes + passes / 2) << seqs << " sequences in " << passes << " passes";
  // Every slot is free again and serves a request as before.
  EXPECT_EQ(run(server, reqs[0]), solo[0]);
  EXPECT_TRUE(wait_for_metric(server, "sniper_slots_busy 0\n"));
  // Each of the 16 requests waited in the queue (or not) and produced a first token; the
  // tokens after it are inter-token samples.
  EXPECT_TRUE(wait_for_metric(server, "sniper_queue_seconds_count 16\n"));
  EXPECT_TRUE(wait_for_metric(server, "sniper_first_token_seconds_count 16\n"));
  EXPECT_GT(metric_value(server, "sniper_inter_token_seconds_count"), 100u);
}

}  // namespace
}  // namespace sniper::server
