// SPDX-License-Identifier: MIT
// Connection handling of `sniper serve` (issue 26) against stories260K: hundreds of half-open
// connections (the first header lines of a request, then nothing) neither silence /health nor
// stop a completion; a connection past --max-connections-per-client or --max-connections gets
// a 503 at once; a request head not complete within the header timeout gets a 408 and frees
// its connection; /health answers while every slot generates; keep-alive and pipelining work.
// Clients use raw sockets bound to several loopback addresses (127.0.0.x) to act as distinct
// client addresses. Bounded: every wait has a deadline.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>

#include "server/test_server.h"

namespace sniper::server {
namespace {

using Clock = std::chrono::steady_clock;

// A raw TCP client from a chosen loopback source address. Closes on destruction.
class RawClient {
 public:
  RawClient(int port, const char* from = "127.0.0.1") {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    inet_pton(AF_INET, from, &src.sin_addr);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&src), sizeof(src)) != 0) return;
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&dst), sizeof(dst)) == 0;
  }
  ~RawClient() {
    if (fd_ >= 0) close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  bool send_all(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      const ssize_t n = send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads until the peer closes, `until` appears, or timeout_s passes.
  std::string read(double timeout_s, const std::string& until = "") {
    std::string out;
    const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int>(timeout_s * 1000));
    while (Clock::now() < deadline) {
      if (!until.empty() && out.find(until) != std::string::npos) break;
      pollfd p{fd_, POLLIN, 0};
      const int ms =
          static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
      if (poll(&p, 1, std::max(ms, 0)) <= 0) break;
      char buf[4096];
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

const std::string kHalfRequest = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n";

std::string get_request(const std::string& path, bool close = true) {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + (close ? "Connection: close\r\n" : "") + "\r\n";
}

std::string post_request(const std::string& path, const std::string& body) {
  return "POST " + path +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return -1;
  return std::stoi(response.substr(9, 3));
}

std::unique_ptr<TestServer> start(ServerOptions o) {
  o.context_dir = ::testing::TempDir() + "/sniper_conn_ctx";
  auto s = std::make_unique<TestServer>(models_dir() + "/stories260K.gguf", o, 256);
  EXPECT_TRUE(s->ok()) << s->error();
  return s;
}

// The issue's reproduction, scaled up: 64 half-open connections from the /health client's own
// address plus 192 from three others. /health answers within 1 s; a completion completes.
TEST(ServerConnections, HalfOpenConnectionsDoNotSilenceTheServer) {
  auto server = start(ServerOptions{});
  ASSERT_TRUE(server->ok());
  std::vector<std::unique_ptr<RawClient>> idle;
  const char* sources[] = {"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"};
  for (const char* from : sources) {
    for (int i = 0; i < 64; ++i) {
      idle.push_back(std::make_unique<RawClient>(server->port(), from));
      ASSERT_TRUE(idle.back()->connected());
      ASSERT_TRUE(idle.back()->send_all(kHalfRequest));
    }
  }
  // Every idle connection is admitted (none over a cap) before the probes.
  const auto t_wait = Clock::now() + std::chrono::seconds(5);
  while (server->server().connection_stats().open_connections < 256 && Clock::now() < t_wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server->server().connection_stats().open_connections, 256u);

  const auto t0 = Clock::now();
  RawClient health(server->port());
  ASSERT_TRUE(health.send_all(get_request("/health")));
  const std::string h = health.read(1.0);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(status_of(h), 200) << h;
  EXPECT_NE(h.find(R"({"status":"ok"})"), std::string::npos) << h;

  auto c = server->client();
  auto r = c->Post("/v1/completions", R"({"prompt":"Once upon","max_tokens":4,"temperature":0})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  auto m = c->Get("/metrics");
  ASSERT_TRUE(m);
  const size_t at = m->body.find("\nsniper_http_connections_open ");
  ASSERT_NE(at, std::string::npos) << m->body;
  EXPECT_GE(std::stoi(m->body.substr(at + 30)), 256) << m->body.substr(at, 40);
}

TEST(ServerConnections, CapsAnswer503AtOnce) {
  ServerOptions o;
  o.max_connections = 12;
  o.max_connections_per_client = 4;
  auto server = start(o);
  ASSERT_TRUE(server->ok());
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<RawClient>(server->port(), "127.0.0.5"));
    ASSERT_TRUE(held.back()->send_all(kHalfRequest));
  }
  // The fifth from the same address: 503 naming the per-client limit, before it sends a byte.
  {
    RawClient fifth(server->port(), "127.0.0.5");
    const auto t0 = Clock::now();
    const std::string r = fifth.read(2.0);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1));
    EXPECT_EQ(status_of(r), 503) << r;
    EXPECT_NE(r.find("--max-connections-per-client"), std::string::npos) << r;
    EXPECT_NE(r.find("\"server_busy\""), std::string::npos) << r;
  }
  // Other addresses are still served, up to the total cap.
  for (const char* from : {"127.0.0.6", "127.0.0.7"}) {
    for (int i = 0; i < 4; ++i) {
      held.push_back(std::make_unique<RawClient>(server->port(), from));
      ASSERT_TRUE(held.back()->send_all(kHalfRequest));
    }
  }
  const auto t_wait = Clock::now() + std::chrono::seconds(5);
  while (server->server().connection_stats().open_connections < 12 && Clock::now() < t_wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  {
    RawClient over(server->port(), "127.0.0.8");
    ASSERT_TRUE(over.send_all(get_request("/health")));
    const std::string r = over.read(2.0);
    EXPECT_EQ(status_of(r), 503) << r;
    EXPECT_NE(r.find("--max-connections"), std::string::npos) << r;
  }
  const ListenerStats st = server->server().connection_stats();
  EXPECT_EQ(st.rejected_client_cap, 1u);
  EXPECT_EQ(st.rejected_total_cap, 1u);
  // Freed connections are counted down: closing some lets a new client in.
  held.clear();
  const auto t_free = Clock::now() + std::chrono::seconds(5);
  while (server->server().connection_stats().open_connections > 0 && Clock::now() < t_free) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  RawClient again(server->port(), "127.0.0.5");
  ASSERT_TRUE(again.send_all(get_request("/health")));
  EXPECT_EQ(status_of(again.read(2.0)), 200);
}

TEST(ServerConnections, SlowHeadersGet408AndFreeTheConnection) {
  ServerOptions o;
  o.header_timeout_s = 0.5;
  o.timeout_s = 0.5;
  o.max_connections_per_client = 2;
  auto server = start(o);
  ASSERT_TRUE(server->ok());
  RawClient a(server->port(), "127.0.0.9"), b(server->port(), "127.0.0.9");
  ASSERT_TRUE(a.send_all(kHalfRequest));
  ASSERT_TRUE(b.send_all(post_request("/v1/completions", R"({"prompt":"x"})").substr(0, 90)));  // body cut short
  const std::string ra = a.read(3.0), rb = b.read(3.0);
  EXPECT_EQ(status_of(ra), 408) << ra;
  EXPECT_NE(ra.find("--header-timeout"), std::string::npos) << ra;
  EXPECT_EQ(status_of(rb), 408) << rb;
  EXPECT_GE(server->server().connection_stats().header_timeouts, 1u);
  // Both connections were released: the same address gets in again.
  const auto t_free = Clock::now() + std::chrono::seconds(5);
  while (server->server().connection_stats().open_connections > 0 && Clock::now() < t_free) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  RawClient c(server->port(), "127.0.0.9");
  ASSERT_TRUE(c.send_all(get_request("/health")));
  EXPECT_EQ(status_of(c.read(2.0)), 200);
}

// /health and /metrics answer while the only slot generates and the queue holds a request.
TEST(ServerConnections, HealthAnswersWhileSlotsAreBusy) {
  ServerOptions o;
  o.n_slots = 1;
  auto server = start(o);
  ASSERT_TRUE(server->ok());
  const std::string long_gen = R"({"prompt":"Once upon a time","max_tokens":200,"ignore_eos":true,"stream":true})";
  RawClient g1(server->port()), g2(server->port());
  ASSERT_TRUE(g1.send_all(post_request("/v1/completions", long_gen)));
  ASSERT_TRUE(g2.send_all(post_request("/v1/completions", long_gen)));
  ASSERT_NE(g1.read(10.0, "data: ").find("data: "), std::string::npos);  // generating
  for (const char* path : {"/health", "/metrics"}) {
    const auto t0 = Clock::now();
    RawClient probe(server->port());
    ASSERT_TRUE(probe.send_all(get_request(path)));
    EXPECT_EQ(status_of(probe.read(1.0)), 200) << path;
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1)) << path;
  }
  // Both generations finish with [DONE].
  EXPECT_NE(g1.read(60.0, "data: [DONE]").find("data: [DONE]"), std::string::npos);
  EXPECT_NE(g2.read(60.0, "data: [DONE]").find("data: [DONE]"), std::string::npos);
}

TEST(ServerConnections, KeepAlivePipeliningAndMalformedHeads) {
  auto server = start(ServerOptions{});
  ASSERT_TRUE(server->ok());
  {
    RawClient c(server->port());
    // Two pipelined requests on one connection, the second closes it.
    ASSERT_TRUE(c.send_all(get_request("/health", false) + get_request("/v1/models")));
    const std::string r = c.read(5.0);
    EXPECT_EQ(status_of(r), 200) << r;
    EXPECT_NE(r.find("\"object\":\"list\""), std::string::npos) << r;
  }
  const std::pair<std::string, int> cases[] = {
      {"GARBAGE\r\n\r\n", 400},
      {"GET /health HTTP/2.0\r\n\r\n", 505},
      {"GET health HTTP/1.1\r\n\r\n", 400},
      {"GET /health HTTP/1.1\r\nNo-Colon\r\n\r\n", 400},
      {"GET /health HTTP/1.1\r\n folded\r\n\r\n", 400},
      {"POST /v1/completions HTTP/1.1\r\nContent-Length: 12x\r\n\r\n", 400},
      {"POST /v1/completions HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n{}}", 400},
      {"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 411},
      {"POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", 413},
      {"GET /" + std::string(20000, 'a') + " HTTP/1.1\r\n\r\n", 431},
  };
  for (const auto& [request, status] : cases) {
    RawClient c(server->port());
    ASSERT_TRUE(c.send_all(request));
    const std::string r = c.read(5.0);
    EXPECT_EQ(status_of(r), status) << request.substr(0, 80) << " -> " << r;
    EXPECT_NE(r.find("\"error\""), std::string::npos) << r;
  }
  // Still serving.
  RawClient c(server->port());
  ASSERT_TRUE(c.send_all(post_request("/v1/completions", R"({"prompt":"Once","max_tokens":2,"temperature":0})")));
  EXPECT_EQ(status_of(c.read(10.0)), 200);
}

}  // namespace
}  // namespace sniper::server
