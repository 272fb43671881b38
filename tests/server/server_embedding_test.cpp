// SPDX-License-Identifier: MIT
// The embedding routes (issue 42) on a synthetic qwen3 embedding model (pooling_type mean):
// /v1/embeddings (float and base64, batches of texts and token ids, usage), Ollama's /api/embed
// (truncate) and /api/embeddings give, bit for bit, the vectors engine/embedding.h computes for
// each input alone; bad inputs answer 400 naming the field in each API's error shape; serve
// --pooling overrides the file's pooling; and embeddings requested while other clients stream
// completions leave those texts equal to their solo texts, and every slot free afterwards.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <latch>
#include <thread>

#include "engine/embedding.h"
#include "server/test_server.h"
#include "synth/synth_model.h"
#include "synth/tiny_qwen3.h"
#include "test_temp_dir.h"

namespace sniper::server {
namespace {

constexpr int64_t kCtx = 256;

class ServerEmbedding : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The file name is the model's name the tests expect; the directory is this run's own.
    dir_ = new test::TempDir("server-embedding");
    path_ = new std::string(dir_->file("sniper_server_embedding.gguf"));
    SynthSpec spec = test::tiny_qwen3_spec();
    spec.pooling_type = 1;  // mean
    Status st = write_synth_model(spec, *path_, nullptr);
    ASSERT_TRUE(st.ok()) << st.error().message;
    server_ = new TestServer(*path_, options(), kCtx);
    ASSERT_TRUE(server_->ok()) << server_->error();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete path_;
    delete dir_;  // removes the model and the context directory
  }
  static ServerOptions options() {
    ServerOptions o;
    o.n_slots = 3;
    o.session.batch = 16;  // longer inputs run in several chunks
    o.context_dir = dir_->file("ctx");
    return o;
  }
  // What engine/embedding.h gives for `text` alone, in a session of the server's shape.
  static std::vector<float> solo(const std::string& text, Pooling pooling = Pooling::kMean) {
    ModelLoadOptions lo;
    lo.n_ctx = kCtx;
    auto model = Model::load(*path_, lo);
    EXPECT_TRUE(model.ok());
    SessionOptions so;
    so.n_ctx = kCtx;
    so.batch = 16;
    so.n_threads = 2;
    auto session = Session::create(**model, so);
    EXPECT_TRUE(session.ok());
    auto tokens = (*model)->tokenizer().value()->encode(text, true, true);
    auto v = embed_tokens(**session, tokens, pooling);
    EXPECT_TRUE(v.ok()) << v.error().message;
    return v.ok() ? *v : std::vector<float>();
  }
  static TJson post(const std::string& path, const TJson& body, int status = 200) {
    auto r = server_->client()->Post(path, body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return TJson();
    EXPECT_EQ(r->status, status) << path << " " << r->body;
    return TJson::parse(r->body);
  }
  static TestServer* server_;
  static test::TempDir* dir_;
  static std::string* path_;
};
TestServer* ServerEmbedding::server_ = nullptr;
test::TempDir* ServerEmbedding::dir_ = nullptr;
std::string* ServerEmbedding::path_ = nullptr;

std::vector<float> floats_of(const TJson& j) { return j.get<std::vector<float>>(); }

std::vector<float> floats_of_base64(const std::string& b64) {
  auto bytes = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::vector<uint8_t> raw;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : b64) {
    const int v = bytes(c);
    if (v < 0) break;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      raw.push_back(static_cast<uint8_t>(acc >> bits));
    }
  }
  std::vector<float> out(raw.size() / 4);
  std::memcpy(out.data(), raw.data(), out.size() * 4);  // little-endian host
  return out;
}

const char* kTexts[] = {"hello world", "A",
                        "a longer input that runs through more than one chunk of sixteen tokens, so the mean "
                        "sums rows from several forward passes"};

TEST_F(ServerEmbedding, OpenAiBatchEqualsEachInputAlone) {
  TJson j =
      post("/v1/embeddings", {{"input", {kTexts[0], kTexts[1], kTexts[2]}}, {"model", "sniper_server_embedding"}});
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["model"], "sniper_server_embedding");
  ASSERT_EQ(j["data"].size(), 3u);
  int64_t n_tokens = 0;
  auto tok = server_->model().tokenizer().value();
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(j["data"][i]["object"], "embedding");
    EXPECT_EQ(j["data"][i]["index"], i);
    EXPECT_EQ(floats_of(j["data"][i]["embedding"]), solo(kTexts[i])) << "input " << i;
    n_tokens += static_cast<int64_t>(tok->encode(kTexts[i], true, true).size());
  }
  EXPECT_EQ(j["usage"]["prompt_tokens"], n_tokens);
  EXPECT_EQ(j["usage"]["total_tokens"], n_tokens);
  // base64: the same floats, little-endian float32.
  TJson b = post("/v1/embeddings", {{"input", kTexts[2]}, {"encoding_format", "base64"}});
  ASSERT_TRUE(b["data"][0]["embedding"].is_string());
  EXPECT_EQ(floats_of_base64(b["data"][0]["embedding"]), solo(kTexts[2]));
  // Token ids: one input, and an array of inputs.
  const std::vector<int32_t> ids = tok->encode(kTexts[0], true, true);
  TJson t = post("/v1/embeddings", {{"input", ids}});
  EXPECT_EQ(floats_of(t["data"][0]["embedding"]), solo(kTexts[0]));
  TJson tt = post("/v1/embeddings", {{"input", {ids, ids}}, {"dimensions", 64}});
  ASSERT_EQ(tt["data"].size(), 2u);
  EXPECT_EQ(tt["data"][1]["embedding"], t["data"][0]["embedding"]);
}

TEST_F(ServerEmbedding, OllamaRoutes) {
  TJson j = post("/api/embed", {{"model", "sniper_server_embedding:latest"}, {"input", {kTexts[0], kTexts[1]}}});
  EXPECT_EQ(j["model"], "sniper_server_embedding:latest");
  ASSERT_EQ(j["embeddings"].size(), 2u);
  EXPECT_EQ(floats_of(j["embeddings"][0]), solo(kTexts[0]));
  EXPECT_EQ(floats_of(j["embeddings"][1]), solo(kTexts[1]));
  EXPECT_GT(j["total_duration"].get<int64_t>(), 0);
  EXPECT_GT(j["prompt_eval_count"].get<int64_t>(), 2);
  TJson old = post("/api/embeddings", {{"model", "sniper_server_embedding"}, {"prompt", kTexts[2]}});
  EXPECT_EQ(floats_of(old["embedding"]), solo(kTexts[2]));
  // Longer than the context: cut to it by default, an error with truncate false.
  std::string long_text;
  for (int i = 0; i < 300; ++i) long_text += " word";
  TJson cut = post("/api/embed", {{"model", "sniper_server_embedding"}, {"input", long_text}});
  EXPECT_EQ(cut["prompt_eval_count"], kCtx);
  TJson refused =
      post("/api/embed", {{"model", "sniper_server_embedding"}, {"input", long_text}, {"truncate", false}}, 400);
  EXPECT_NE(refused["error"].get<std::string>().find("tokens but the context holds 256"), std::string::npos)
      << refused.dump();
}

TEST_F(ServerEmbedding, BadInputsNameTheField) {
  struct Case {
    const char* path;
    TJson body;
    int status;
    const char* message;
  };
  std::string long_text;
  for (int i = 0; i < 300; ++i) long_text += " word";
  const Case cases[] = {
      {"/v1/embeddings", TJson::object(), 400, "input is required"},
      {"/v1/embeddings", {{"input", ""}}, 400, "input is an empty string"},
      {"/v1/embeddings", {{"input", TJson::array()}}, 400, "input is an empty array"},
      {"/v1/embeddings", {{"input", {"a", 5}}}, 400, "input[1] must be a string or an array of token ids"},
      {"/v1/embeddings", {{"input", {1, 2, 99999}}}, 400, "input[2] must be a token id in [0, 512)"},
      {"/v1/embeddings", {{"input", 7.5}}, 400, "input must be a string, an array of strings, or token ids"},
      {"/v1/embeddings", {{"input", {"a", long_text}}}, 400, "input[1] has 902 tokens but the context holds 256"},
      {"/v1/embeddings", {{"input", "a"}, {"encoding_format", "hex"}}, 400, "encoding_format must be"},
      {"/v1/embeddings", {{"input", "a"}, {"dimensions", 32}}, 400, "dimensions must be 64"},
      {"/v1/embeddings", {{"input", "a"}, {"model", "nope"}}, 404, "nope"},
      {"/api/embed", {{"input", "a"}}, 400, "model is required"},
      {"/api/embed", {{"model", "nope"}, {"input", "a"}}, 404, "model 'nope' not found"},
      {"/api/embed", {{"model", "sniper_server_embedding"}, {"input", {"a", 3}}}, 400, "input[1] must be a string"},
      {"/api/embed",
       {{"model", "sniper_server_embedding"}, {"input", "a"}, {"truncate", "yes"}},
       400,
       "truncate must be true or false"},
      {"/api/embeddings", {{"model", "sniper_server_embedding"}}, 400, "prompt is required"},
  };
  for (const Case& c : cases) {
    TJson j = post(c.path, c.body, c.status);
    const bool ollama = std::string(c.path).starts_with("/api/");
    const std::string message = ollama ? j["error"].get<std::string>() : j["error"]["message"].get<std::string>();
    EXPECT_NE(message.find(c.message), std::string::npos) << c.path << " " << c.body.dump() << " -> " << message;
    if (!ollama && c.status == 400) {
      EXPECT_FALSE(j["error"]["param"].is_null()) << j.dump();
    }
  }
  // Nothing was left running.
  EXPECT_EQ(server_->model().config().dim, 64);
  EXPECT_EQ(floats_of(post("/v1/embeddings", {{"input", kTexts[0]}})["data"][0]["embedding"]), solo(kTexts[0]));
}

TEST_F(ServerEmbedding, PoolingOverride) {
  ServerOptions o = options();
  o.pooling = Pooling::kLast;
  TestServer last(*path_, o, kCtx);
  ASSERT_TRUE(last.ok()) << last.error();
  auto r = last.client()->Post("/v1/embeddings", TJson{{"input", kTexts[2]}}.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::vector<float> got = floats_of(TJson::parse(r->body)["data"][0]["embedding"]);
  EXPECT_EQ(got, solo(kTexts[2], Pooling::kLast));
  EXPECT_NE(got, solo(kTexts[2], Pooling::kMean));
}

// Embeddings requested while completions stream: each completion's text equals its solo text,
// each embedding its solo vector, and every slot is free afterwards.
TEST_F(ServerEmbedding, AlongsideStreamingCompletions) {
  auto complete = [](const std::string& prompt) {
    TJson body = {{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0}, {"ignore_eos", true}, {"stream", true}};
    auto r = server_->client()->Post("/v1/completions", body.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200);
    bool done = false;
    std::string text;
    if (r) {
      for (const auto& c : parse_sse(r->body, &done)) text += c["choices"][0]["text"].get<std::string>();
    }
    EXPECT_TRUE(done);
    return text;
  };
  const std::string prompts[] = {"once upon a time", "the cat sat"};
  const std::string solo0 = complete(prompts[0]), solo1 = complete(prompts[1]);
  std::vector<float> want[3];
  for (int i = 0; i < 3; ++i) want[i] = solo(kTexts[i]);
  std::string texts[2];
  TJson embeds[4];
  std::latch go(6);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      go.arrive_and_wait();
      texts[i] = complete(prompts[i]);
    });
  }
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      go.arrive_and_wait();
      embeds[i] = post("/v1/embeddings", {{"input", {kTexts[i % 3], kTexts[(i + 1) % 3]}}});
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(texts[0], solo0);
  EXPECT_EQ(texts[1], solo1);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(embeds[i]["data"].size(), 2u) << embeds[i].dump();
    EXPECT_EQ(floats_of(embeds[i]["data"][0]["embedding"]), want[i % 3]) << i;
    EXPECT_EQ(floats_of(embeds[i]["data"][1]["embedding"]), want[(i + 1) % 3]) << i;
  }
  // finish() frees a slot's gauge before its result is published.
  auto m = server_->client()->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("sniper_slots_busy 0\n"), std::string::npos);
}

}  // namespace
}  // namespace sniper::server
