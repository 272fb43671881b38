// SPDX-License-Identifier: MIT
// `sniper serve` over HTTP against the real tiny model stories260K: the OpenAI wire format of
// /v1/completions and /v1/chat/completions (plain and streamed), greedy output equal to the
// engine's generate(), every class of bad input answered with the right status and error
// object while the server keeps serving, authentication, and the info endpoints.
#include <gtest/gtest.h>

#include "engine/generate.h"
#include "server/test_server.h"

namespace sniper::server {
namespace {

const std::string kModel = "stories260K";

class ServerHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ServerOptions o;
    o.n_slots = 2;
    o.context_dir = ::testing::TempDir() + "/sniper_http_ctx";
    server_ = new TestServer(models_dir() + "/stories260K.gguf", o, 256);
    ASSERT_TRUE(server_->ok()) << server_->error();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static TestServer* server_;

  httplib::Result post(const std::string& path, const std::string& body) {
    return server_->client()->Post(path.c_str(), body, "application/json");
  }
  // A small valid request must still work (the server survived the previous one).
  void expect_still_serving() {
    auto r = post("/v1/completions", R"({"prompt":"Once","max_tokens":3,"temperature":0})");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
  }
  void expect_error(const httplib::Result& r, int status, const std::string& type, const char* param = nullptr,
                    const char* code = nullptr) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << r->body;
    auto j = TJson::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r->body;
    ASSERT_TRUE(j.contains("error")) << r->body;
    const TJson& e = j["error"];
    EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << r->body;
    EXPECT_EQ(e["type"], type) << r->body;
    ASSERT_TRUE(e.contains("param") && e.contains("code")) << r->body;
    if (param != nullptr) {
      EXPECT_EQ(e["param"], param) << r->body;
    }
    if (code != nullptr) {
      EXPECT_EQ(e["code"], code) << r->body;
    }
    expect_still_serving();
  }
};
TestServer* ServerHttp::server_ = nullptr;

TEST_F(ServerHttp, GreedyCompletionEqualsGenerate) {
  const std::string prompt = "Once upon a time, there was a";
  auto r = post("/v1/completions",
                TJson{{"model", kModel}, {"prompt", prompt}, {"max_tokens", 40}, {"temperature", 0}}.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = TJson::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(j["model"], kModel);
  EXPECT_TRUE(j["created"].is_number_integer());
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["index"], 0);

  // The same through the engine directly (what `sniper run --temp 0 -n 40` prints).
  Model& model = server_->model();
  SessionOptions so;
  so.n_ctx = 256;
  so.n_threads = 2;
  auto session = Session::create(model, so);
  ASSERT_TRUE(session.ok());
  auto tok = model.tokenizer();
  ASSERT_TRUE(tok.ok());
  GenerateOptions go;
  go.n_predict = 40;
  go.sampler.temperature = 0;
  std::string expected;
  auto stats = generate(**session, **tok, (*tok)->encode(prompt, true, true), go, [&](std::string_view t) {
    expected.append(t);
    return true;
  });
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(j["choices"][0]["text"], expected);
  EXPECT_EQ(j["choices"][0]["finish_reason"], stats->finish_reason == "eog" ? "stop" : "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], stats->n_gen);
  EXPECT_EQ(j["usage"]["prompt_tokens"], static_cast<int64_t>((*tok)->encode(prompt, true, true).size()));
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"].get<int64_t>() + stats->n_gen);

  // Streamed, the pieces concatenate to the same text.
  auto s = post("/v1/completions", TJson{{"prompt", TJson::array({prompt})},
                                         {"max_tokens", 40},
                                         {"temperature", 0},
                                         {"stream", true},
                                         {"stream_options", {{"include_usage", true}}}}
                                       .dump());
  ASSERT_TRUE(s);
  ASSERT_EQ(s->status, 200);
  EXPECT_EQ(s->get_header_value("Content-Type").rfind("text/event-stream", 0), 0u);
  bool done = false;
  auto chunks = parse_sse(s->body, &done);
  EXPECT_TRUE(done);
  ASSERT_GE(chunks.size(), 2u);
  std::string text;
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i]["object"], "text_completion");
    ASSERT_EQ(chunks[i]["choices"].size(), 1u);
    text += chunks[i]["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, expected);
  EXPECT_FALSE(chunks[chunks.size() - 2]["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(chunks.back()["choices"].empty());
  EXPECT_EQ(chunks.back()["usage"]["completion_tokens"], stats->n_gen);
}

TEST_F(ServerHttp, StopStringsAndSeededSampling) {
  auto r =
      post("/v1/completions", R"({"prompt":"Once upon a time","max_tokens":60,"temperature":0,"stop":[" the","."]})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = TJson::parse(r->body);
  const std::string text = j["choices"][0]["text"];
  EXPECT_EQ(text.find(" the"), std::string::npos) << text;
  EXPECT_EQ(text.find('.'), std::string::npos) << text;
  const std::string req =
      R"({"prompt":"Once upon a time","max_tokens":30,"temperature":0.9,"top_p":0.9,"seed":7,"presence_penalty":0.5,"frequency_penalty":0.2})";
  auto a = post("/v1/completions", req);
  auto b = post("/v1/completions", req);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(TJson::parse(a->body)["choices"][0]["text"], TJson::parse(b->body)["choices"][0]["text"]);
}

TEST_F(ServerHttp, ChatWithoutTemplateStreamsAndReturns) {
  const std::string body =
      R"({"messages":[{"role":"system","content":"Tell a story."},{"role":"user","content":"Once upon a time"}],"max_tokens":20,"temperature":0})";
  auto r = post("/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = TJson::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  const std::string content = j["choices"][0]["message"]["content"];
  EXPECT_FALSE(content.empty());
  EXPECT_EQ(j["usage"]["completion_tokens"].get<int64_t>() + j["usage"]["prompt_tokens"].get<int64_t>(),
            j["usage"]["total_tokens"].get<int64_t>());

  TJson stream_body = TJson::parse(body);
  stream_body["stream"] = true;
  auto s = post("/v1/chat/completions", stream_body.dump());
  ASSERT_TRUE(s);
  ASSERT_EQ(s->status, 200);
  bool done = false;
  auto chunks = parse_sse(s->body, &done);
  EXPECT_TRUE(done);
  ASSERT_GE(chunks.size(), 2u);
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "assistant");
  std::string streamed;
  for (const auto& c : chunks) {
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    EXPECT_EQ(c["id"], chunks[0]["id"]);
    const auto& d = c["choices"][0]["delta"];
    if (d.contains("content")) streamed += d["content"].get<std::string>();
  }
  EXPECT_EQ(streamed, content);
  EXPECT_EQ(chunks.back()["choices"][0]["finish_reason"], j["choices"][0]["finish_reason"]);
}

TEST_F(ServerHttp, MaxTokensIsCappedByTheContext) {
  auto r = post("/v1/completions", R"({"prompt":"Once","max_tokens":1000000000000,"temperature":0,"stop":[]})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = TJson::parse(r->body);
  EXPECT_LE(j["usage"]["total_tokens"].get<int64_t>(), 257);
}

TEST_F(ServerHttp, BadInputsGiveOpenAiErrors) {
  expect_error(post("/v1/chat/completions", "{not json"), 400, "invalid_request_error");
  expect_error(post("/v1/chat/completions", "[1,2]"), 400, "invalid_request_error");
  expect_error(post("/v1/chat/completions", ""), 400, "invalid_request_error");
  expect_error(post("/v1/chat/completions", R"({"model":"stories260K"})"), 400, "invalid_request_error", "messages");
  expect_error(post("/v1/chat/completions", R"({"messages":"hi"})"), 400, "invalid_request_error", "messages");
  expect_error(post("/v1/chat/completions", R"({"messages":[]})"), 400, "invalid_request_error", "messages");
  expect_error(post("/v1/chat/completions", R"({"messages":[{"role":"robot","content":"x"}]})"), 400,
               "invalid_request_error");
  expect_error(post("/v1/chat/completions", R"({"messages":[{"role":"user","content":42}]})"), 400,
               "invalid_request_error");
  const std::string msg = R"("messages":[{"role":"user","content":"hi"}])";
  expect_error(post("/v1/chat/completions", "{" + msg + R"(,"temperature":"hot"})"), 400, "invalid_request_error",
               "temperature");
  expect_error(post("/v1/chat/completions", "{" + msg + R"(,"temperature":1e9})"), 400, "invalid_request_error",
               "temperature");
  expect_error(post("/v1/chat/completions", "{" + msg + R"(,"top_p":7})"), 400, "invalid_request_error", "top_p");
  expect_error(post("/v1/chat/completions", "{" + msg + R"(,"max_tokens":-5})"), 400, "invalid_request_error",
               "max_tokens");
  expect_error(post("/v1/chat/completions", "{" + msg + R"(,"max_tokens":2.5})"), 400, "invalid_request_error",
               "max_tokens");
  expect_error(post("/v1/chat/completions", "{" + msg + R"(,"n":3})"), 400, "invalid_request_error", "n");
  expect_error(post("/v1/chat/completions", "{" + msg + R"(,"logprobs":true})"), 400, "invalid_request_error",
               "logprobs");
  expect_error(post("/v1/chat/completions", "{" + msg + R"(,"stop":5})"), 400, "invalid_request_error", "stop");
  expect_error(post("/v1/chat/completions", "{" + msg + R"(,"seed":"x"})"), 400, "invalid_request_error", "seed");
  expect_error(post("/v1/chat/completions", "{" + msg + R"(,"stream":"yes"})"), 400, "invalid_request_error", "stream");
  expect_error(post("/v1/chat/completions", "{" + msg + R"(,"model":"gpt-4"})"), 404, "invalid_request_error", "model",
               "model_not_found");
  expect_error(post("/v1/completions", R"({"prompt":"a","echo":true})"), 400, "invalid_request_error", "echo");
  expect_error(post("/v1/completions", R"({"prompt":["a","b"]})"), 400, "invalid_request_error", "prompt");
  expect_error(post("/v1/completions", R"({"max_tokens":3})"), 400, "invalid_request_error", "prompt");
  // Invalid UTF-8, raw and as an escaped lone surrogate.
  expect_error(post("/v1/completions", std::string("{\"prompt\":\"a\xff\xfe b\"}")), 400, "invalid_request_error");
  expect_error(post("/v1/completions", R"({"prompt":"a\ud800b"})"), 400, "invalid_request_error");
  // A prompt longer than the context (256 tokens): the numbers are in the message.
  std::string long_prompt;
  for (int i = 0; i < 400; ++i) long_prompt += "once upon a time ";
  auto r = post("/v1/completions", TJson{{"prompt", long_prompt}}.dump());
  expect_error(r, 400, "invalid_request_error", "prompt", "context_length_exceeded");
  EXPECT_NE(r->body.find("256"), std::string::npos) << r->body;
  // Oversized body.
  expect_error(post("/v1/completions", std::string(5u << 20, ' ')), 413, "invalid_request_error");
  // Unknown route and wrong method.
  auto cli = server_->client();
  expect_error(cli->Get("/v1/nope"), 404, "invalid_request_error");
  expect_error(cli->Get("/v1/chat/completions"), 405, "invalid_request_error");
  expect_error(cli->Post("/v1/models", "{}", "application/json"), 405, "invalid_request_error");
  expect_error(cli->Get("/v1/models/gpt-4"), 404, "invalid_request_error", "model", "model_not_found");
}

// Issue 26: 100,000 nested objects (0.6 MB, under the body cap) or arrays used to
// overflow the stack of a recursive walk. Now the parser stops at 64 levels: 400 naming the
// limit, and the server keeps serving. The same for chat messages and tools.
// Issue 42: Ollama's routes that have no counterpart here (model management) and unknown /api/
// routes answer in Ollama's error shape, {"error": "..."}, so its clients show the message.
TEST_F(ServerHttp, OllamaErrorsInOllamasShape) {
  auto cli = server_->client();
  const auto expect_ollama_error = [](const httplib::Result& r, int status, const std::string& needle) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << r->body;
    const TJson j = TJson::parse(r->body);
    ASSERT_TRUE(j.is_object() && j.size() == 1 && j["error"].is_string()) << r->body;
    EXPECT_NE(j["error"].get<std::string>().find(needle), std::string::npos) << r->body;
  };
  for (const char* path : {"/api/pull", "/api/push", "/api/create", "/api/copy"}) {
    SCOPED_TRACE(path);
    expect_ollama_error(cli->Post(path, R"({"model":"llama3"})", "application/json"), 501, "not supported");
  }
  expect_ollama_error(cli->Delete("/api/delete", R"({"model":"llama3"})", "application/json"), 501, "not supported");
  expect_ollama_error(cli->Post("/api/nope", "{}", "application/json"), 404, "no route POST /api/nope");
  expect_ollama_error(cli->Get("/api/chat"), 405, "allowed: POST");
}

TEST_F(ServerHttp, DeepNestingIsRejectedWhileParsing) {
  std::string objects = R"({"prompt":"hi","x":)";
  for (int i = 0; i < 100000; ++i) objects += R"({"a":)";
  objects += "1" + std::string(100000, '}') + "}";
  ASSERT_GT(objects.size(), 600000u);
  for (const std::string& body :
       {objects, R"({"prompt":)" + std::string(100000, '[') + R"("hi")" + std::string(100000, ']') + "}",
        R"({"messages":[{"role":"user","content":"hi"}],"tools":)" + std::string(100000, '[') +
            std::string(100000, ']') + "}"}) {
    for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
      auto r = post(path, body);
      expect_error(r, 400, "invalid_request_error");
      EXPECT_NE(r->body.find("deeper than 64 levels"), std::string::npos) << r->body.substr(0, 300);
    }
  }
  // 64 levels are still parsed (and then judged on their fields).
  std::string ok64 =
      R"({"prompt":"Once","max_tokens":2,"temperature":0,"x":)" + std::string(63, '[') + std::string(63, ']') + "}";
  auto r = post("/v1/completions", ok64);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

TEST_F(ServerHttp, InfoEndpoints) {
  auto cli = server_->client();
  auto h = cli->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(TJson::parse(h->body), TJson({{"status", "ok"}}));
  auto m = cli->Get("/v1/models");
  ASSERT_TRUE(m);
  auto mj = TJson::parse(m->body);
  EXPECT_EQ(mj["object"], "list");
  ASSERT_EQ(mj["data"].size(), 1u);
  EXPECT_EQ(mj["data"][0]["id"], kModel);
  EXPECT_EQ(mj["data"][0]["object"], "model");
  auto p = cli->Get("/props");
  ASSERT_TRUE(p);
  auto pj = TJson::parse(p->body);
  EXPECT_EQ(pj["model"], kModel);
  EXPECT_EQ(pj["n_ctx"], 256);
  EXPECT_EQ(pj["slots"], 2);
  EXPECT_EQ(pj["residency"], "resident");
  EXPECT_EQ(pj["arch"], "llama");
  EXPECT_GT(pj["n_params"].get<int64_t>(), 200000);
  EXPECT_EQ(pj["chat_template"], false);
  EXPECT_TRUE(pj.contains("model_path") && pj.contains("memory_budget_bytes"));
  expect_still_serving();
  auto mt = cli->Get("/metrics");
  ASSERT_TRUE(mt);
  EXPECT_EQ(mt->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u);
  for (const char* name : {"sniper_requests_total{endpoint=\"completions\",status=\"ok\"} ",
                           "sniper_requests_active ",
                           "sniper_requests_queued ",
                           "sniper_slots_total 2",
                           "sniper_slots_busy ",
                           "sniper_prompt_tokens_total ",
                           "sniper_generated_tokens_total ",
                           "sniper_prefill_tokens_per_second ",
                           "sniper_decode_tokens_per_second ",
                           "sniper_time_to_first_token_seconds ",
                           "sniper_time_to_first_token_seconds_sum ",
                           "sniper_time_to_first_token_seconds_count ",
                           "sniper_rss_bytes ",
                           "sniper_peak_rss_bytes ",
                           "sniper_memory_budget_bytes ",
                           "sniper_expert_cache_hit_rate ",
                           "sniper_expert_cache_hits_total ",
                           "sniper_expert_cache_misses_total ",
                           "sniper_moe_experts_read_total ",
                           "sniper_moe_experts_per_sequence_total ",
                           "sniper_ssd_read_bytes_total ",
                           "sniper_ssd_read_gbps ",
                           "sniper_io_queue_depth ",
                           "sniper_uptime_seconds ",
                           "# TYPE sniper_requests_total counter",
                           "# HELP sniper_rss_bytes"}) {
    EXPECT_NE(mt->body.find(name), std::string::npos) << name;
  }
  EXPECT_EQ(mt->body.find("sniper_requests_total{endpoint=\"completions\",status=\"ok\"} 0\n"), std::string::npos);
  auto ui = cli->Get("/");
  ASSERT_TRUE(ui);
  EXPECT_EQ(ui->status, 200);
  EXPECT_EQ(ui->get_header_value("Content-Type").rfind("text/html", 0), 0u);
  EXPECT_FALSE(ui->body.empty());
}

TEST(ServerAuth, ApiKeyIsRequiredExceptForUiAndHealth) {
  ServerOptions o;
  o.api_key = "s3cret";
  o.context_dir = ::testing::TempDir() + "/sniper_auth_ctx";
  TestServer server(models_dir() + "/stories260K.gguf", o, 128);
  ASSERT_TRUE(server.ok()) << server.error();
  auto cli = server.client();
  auto h = cli->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto ui = cli->Get("/");
  ASSERT_TRUE(ui);
  EXPECT_EQ(ui->status, 200);
  for (const char* path : {"/v1/models", "/metrics", "/props", "/v1/context"}) {
    auto r = cli->Get(path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << path;
    EXPECT_EQ(TJson::parse(r->body)["error"]["type"], "authentication_error");
  }
  auto wrong = cli->Get("/v1/models", {{"Authorization", "Bearer nope"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto post = cli->Post("/v1/completions", R"({"prompt":"a","max_tokens":2})", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 401);
  cli->set_bearer_token_auth("s3cret");
  auto good = cli->Get("/v1/models");
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200);
  auto gen = cli->Post("/v1/completions", R"({"prompt":"a","max_tokens":2})", "application/json");
  ASSERT_TRUE(gen);
  EXPECT_EQ(gen->status, 200) << gen->body;
}

// --context-shift: each slot goes on past its context (keeping the prompt's first tokens),
// where without it the context ends the completion.
TEST(ServerContextShift, SlotsGenerateThePastContext) {
  for (bool shift : {true, false}) {
    ServerOptions o;
    o.context_shift = shift;
    o.n_keep = 2;
    o.n_slots = 2;
    o.context_dir = ::testing::TempDir() + "/sniper_shift_ctx";
    TestServer server(models_dir() + "/stories260K.gguf", o, 64);
    ASSERT_TRUE(server.ok()) << server.error();
    auto cli = server.client();
    auto r = cli->Post("/v1/completions",
                       R"({"prompt":"Once upon a time","max_tokens":200,"temperature":0,"ignore_eos":true})",
                       "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    auto j = TJson::parse(r->body);
    EXPECT_EQ(j["usage"]["completion_tokens"].get<int64_t>(), shift ? 200 : 60) << "shift " << shift;
    EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  }
}

}  // namespace
}  // namespace sniper::server
