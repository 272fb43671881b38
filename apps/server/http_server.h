// SPDX-License-Identifier: MIT
// HttpServer: `sniper serve`'s HTTP front: the request guard (Host, Origin/CORS, Content-Type;
// request_guard.h), routes, API-key authentication, the OpenAI error
// shape for every failure (unknown route 404, wrong method 405, body too large 413, over a
// connection cap 503, handler exceptions 500). Connections (admission caps, timeouts, one
// thread per admitted connection) are HttpListener's. Owns the scheduler (slots over the
// model), the metrics and the listener. Lifecycle: create() -> bind() ->
// run() (blocks) until stop() from any thread; the destructor stops. Tests run it in-process on
// port 0.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "engine/model.h"
#include "server/http_listener.h"
#include "server/model_pool.h"
#include "server/request_guard.h"
#include "server/server_options.h"

namespace sniper::server {

struct ServerContext;
class Metrics;

// Loads a model file for a memory budget (bytes; 0: unlimited) for the pool; may adjust the
// session options its slots get (checkpoints from its plan, routing bias). Runs on the pool's
// thread.
using ModelFileLoader = std::function<Result<std::unique_ptr<Model>>(const ModelSource& source, uint64_t mem_bytes,
                                                                     SessionOptions* session)>;

class HttpServer {
 public:
  // The model must outlive the server. Errors: the model has no tokenizer, its chat template
  // does not parse, the slots cannot be created, the fingerprint cannot be computed.
  // One borrowed model, always loaded (named options.model_id or its file stem).
  static Result<std::unique_ptr<HttpServer>> create(Model& model, const ServerOptions& options);
  // Several models loaded on demand by `loader` under pool's limits (model_pool.h). Errors: no
  // source, duplicate names, bad pool options.
  static Result<std::unique_ptr<HttpServer>> create(std::vector<ModelSource> sources, const ModelPoolOptions& pool,
                                                    ModelFileLoader loader, const ServerOptions& options);
  ~HttpServer();

  // Binds options.host:options.port (port 0 picks a free one); returns the port.
  [[nodiscard]] Result<int> bind();
  // Serves until stop(). Precondition: bind() succeeded.
  void run();
  // Thread-safe; idempotent. Ends running requests (503) and makes run() return.
  void stop();

  const std::string& host() const;
  int port() const { return port_; }
  ModelPool& models();
  Metrics& metrics();
  const ServerContext& context() const { return *ctx_; }
  // Connection counters (open, admitted, refused at a cap, header timeouts). Thread-safe.
  ListenerStats connection_stats() const;

  // Routes one complete request: the Host check, the Origin check (preflights answered),
  // authentication, then the first route whose method and path match (404/405 otherwise) and,
  // for a route that takes JSON, the Content-Type check (415). Errors are in the API's shape
  // (by path). Never throws. Called on connection threads.
  void dispatch(httplib::Request& req, httplib::Response& res);

 private:
  using RouteHandler = std::function<void(const httplib::Request&, httplib::Response&)>;
  struct Route {
    std::string method;
    std::string path;  // the whole decoded path, or its prefix when named
    bool named;        // the path ends in one more segment, the name (last_path_segment())
    RouteHandler handler;
    bool json_body;  // takes a JSON body: Content-Type must be application/json
    bool matches(const std::string& request_path) const;
  };

  HttpServer() = default;
  // The context, the routes and the listener around ctx_->models (set by the caller). Errors:
  // invalid --allowed-hosts / --cors-origin values.
  static Result<std::unique_ptr<HttpServer>> assemble(std::unique_ptr<ServerContext> ctx);
  void install_routes();
  // path: exact ("/v1/models"), or a prefix and one segment ("/v1/context/{name}").
  void route(const char* method, std::string path, RouteHandler handler);

  std::unique_ptr<ServerContext> ctx_;
  GuardOptions guard_;  // from the options, normalised
  std::vector<Route> routes_;
  std::unique_ptr<HttpListener> listener_;  // after ctx_: destroyed (connections drained) first
  int port_ = 0;
};

}  // namespace sniper::server
