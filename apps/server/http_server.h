// SPDX-License-Identifier: MIT
// HttpServer: `sniper serve`'s HTTP front: routes, API-key authentication, body limits, the
// OpenAI error shape for every failure (unknown route 404, wrong method 405, body too large
// 413, handler exceptions 500), and the worker pool sized for slots + queue + control requests.
// Owns the scheduler (slots over the model) and the metrics. Lifecycle: create() -> bind() ->
// run() (blocks) until stop() from any thread; the destructor stops. Tests run it in-process on
// port 0.
#pragma once

#include <memory>
#include <string>

#include "base/result.h"
#include "engine/model.h"
#include "server/server_options.h"

namespace httplib {
class Server;
}

namespace sniper::server {

struct ServerContext;
class Scheduler;
class Metrics;

class HttpServer {
 public:
  // The model must outlive the server. Errors: the model has no tokenizer, its chat template
  // does not parse, the slots cannot be created, the fingerprint cannot be computed.
  static Result<std::unique_ptr<HttpServer>> create(Model& model, const ServerOptions& options);
  ~HttpServer();

  // Binds options.host:options.port (port 0 picks a free one); returns the port.
  [[nodiscard]] Result<int> bind();
  // Serves until stop(). Precondition: bind() succeeded.
  void run();
  // Thread-safe; idempotent. Ends running requests (503) and makes run() return.
  void stop();

  const std::string& host() const;
  int port() const { return port_; }
  Scheduler& scheduler();
  Metrics& metrics();
  const ServerContext& context() const { return *ctx_; }

 private:
  HttpServer() = default;
  void install_routes();

  std::unique_ptr<ServerContext> ctx_;
  std::unique_ptr<httplib::Server> http_;
  int port_ = 0;
};

}  // namespace sniper::server
