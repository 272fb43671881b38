// SPDX-License-Identifier: MIT
// Several models behind one server (issue 25 point 3): two small synthetic models in a
// ModelPool behind HttpServer. Alternating requests keep at most --max-loaded models in memory
// (checked through /v1/models and /metrics), keep-alive unloads an idle model, an unknown model
// gets OpenAI's 404 model_not_found, concurrent requests to two models with one loaded at a
// time both complete, a slow load answers 503 after --load-timeout, and a model that fails to
// load answers 500 without disturbing the other.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "server/http_server.h"
#include "server/prometheus_text.h"
#include "synth/synth_model.h"
#include "synth/tiny_qwen3.h"
#include "test_wait.h"

namespace sniper::server {
namespace {

using TJson = nlohmann::json;
using namespace std::chrono_literals;

std::string write_model(const std::string& name, uint64_t seed) {
  std::string path = ::testing::TempDir() + "/sniper_pool_" + std::to_string(::getpid()) + "_" + name + ".gguf";
  SynthSpec spec = test::tiny_qwen3_spec();
  spec.seed = seed;
  Status st = write_synth_model(spec, path, nullptr);
  EXPECT_TRUE(st.ok()) << st.error().message;
  return path;
}

// A pool server on a free loopback port. `slow_ms` delays every load of model "b".
class PoolServer {
 public:
  PoolServer(std::vector<ModelSource> sources, ModelPoolOptions po, int slow_ms = 0) {
    signal(SIGPIPE, SIG_IGN);
    ServerOptions so;
    so.port = 0;
    so.session.n_ctx = 256;
    so.session.n_threads = 2;
    so.context_dir = ::testing::TempDir() + "/sniper_pool_" + std::to_string(::getpid()) + "_ctx";
    ModelFileLoader loader = [this, slow_ms](const ModelSource& src, uint64_t mem,
                                             SessionOptions* session) -> Result<std::unique_ptr<Model>> {
      if (src.name == "b" && slow_ms > 0) {
        b_load_started_.set();
        std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms));  // a slow disk, not a wait
      }
      ModelLoadOptions lo;
      lo.n_ctx = 256;
      lo.mem_bytes = mem;
      SNIPER_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(src.path, lo));
      session->n_checkpoints = model->plan().n_checkpoints;
      n_loads_.fetch_add(1);
      return model;
    };
    auto server = HttpServer::create(std::move(sources), po, loader, so);
    if (!server.ok()) {
      error_ = server.error().message;
      return;
    }
    server_ = std::move(server).value();
    auto port = server_->bind();
    if (!port.ok()) {
      error_ = port.error().message;
      return;
    }
    port_ = *port;
    thread_ = std::thread([this] { server_->run(); });
  }
  ~PoolServer() {
    if (server_ != nullptr) server_->stop();
    if (thread_.joinable()) thread_.join();
  }
  const std::string& error() const { return error_; }
  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_read_timeout(120, 0);
    return c;
  }
  int n_loads() const { return n_loads_.load(); }
  test::Event& b_load_started() { return b_load_started_; }

  // POST /v1/completions for `model`; returns the status (and body).
  int complete(const std::string& model, std::string* body = nullptr, int max_tokens = 4) const {
    TJson req = {{"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"temperature", 0}};
    if (!model.empty()) req["model"] = model;
    auto r = client()->Post("/v1/completions", req.dump(), "application/json");
    if (!r) return -1;
    if (body != nullptr) *body = r->body;
    return r->status;
  }
  // name -> loaded, from GET /v1/models.
  std::map<std::string, bool> loaded() const {
    std::map<std::string, bool> out;
    auto r = client()->Get("/v1/models");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
    if (!r || r->status != 200) return out;
    const TJson body = TJson::parse(r->body);
    for (const TJson& m : body["data"]) out[m["id"].get<std::string>()] = m["loaded"].get<bool>();
    return out;
  }
  PromMetrics metrics() const {
    auto r = client()->Get("/metrics");
    EXPECT_TRUE(r && r->status == 200);
    auto m = parse_prometheus_text(r ? r->body : "");
    EXPECT_TRUE(m.ok());
    return m.ok() ? *m : PromMetrics();
  }

 private:
  std::string error_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> n_loads_{0};
  test::Event b_load_started_;  // set when a load of model "b" begins (slow_ms > 0)
};

class ModelPoolServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    a_ = new std::string(write_model("a", 1));
    b_ = new std::string(write_model("b", 2));
  }
  static void TearDownTestSuite() {
    std::filesystem::remove(*a_);
    std::filesystem::remove(*b_);
    delete a_;
    delete b_;
  }
  static std::vector<ModelSource> sources() { return {{"a", *a_, 0}, {"b", *b_, 0}}; }
  static std::string* a_;
  static std::string* b_;
};
std::string* ModelPoolServer::a_ = nullptr;
std::string* ModelPoolServer::b_ = nullptr;

int n_loaded(const std::map<std::string, bool>& m) {
  int n = 0;
  for (const auto& [name, loaded] : m) n += loaded ? 1 : 0;
  return n;
}

TEST_F(ModelPoolServer, AlternatingRequestsKeepOneModelLoaded) {
  ModelPoolOptions po;
  po.max_loaded = 1;
  po.keep_alive_s = -1;
  po.mem_bytes = uint64_t{512} << 20;
  PoolServer s(sources(), po);
  ASSERT_EQ(s.error(), "");
  // Nothing is loaded before the first request; both are listed.
  auto before = s.loaded();
  ASSERT_EQ(before.size(), 2u);
  EXPECT_EQ(n_loaded(before), 0);
  for (int i = 0; i < 6; ++i) {
    const std::string name = i % 2 == 0 ? "a" : "b";
    std::string body;
    ASSERT_EQ(s.complete(name, &body), 200) << body;
    EXPECT_EQ(TJson::parse(body)["model"], name);
    auto now = s.loaded();
    EXPECT_TRUE(now[name]) << name;
    EXPECT_EQ(n_loaded(now), 1) << "after request " << i;
  }
  PromMetrics m = s.metrics();
  EXPECT_EQ(m.get("sniper_models_loaded"), 1);
  EXPECT_EQ(m.get("sniper_model_swaps_total"), 5);  // every request after the first evicted the other model
  EXPECT_EQ(m.get("sniper_model_loads_total", 0, {{"model", "a"}}), 3);
  EXPECT_EQ(m.get("sniper_model_loads_total", 0, {{"model", "b"}}), 3);
  EXPECT_GT(m.get("sniper_model_memory_bytes", 0, {{"model", "b"}}), 0);
  EXPECT_EQ(m.get("sniper_model_memory_bytes", 0, {{"model", "a"}}), 0);
  EXPECT_GT(m.get("sniper_model_load_seconds", 0, {{"model", "a"}}), 0);
  EXPECT_EQ(s.n_loads(), 6);
  // The share of the budget each model is planned for: all of it with one loaded at a time.
  auto r = s.client()->Get("/v1/models/b");
  ASSERT_TRUE(r && r->status == 200);
  TJson b = TJson::parse(r->body);
  EXPECT_EQ(b["budget_bytes"], uint64_t{512} << 20);
  EXPECT_LE(b["memory_bytes"].get<uint64_t>(), uint64_t{512} << 20);
  EXPECT_EQ(b["state"], "loaded");
  EXPECT_GT(b["loaded_at"].get<int64_t>(), 0);
  EXPECT_EQ(b["expires_at"], 0);  // keep-alive -1: never
}

TEST_F(ModelPoolServer, TwoLoadedShareTheBudget) {
  ModelPoolOptions po;
  po.max_loaded = 2;
  po.keep_alive_s = -1;
  po.mem_bytes = uint64_t{512} << 20;
  PoolServer s(sources(), po);
  ASSERT_EQ(s.error(), "");
  ASSERT_EQ(s.complete("a"), 200);
  ASSERT_EQ(s.complete("b"), 200);
  ASSERT_EQ(s.complete("a"), 200);
  EXPECT_EQ(n_loaded(s.loaded()), 2);
  EXPECT_EQ(s.n_loads(), 2);
  EXPECT_EQ(s.metrics().get("sniper_model_swaps_total"), 0);
  auto r = s.client()->Get("/v1/models/a");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_EQ(TJson::parse(r->body)["budget_bytes"], uint64_t{256} << 20);
}

TEST_F(ModelPoolServer, KeepAliveUnloadsAnIdleModel) {
  ModelPoolOptions po;
  po.max_loaded = 2;
  po.keep_alive_s = 0.5;
  PoolServer s(sources(), po);
  ASSERT_EQ(s.error(), "");
  ASSERT_EQ(s.complete("a"), 200);
  auto r = s.client()->Get("/v1/models/a");
  ASSERT_TRUE(r && r->status == 200);
  TJson a = TJson::parse(r->body);
  if (a["loaded"].get<bool>()) {
    EXPECT_GT(a["expires_at"].get<int64_t>(), 0);
  }
  // "loaded" turns false when the unload starts; the counter moves when it has finished (state
  // "unloaded"), so wait for that.
  bool unloaded = false;
  for (int i = 0; i < 100 && !unloaded; ++i) {
    std::this_thread::sleep_for(100ms);
    auto models = s.client()->Get("/v1/models/a");
    unloaded = models && models->status == 200 && TJson::parse(models->body)["state"] == "unloaded";
  }
  EXPECT_TRUE(unloaded) << "model a still loaded 10 s after a 0.5 s keep-alive";
  PromMetrics m = s.metrics();
  EXPECT_EQ(m.get("sniper_model_unloads_total", -1, {{"reason", "keep_alive"}}), 1);
  EXPECT_EQ(m.get("sniper_models_loaded"), 0);
  // It loads again on the next request.
  ASSERT_EQ(s.complete("a"), 200);
  EXPECT_EQ(s.n_loads(), 2);
}

TEST_F(ModelPoolServer, KeepAliveZeroUnloadsRightAfterTheRequest) {
  ModelPoolOptions po;
  po.keep_alive_s = 0;
  PoolServer s(sources(), po);
  ASSERT_EQ(s.error(), "");
  ASSERT_EQ(s.complete("b"), 200);
  bool unloaded = false;
  for (int i = 0; i < 50 && !unloaded; ++i) {
    unloaded = n_loaded(s.loaded()) == 0;
    if (!unloaded) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(unloaded);
}

// Ollama's keep_alive overrides the pool's for that model: 0 unloads after the request, a
// negative value never, a duration is the idle time (expires_at in /v1/models).
TEST_F(ModelPoolServer, OllamaKeepAliveSetsTheModelsKeepAlive) {
  ModelPoolOptions po;
  po.max_loaded = 2;
  po.keep_alive_s = -1;
  PoolServer s(sources(), po);
  ASSERT_EQ(s.error(), "");
  auto generate = [&](const std::string& model, const TJson& keep_alive) {
    TJson req = {{"model", model},
                 {"prompt", "Once upon a time"},
                 {"stream", false},
                 {"options", {{"num_predict", 2}, {"temperature", 0}}}};
    if (!keep_alive.is_null()) req["keep_alive"] = keep_alive;
    auto r = s.client()->Post("/api/generate", req.dump(), "application/json");
    return r ? r->status : -1;
  };
  ASSERT_EQ(generate("a:latest", 0), 200);
  ASSERT_EQ(generate("b", "1h"), 200);
  bool unloaded = false;
  for (int i = 0; i < 50 && !unloaded; ++i) {
    unloaded = !s.loaded()["a"];
    if (!unloaded) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(unloaded) << "keep_alive 0 left model a loaded";
  auto r = s.client()->Get("/v1/models/b");
  ASSERT_TRUE(r && r->status == 200);
  TJson b = TJson::parse(r->body);
  EXPECT_TRUE(b["loaded"].get<bool>());
  const int64_t ahead = b["expires_at"].get<int64_t>() - static_cast<int64_t>(std::time(nullptr));
  EXPECT_GT(ahead, 3500);
  EXPECT_LE(ahead, 3601);
  // Negative: never expires.
  ASSERT_EQ(generate("b", -1), 200);
  r = s.client()->Get("/v1/models/b");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_EQ(TJson::parse(r->body)["expires_at"].get<int64_t>(), 0);
  // Unknown: Ollama's 404.
  EXPECT_EQ(generate("nope", nullptr), 404);
}

TEST_F(ModelPoolServer, UnknownModelIsOpenAIsNotFound) {
  ModelPoolOptions po;
  PoolServer s(sources(), po);
  ASSERT_EQ(s.error(), "");
  std::string body;
  EXPECT_EQ(s.complete("nope", &body), 404);
  TJson j = TJson::parse(body);
  EXPECT_EQ(j["error"]["code"], "model_not_found");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "model");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("'a', 'b'"), std::string::npos) << body;
  auto r = s.client()->Post("/v1/chat/completions", R"({"model":"nope","messages":[{"role":"user","content":"hi"}]})",
                            "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(TJson::parse(r->body)["error"]["code"], "model_not_found");
  r = s.client()->Get("/v1/models/nope");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(s.n_loads(), 0);
  // A model field that is not a string is a 400 (context routes) or a schema error.
  r = s.client()->Post("/v1/context/save", R"({"name":"x","model":7,"prompt":"hi"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
}

TEST_F(ModelPoolServer, ConcurrentRequestsToTwoModelsWithOneLoadedBothComplete) {
  ModelPoolOptions po;
  po.max_loaded = 1;
  po.keep_alive_s = -1;
  PoolServer s(sources(), po);
  ASSERT_EQ(s.error(), "");
  for (int round = 0; round < 3; ++round) {
    int status_a = 0, status_b = 0;
    std::string body_a, body_b;
    std::thread ta([&] { status_a = s.complete("a", &body_a, 24); });
    std::thread tb([&] { status_b = s.complete("b", &body_b, 24); });
    ta.join();
    tb.join();
    EXPECT_EQ(status_a, 200) << body_a;
    EXPECT_EQ(status_b, 200) << body_b;
    EXPECT_LE(n_loaded(s.loaded()), 1);
  }
  EXPECT_GE(s.metrics().get("sniper_model_swaps_total"), 3);
}

TEST_F(ModelPoolServer, SlowLoadAnswers503AfterTheLoadTimeoutAndOthersKeepServing) {
  ModelPoolOptions po;
  po.max_loaded = 2;
  po.keep_alive_s = -1;
  po.load_timeout_s = 1.5;  // far above a normal load of these models (tens of ms)
  PoolServer s(sources(), po, /*slow_ms=*/4000);
  ASSERT_EQ(s.error(), "");
  ASSERT_EQ(s.complete("a"), 200);
  std::string body;
  int status_b = 0;
  std::thread tb([&] { status_b = s.complete("b", &body); });
  // While b loads, a still answers.
  EXPECT_TRUE(s.b_load_started().wait_for(10s)) << "b's load did not start";
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(s.complete("a"), 200);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3000ms);  // not behind b's 4 s load
  tb.join();
  EXPECT_EQ(status_b, 503) << body;
  EXPECT_EQ(TJson::parse(body)["error"]["code"], "model_load_timeout");
  EXPECT_EQ(s.metrics().get("sniper_model_wait_timeouts_total"), 1);
  // The load goes on and later requests find b loaded.
  bool loaded = false;
  for (int i = 0; i < 100 && !loaded; ++i) {
    std::this_thread::sleep_for(100ms);
    loaded = s.loaded()["b"];
  }
  EXPECT_TRUE(loaded);
  EXPECT_EQ(s.complete("b"), 200);
}

TEST_F(ModelPoolServer, AModelThatFailsToLoadAnswers500AndTheOtherStillWorks) {
  const std::string bad = ::testing::TempDir() + "/sniper_pool_" + std::to_string(::getpid()) + "_bad.gguf";
  {
    std::ofstream f(bad, std::ios::binary);
    f << "GGUF this is not a model";
  }
  ModelPoolOptions po;
  po.keep_alive_s = -1;
  PoolServer s({{"a", *a_, 0}, {"bad", bad, 0}}, po);
  ASSERT_EQ(s.error(), "");
  ASSERT_EQ(s.complete("a"), 200);
  std::string body;
  EXPECT_EQ(s.complete("bad", &body), 500);
  TJson j = TJson::parse(body);
  EXPECT_EQ(j["error"]["code"], "model_load_failed");
  EXPECT_EQ(j["error"]["type"], "server_error");
  // Retried (and failing again) on the next request, never served from a half-loaded state.
  EXPECT_EQ(s.complete("bad", &body), 500);
  EXPECT_EQ(s.metrics().get("sniper_model_load_failures_total"), 2);
  ASSERT_EQ(s.complete("a"), 200);
  auto r = s.client()->Get("/v1/models/bad");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_FALSE(TJson::parse(r->body)["loaded"].get<bool>());
  EXPECT_TRUE(TJson::parse(r->body).contains("last_error"));
  std::filesystem::remove(bad);
}

TEST_F(ModelPoolServer, RequestsWithoutAModelGoToTheDefaultAndPropsDoesNotLoad) {
  ModelPoolOptions po;
  po.keep_alive_s = -1;
  PoolServer s(sources(), po);
  ASSERT_EQ(s.error(), "");
  auto r = s.client()->Get("/props");
  ASSERT_TRUE(r && r->status == 200);
  TJson p = TJson::parse(r->body);
  EXPECT_EQ(p["model"], "a");  // the first by name before any use
  EXPECT_FALSE(p["loaded"].get<bool>());
  EXPECT_EQ(s.n_loads(), 0);
  ASSERT_EQ(s.complete("b"), 200);
  std::string body;
  ASSERT_EQ(s.complete("", &body), 200);  // the model used last
  EXPECT_EQ(TJson::parse(body)["model"], "b");
  r = s.client()->Get("/props");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_TRUE(TJson::parse(r->body)["loaded"].get<bool>());
}

}  // namespace
}  // namespace sniper::server
