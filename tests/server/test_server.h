// SPDX-License-Identifier: MIT
// An in-process `sniper serve` for tests: loads a model, starts HttpServer on a free loopback
// port in a background thread, and hands out httplib clients. Plus small SSE helpers.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/model.h"
#include "golden/shared_dir.h"
#include "media/mmproj.h"
#include "server/http_server.h"
#include "server/scheduler.h"

namespace sniper::server {

using TJson = nlohmann::json;

class TestServer {
 public:
  // Loads `model_path` with a context of n_ctx and starts serving. Check ok() afterwards.
  TestServer(const std::string& model_path, ServerOptions options, int64_t n_ctx = 512) {
    signal(SIGPIPE, SIG_IGN);
    ModelLoadOptions lo;
    lo.n_ctx = n_ctx;
    lo.load_mtp = options.spec_mtp;
    // A projector whose images attend both ways needs rings and batches that hold a whole image.
    if (options.mmproj != nullptr && options.mmproj->vision_config().non_causal) {
      lo.media_chunk_tokens = options.mmproj->options().image_max_tokens > 0
                                  ? options.mmproj->options().image_max_tokens
                                  : options.mmproj->vision_config().max_tokens;
    }
    auto model = Model::load(model_path, lo);
    if (!model.ok()) {
      error_ = model.error().message;
      return;
    }
    model_ = std::move(model).value();
    options.port = 0;
    options.session.n_ctx = n_ctx;
    if (options.session.n_threads == 0) options.session.n_threads = 2;
    auto server = HttpServer::create(*model_, options);
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
  ~TestServer() {
    if (server_ != nullptr) server_->stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
  }

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  Model& model() { return *model_; }
  HttpServer& server() { return *server_; }
  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_read_timeout(120, 0);
    return c;
  }

 private:
  std::string error_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  int port_ = 0;
};

// Parses an SSE body into the JSON objects of its "data:" lines; sets *done when the last
// event is [DONE]. Fails the test on framing errors.
inline std::vector<TJson> parse_sse(const std::string& body, bool* done) {
  std::vector<TJson> out;
  *done = false;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "unterminated event at " << pos;
    if (end == std::string::npos) break;
    const std::string event = body.substr(pos, end - pos);
    pos = end + 2;
    EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
    const std::string data = event.substr(6);
    EXPECT_FALSE(*done) << "event after [DONE]";
    if (data == "[DONE]") {
      *done = true;
      continue;
    }
    out.push_back(TJson::parse(data));
  }
  return out;
}

inline std::string models_dir() { return shared_dir() + "/models"; }

// POSTs `body` as JSON: the reply parsed (discarded on a parse error) and its status in *status
// (-1 when no reply came).
inline TJson post_json(TestServer& s, const std::string& path, const TJson& body, int* status) {
  auto res = s.client()->Post(path, body.dump(), "application/json");
  if (!res) {
    *status = -1;
    return TJson();
  }
  *status = res->status;
  return TJson::parse(res->body, nullptr, false);
}

// Polls GET /metrics until `line` appears (the server updates it after the response), up to 20 s.
inline bool wait_for_metric(TestServer& s, const std::string& line) {
  auto cli = s.client();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = cli->Get("/metrics");
    if (r && r->body.find(line) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace sniper::server
