// SPDX-License-Identifier: MIT
// Issue 40 finding 5: requests forged by web pages. The guard's rules (Host against the bound
// address, loopback names and --allowed-hosts; Origin against the page's own origin and
// --cors-origin; Content-Type on JSON routes), then the same over HTTP on stories260K: a DNS
// rebinding Host, a text/plain "simple" POST and a foreign Origin are refused before any work,
// preflights are answered, and the web UI's same-origin requests and allowed origins still work.
// Before the fix every one of these requests got 200.
#include "server/request_guard.h"

#include <gtest/gtest.h>

#include "server/test_server.h"

namespace sniper::server {
namespace {

TEST(RequestGuard, HostHeaderParsing) {
  EXPECT_EQ(host_of("127.0.0.1:8000"), "127.0.0.1");
  EXPECT_EQ(host_of("LocalHost"), "localhost");
  EXPECT_EQ(host_of("[::1]:8000"), "::1");
  EXPECT_EQ(host_of("[::1]"), "::1");
  EXPECT_EQ(host_of("::1"), "");  // IPv6 needs brackets in a Host header
  EXPECT_EQ(host_of("a.example.com:80"), "a.example.com");
  EXPECT_EQ(host_of("evil.com:80:90"), "");
  EXPECT_EQ(host_of("evil.com:"), "");
  EXPECT_EQ(host_of("evil.com/x"), "");
  EXPECT_EQ(host_of("[evil.com]"), "");
  EXPECT_EQ(host_of(""), "");
  EXPECT_TRUE(is_loopback_host("127.3.4.5"));
  EXPECT_TRUE(is_loopback_host("app.localhost"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_FALSE(is_loopback_host("128.0.0.1"));
  EXPECT_FALSE(is_loopback_host("localhost.evil.com"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
}

TEST(RequestGuard, HostMustBeThisServers) {
  GuardOptions loop;  // bound to 127.0.0.1
  const std::string ok[] = {"127.0.0.1:8000", "localhost:8000", "[::1]:8000", "LOCALHOST", "x.localhost:1"};
  for (const std::string& h : ok) EXPECT_FALSE(check_host(loop, &h, "HTTP/1.1")) << h;
  for (const std::string h : {"attacker.example:8000", "192.168.1.5:8000", "localhost.attacker.example"}) {
    auto e = check_host(loop, &h, "HTTP/1.1");
    ASSERT_TRUE(e) << h;
    EXPECT_EQ(e->status, 403);
    EXPECT_NE(e->message.find("--allowed-hosts"), std::string::npos) << e->message;
  }
  const std::string bad = "a b";
  EXPECT_EQ(check_host(loop, &bad, "HTTP/1.1")->status, 400);
  EXPECT_EQ(check_host(loop, nullptr, "HTTP/1.1")->status, 400);
  EXPECT_FALSE(check_host(loop, nullptr, "HTTP/1.0"));

  GuardOptions lan;
  lan.bound_host = "192.168.1.5";
  lan.allowed_hosts = {"llm.lan", ".corp.example"};
  ASSERT_TRUE(normalise_guard_options(&lan).ok());
  for (const std::string h : {"192.168.1.5:8000", "llm.lan", "LLM.LAN:8000", "corp.example", "a.b.corp.example"}) {
    EXPECT_FALSE(check_host(lan, &h, "HTTP/1.1")) << h;
  }
  for (const std::string h : {"10.0.0.1", "evilcorp.example", "llm.lan.evil"}) {
    EXPECT_TRUE(check_host(lan, &h, "HTTP/1.1")) << h;
  }
  GuardOptions all;
  all.bound_host = "0.0.0.0";
  for (const std::string h : {"10.0.0.1:8000", "[fe80::1]:8000", "localhost"}) {
    EXPECT_FALSE(check_host(all, &h, "HTTP/1.1")) << h;
  }
  const std::string name = "rebind.attacker.example";
  EXPECT_TRUE(check_host(all, &name, "HTTP/1.1"));
  all.allowed_hosts = {"*"};
  EXPECT_FALSE(check_host(all, &name, "HTTP/1.1"));
}

TEST(RequestGuard, OriginsAndOptions) {
  GuardOptions o;
  const std::string ui = "http://127.0.0.1:8000", other = "https://app.example.com", null_origin = "null";
  EXPECT_EQ(check_origin(o, nullptr, "127.0.0.1:8000"), OriginVerdict::kNoOrigin);
  EXPECT_EQ(check_origin(o, &ui, "127.0.0.1:8000"), OriginVerdict::kSameOrigin);
  EXPECT_EQ(check_origin(o, &ui, "localhost:8000"), OriginVerdict::kRefused);
  EXPECT_EQ(check_origin(o, &other, "127.0.0.1:8000"), OriginVerdict::kRefused);
  EXPECT_EQ(check_origin(o, &null_origin, "127.0.0.1:8000"), OriginVerdict::kRefused);
  o.cors_origins = {"HTTPS://App.Example.com"};
  ASSERT_TRUE(normalise_guard_options(&o).ok());
  EXPECT_EQ(check_origin(o, &other, "127.0.0.1:8000"), OriginVerdict::kAllowed);
  EXPECT_EQ(allow_origin_value(o, other), other);
  o.cors_origins = {"*"};
  EXPECT_EQ(check_origin(o, &null_origin, "127.0.0.1:8000"), OriginVerdict::kAllowed);
  EXPECT_EQ(allow_origin_value(o, other), "*");
  for (const char* bad : {"app.example.com", "https://app.example.com/path", "ftp://x", "https://"}) {
    GuardOptions g;
    g.cors_origins = {bad};
    auto st = normalise_guard_options(&g);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.error().message.find("--cors-origin"), std::string::npos);
  }
  for (const char* bad : {"bad host", "example.com:8000", ""}) {
    GuardOptions g;
    g.allowed_hosts = {bad};
    EXPECT_FALSE(normalise_guard_options(&g).ok()) << bad;
  }
  GuardOptions v6;
  v6.allowed_hosts = {"fe80::1"};
  EXPECT_TRUE(normalise_guard_options(&v6).ok());
  EXPECT_TRUE(is_json_content_type("application/json"));
  EXPECT_TRUE(is_json_content_type("Application/JSON; charset=utf-8"));
  EXPECT_FALSE(is_json_content_type("text/plain"));
  EXPECT_FALSE(is_json_content_type("application/x-www-form-urlencoded"));
  EXPECT_FALSE(is_json_content_type("multipart/form-data; boundary=x"));
  EXPECT_FALSE(is_json_content_type("application/jsonp"));
  EXPECT_FALSE(is_json_content_type(""));
}

class RequestGuardHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ServerOptions o;
    o.context_dir = ::testing::TempDir() + "/sniper_guard_ctx";
    o.cors_origins = {"https://app.example.com"};
    server_ = new TestServer(models_dir() + "/stories260K.gguf", o, 128);
    ASSERT_TRUE(server_->ok()) << server_->error();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static TestServer* server_;

  static httplib::Result post(const std::string& path, const std::string& body, const std::string& type,
                              httplib::Headers headers = {}) {
    return server_->client()->Post(path.c_str(), headers, body, type.c_str());
  }
  static std::string self() { return "127.0.0.1:" + std::to_string(server_->port()); }
};
TestServer* RequestGuardHttp::server_ = nullptr;

const char* kCompletion = R"({"prompt":"Once","max_tokens":2,"temperature":0})";

TEST_F(RequestGuardHttp, DnsRebindingHostIsRefused) {
  auto r = post("/v1/completions", kCompletion, "application/json", {{"Host", "rebind.attacker.example:8000"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_NE(r->body.find("rebind.attacker.example"), std::string::npos);
  r = server_->client()->Get("/v1/models", {{"Host", "rebind.attacker.example"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  r = server_->client()->Get("/api/tags", {{"Host", "rebind.attacker.example"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_TRUE(TJson::parse(r->body)["error"].is_string()) << r->body;  // Ollama's error shape
  r = post("/v1/completions", kCompletion, "application/json", {{"Host", "localhost:1"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

TEST_F(RequestGuardHttp, JsonRoutesTakeOnlyJson) {
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=b"}) {
    for (const char* path :
         {"/v1/completions", "/v1/chat/completions", "/api/generate", "/v1/messages", "/v1/context/save"}) {
      auto r = post(path, kCompletion, type);
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 415) << path << " " << type << " " << r->body;
      EXPECT_NE(r->body.find("application/json"), std::string::npos) << r->body;
    }
  }
  auto r = post("/v1/completions", kCompletion, "application/json; charset=utf-8");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

TEST_F(RequestGuardHttp, ForeignOriginsAreRefusedBeforeAnyWork) {
  auto r = post("/v1/completions", kCompletion, "application/json", {{"Origin", "https://evil.example"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_NE(r->body.find("--cors-origin"), std::string::npos) << r->body;
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
  // The web UI: the page's own origin.
  r = post("/v1/completions", kCompletion, "application/json", {{"Origin", "http://" + self()}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  // An origin given with --cors-origin gets CORS headers.
  r = post("/v1/completions", kCompletion, "application/json", {{"Origin", "https://app.example.com"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "https://app.example.com");
}

TEST_F(RequestGuardHttp, PreflightsAreAnswered) {
  httplib::Request req;
  req.method = "OPTIONS";
  req.path = "/v1/chat/completions";
  req.headers = {{"Origin", "https://app.example.com"},
                 {"Access-Control-Request-Method", "POST"},
                 {"Access-Control-Request-Headers", "authorization, content-type, x-stainless-os"}};
  auto r = server_->client()->send(req);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "https://app.example.com");
  EXPECT_NE(r->get_header_value("Access-Control-Allow-Methods").find("POST"), std::string::npos);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Headers"), "authorization, content-type, x-stainless-os");
  req.headers = {{"Origin", "https://evil.example"}, {"Access-Control-Request-Method", "POST"}};
  r = server_->client()->send(req);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
}

}  // namespace
}  // namespace sniper::server
