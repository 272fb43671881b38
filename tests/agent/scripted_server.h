// SPDX-License-Identifier: MIT
// A deterministic OpenAI-compatible test server for the agent tests: an httplib server on
// 127.0.0.1:0 that answers POST /v1/chat/completions with canned replies chosen by rules on the
// last user message (and optionally the system message), streamed (SSE, configurable chunk size
// and delay) or not. Failure modes: 429 with a Retry-After header, 500, hang (never answers, so
// the client times out); closed_port_url() gives a backend that is down. It also serves static
// pages (GET) with {{BASE}} / {{BASE_ENC}} replaced by its own URL, for web search tests.
// Invariants: every chat request is recorded before it is answered; stop() ends hung handlers.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace httplib {
class Server;
}

namespace sniper::agent::testing {

struct Rule {
  std::vector<std::string> user_contains;    // all must occur in the last user message
  std::vector<std::string> system_contains;  // all must occur in the system message
  std::string reply;
  int chunk_delay_ms = 0;  // streaming: pause after each chunk
  size_t chunk_chars = 6;  // streaming: bytes per chunk
};

enum class Mode { kNormal, kRateLimited, kServerError, kHang };

class ScriptedServer {
 public:
  ScriptedServer();
  ~ScriptedServer();

  // Binds 127.0.0.1 on a free port and serves from a thread. Returns false on failure.
  [[nodiscard]] bool start();
  void stop();

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void set_mode(Mode mode) { mode_.store(mode); }
  void set_retry_after(const std::string& value);
  void add_rule(const Rule& rule);
  void set_default_reply(const std::string& reply);
  // Requests whose messages hold more characters than this (0: no limit) get llama-server's
  // 400 "the request exceeds the available context size".
  void set_context_chars(size_t n) { context_chars_.store(n); }
  // Serves `body` at GET `path` with {{BASE}} and {{BASE_ENC}} substituted.
  void add_page(const std::string& path, const std::string& body, const std::string& content_type = "text/html");

  // The "capabilities" GET /v1/models lists for the model (none by default: text only).
  void set_capabilities(const std::vector<std::string>& caps) {
    std::lock_guard<std::mutex> lock(mu_);
    capabilities_ = caps;
  }

  int chat_requests() const { return chat_requests_.load(); }
  std::vector<nlohmann::json> requests() const;

 private:
  std::string choose_reply(const nlohmann::json& body, const Rule** rule) const;

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<Mode> mode_{Mode::kNormal};
  std::atomic<bool> stopping_{false};
  std::atomic<int> chat_requests_{0};
  std::atomic<size_t> context_chars_{0};
  mutable std::mutex mu_;
  std::string retry_after_ = "1";
  std::vector<Rule> rules_;
  std::string default_reply_ = "Hello from the scripted server.";
  std::vector<nlohmann::json> requests_;
  std::vector<std::string> capabilities_;
};

// An http URL on 127.0.0.1 whose port was just bound and released (connections are refused).
std::string closed_port_url();

// Reads a file into a string ("" if unreadable).
std::string read_test_file(const std::string& path);

}  // namespace sniper::agent::testing
