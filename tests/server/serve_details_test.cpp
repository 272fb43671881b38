// SPDX-License-Identifier: MIT
// The details of `sniper serve` a first user meets: the per-request log line (text and JSON, the
// routes left out without --verbose, the record a request's model and job fill in), the server's
// sampling defaults for the fields a request leaves out (each API's own names, explicit values
// win), --alias names and "*" over HTTP, IPv6 URLs, Ollama's quantization level from
// general.file_type and the SHA-256 digest computed in the background and cached, Anthropic's
// count_tokens, and the `timings` every reply carries.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <httplib.h>

#include "golden/shared_dir.h"
#include "server/http_server.h"
#include "server/model_facts.h"
#include "server/request_defaults.h"
#include "server/request_log.h"
#include "server/serve_flags.h"

namespace sniper::server {
namespace {

using TJson = nlohmann::json;

TEST(RequestLog, TextAndJsonLines) {
  RequestRecord r;
  r.client = "127.0.0.1";
  r.method = "POST";
  r.path = "/v1/chat/completions";
  r.model = "qwen3";
  r.status = 200;
  r.prompt_tokens = 12;
  r.cached_tokens = 4;
  r.completion_tokens = 16;
  r.finish = "stop";
  r.user_agent = "curl/8";
  const int64_t t = 1764405655123;  // 2025-11-29T08:40:55.123Z
  EXPECT_EQ(format_request_record(r, 842.4, LogFormat::kText, false, t),
            "2025-11-29T08:40:55.123Z 127.0.0.1 \"POST /v1/chat/completions\" 200 model=qwen3 tokens=12+16 cached=4 "
            "finish=stop 842ms");
  const TJson j = TJson::parse(format_request_record(r, 842.44, LogFormat::kJson, true, t));
  EXPECT_EQ(j["time"], "2025-11-29T08:40:55.123Z");
  EXPECT_EQ(j["status"], 200);
  EXPECT_EQ(j["model"], "qwen3");
  EXPECT_EQ(j["prompt_tokens"], 12);
  EXPECT_EQ(j["completion_tokens"], 16);
  EXPECT_EQ(j["finish"], "stop");
  EXPECT_DOUBLE_EQ(j["duration_ms"].get<double>(), 842.4);
  EXPECT_EQ(j["user_agent"], "curl/8");
  // A request without a model or a generation; a client that went away; hostile bytes stay on one line.
  RequestRecord g;
  g.client = "::1";
  g.method = "GET";
  g.path = "/v1/context\n\"x";
  g.status = 404;
  g.complete = false;
  const std::string line = format_request_record(g, 3, LogFormat::kText, false, t);
  EXPECT_EQ(line, "2025-11-29T08:40:55.123Z ::1 \"GET /v1/context\\x0a\\\"x\" 404 3ms (client gone before the end)");
  EXPECT_TRUE(is_polled_route("GET", "/metrics"));
  EXPECT_TRUE(is_polled_route("GET", "/health"));
  EXPECT_FALSE(is_polled_route("POST", "/v1/chat/completions"));
  EXPECT_FALSE(parse_log_format("xml").ok());
}

TEST(RequestDefaults, AddedUnderEachApisNamesWhereMissing) {
  SamplingDefaults d;
  d.temperature = 0.3;
  d.top_k = 20;
  d.seed = 7;
  d.max_tokens = 64;
  auto openai = apply_sampling_defaults("POST", "/v1/chat/completions", R"({"messages":[],"temperature":1.5})", d);
  ASSERT_TRUE(openai.has_value());
  const TJson o = TJson::parse(*openai);
  EXPECT_EQ(o["temperature"], 1.5);  // the request's own value wins
  EXPECT_EQ(o["top_k"], 20);
  EXPECT_EQ(o["seed"], 7);
  EXPECT_EQ(o["max_tokens"], 64);
  auto newer = apply_sampling_defaults("POST", "/v1/completions", R"({"prompt":"x","max_completion_tokens":5})", d);
  ASSERT_TRUE(newer.has_value());
  EXPECT_FALSE(TJson::parse(*newer).contains("max_tokens"));
  auto ollama = apply_sampling_defaults("POST", "/api/chat", R"({"model":"m","options":{"top_k":3}})", d);
  ASSERT_TRUE(ollama.has_value());
  const TJson ol = TJson::parse(*ollama);
  EXPECT_EQ(ol["options"]["top_k"], 3);
  EXPECT_EQ(ol["options"]["temperature"], 0.3);
  EXPECT_EQ(ol["options"]["num_predict"], 64);
  EXPECT_FALSE(ol.contains("temperature"));
  auto anthropic = apply_sampling_defaults("POST", "/v1/messages", R"({"model":"m","max_tokens":9})", d);
  ASSERT_TRUE(anthropic.has_value());
  const TJson a = TJson::parse(*anthropic);
  EXPECT_EQ(a["temperature"], 0.3);
  EXPECT_EQ(a["max_tokens"], 9);
  EXPECT_FALSE(a.contains("seed"));
  // Left alone: other routes, bodies the route must refuse itself, nothing to add.
  EXPECT_FALSE(apply_sampling_defaults("POST", "/v1/context/save", R"({"name":"x"})", d).has_value());
  EXPECT_FALSE(apply_sampling_defaults("POST", "/v1/chat/completions", "[1,2]", d).has_value());
  EXPECT_FALSE(apply_sampling_defaults("POST", "/v1/chat/completions", "{\"a\":", d).has_value());
  EXPECT_FALSE(apply_sampling_defaults("POST", "/api/generate", R"({"options":3})", d).has_value());
  EXPECT_FALSE(apply_sampling_defaults("POST", "/v1/chat/completions", "{}", SamplingDefaults()).has_value());
}

TEST(ServeFlags, AliasesAndUrls) {
  auto a = parse_aliases({"gpt-4o,claude-3", "*"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, (std::vector<std::string>{"gpt-4o", "claude-3", "*"}));
  EXPECT_FALSE(parse_aliases({"a,,b"}).ok());
  EXPECT_FALSE(parse_aliases({"has space"}).ok());
  EXPECT_EQ(listen_url("127.0.0.1", 8000), "http://127.0.0.1:8000/");
  EXPECT_EQ(listen_url("::1", 8080), "http://[::1]:8080/");
  EXPECT_EQ(listen_url("::", 1), "http://[::]:1/");
}

TEST(ModelFacts, QuantizationLevelIsTheFileType) {
  EXPECT_EQ(file_type_name(15), "Q4_K_M");
  EXPECT_EQ(file_type_name(29), "IQ2_M");
  EXPECT_EQ(file_type_name(4), "");
  auto q4km = gguf_open(shared_dir() + "/models/syn-qwen3-Q4_K_M.gguf");
  ASSERT_TRUE(q4km.ok());
  EXPECT_EQ(quantization_level(*q4km), "Q4_K_M");
  // No general.file_type: the type holding most of the bytes.
  auto f32 = gguf_open(shared_dir() + "/models/stories260K.gguf");
  ASSERT_TRUE(f32.ok());
  EXPECT_EQ(quantization_level(*f32), "F32");
  EXPECT_EQ(model_part_paths("/m/x.gguf"), std::vector<std::string>{"/m/x.gguf"});
  EXPECT_EQ(model_part_paths("/m/x-00002-of-00002.gguf"),
            (std::vector<std::string>{"/m/x-00001-of-00002.gguf", "/m/x-00002-of-00002.gguf"}));
}

std::string wait_digest(FileDigests& d, const std::string& path) {
  for (int i = 0; i < 500; ++i) {
    const std::string s = d.digest(path);
    if (!s.empty()) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "";
}

TEST(ModelFacts, DigestIsTheFilesSha256ComputedOnceAndCached) {
  const std::string dir = ::testing::TempDir() + "/sniper_digest_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/models");
  const std::string file = dir + "/models/abc.gguf";
  std::ofstream(file) << "abc";
  const std::string want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";  // sha256("abc")
  {
    FileDigests d(dir + "/cache", /*min_cached_bytes=*/0);
    EXPECT_EQ(wait_digest(d, file), want);
  }
  {
    FileDigests d(dir + "/cache", 0);
    EXPECT_EQ(d.digest(file), want);  // from the cache at once
  }
  std::ofstream(file, std::ios::app) << "d";  // a changed file is hashed again
  {
    FileDigests d(dir + "/cache", 0);
    EXPECT_EQ(d.digest(file), "");
    EXPECT_EQ(wait_digest(d, file), "88d4266fd4e6338d13b845fcf289579d209c897823b9217da3e161936f031589");
    EXPECT_EQ(d.digest(dir + "/models/missing.gguf"), "");
  }
  // Small files are not worth an entry in the cache (tests would leave one per temporary file).
  std::filesystem::remove_all(dir + "/cache");
  {
    FileDigests d(dir + "/cache");
    EXPECT_EQ(wait_digest(d, file), "88d4266fd4e6338d13b845fcf289579d209c897823b9217da3e161936f031589");
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/cache"));
  std::filesystem::remove_all(dir);
}

// One synthetic model served in-process, as `serve -m FILE --alias ...` serves it.
class AliasServer {
 public:
  explicit AliasServer(std::vector<std::string> aliases) {
    ModelLoadOptions lo;
    lo.n_ctx = 256;
    auto model = Model::load(shared_dir() + "/models/syn-qwen3-Q4_K_M.gguf", lo);
    EXPECT_TRUE(model.ok()) << model.error().message;
    model_ = std::move(model).value();
    ServerOptions so;
    so.port = 0;
    so.session.n_ctx = 256;
    so.session.n_threads = 2;
    so.context_dir = ::testing::TempDir() + "/sniper_alias_ctx";
    so.model_id = "syn";
    so.model_aliases = std::move(aliases);
    auto server = HttpServer::create(*model_, so);
    EXPECT_TRUE(server.ok()) << server.error().message;
    server_ = std::move(server).value();
    port_ = *server_->bind();
    thread_ = std::thread([this] { server_->run(); });
  }
  ~AliasServer() {
    server_->stop();
    thread_.join();
  }
  httplib::Result post(const std::string& path, const TJson& body) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    return c.Post(path, body.dump(), "application/json");
  }

 private:
  std::unique_ptr<Model> model_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(ServeAliases, NamesAndCatchAll) {
  const TJson req = {{"prompt", "Hello"}, {"max_tokens", 2}, {"temperature", 0}};
  {
    AliasServer s({"gpt-4o"});
    TJson r = req;
    r["model"] = "gpt-4o";
    auto ok = s.post("/v1/completions", r);
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200) << ok->body;
    r["model"] = "claude";
    auto unknown = s.post("/v1/completions", r);
    ASSERT_TRUE(unknown);
    EXPECT_EQ(unknown->status, 404) << unknown->body;
  }
  AliasServer any({"*"});
  TJson r = req;
  r["model"] = "whatever-the-client-insists-on";
  auto ok = any.post("/v1/completions", r);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  // The reply's own timings: the server's figures for this reply.
  const TJson body = TJson::parse(ok->body);
  ASSERT_TRUE(body.contains("timings")) << ok->body;
  EXPECT_EQ(body["timings"]["predicted_n"], body["usage"]["completion_tokens"]);
  EXPECT_GT(body["timings"]["prompt_n"].get<int64_t>(), 0);
  EXPECT_TRUE(body["timings"]["ttft_ms"].is_number());
  // Anthropic's count_tokens: the rendered prompt's tokens, the same count /v1/messages reports.
  const TJson msg = {{"model", "any"},
                     {"system", "Be brief."},
                     {"messages", TJson::array({{{"role", "user"}, {"content", "Hello there"}}})}};
  auto count = any.post("/v1/messages/count_tokens", msg);
  ASSERT_TRUE(count);
  ASSERT_EQ(count->status, 200) << count->body;
  const int64_t n = TJson::parse(count->body)["input_tokens"].get<int64_t>();
  TJson full = msg;
  full["max_tokens"] = 1;
  auto sent = any.post("/v1/messages", full);
  ASSERT_TRUE(sent);
  ASSERT_EQ(sent->status, 200) << sent->body;
  EXPECT_EQ(TJson::parse(sent->body)["usage"]["input_tokens"].get<int64_t>(), n);
  EXPECT_GT(n, 5);
  auto bad = any.post("/v1/messages/count_tokens", TJson{{"model", "any"}, {"messages", 3}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(TJson::parse(bad->body)["type"], "error");
}

}  // namespace
}  // namespace sniper::server
