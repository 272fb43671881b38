// SPDX-License-Identifier: MIT
#include "server/http_server.h"

#include "server/request_defaults.h"
#include "server/request_log.h"

#include <cstring>
#include <exception>
#include <set>

#include "base/process_stats.h"
#include "engine/session_state.h"
#include "server/anthropic_protocol.h"
#include "server/ollama_protocol.h"
#include "server/server_context.h"
#include "server/webui_asset.h"

namespace sniper::server {

namespace {

// Compares without an early exit on the first differing byte.
bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size() || b.empty()) return false;
  unsigned diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned>(static_cast<uint8_t>(a[i] ^ b[i]));
  return diff == 0;
}

uint64_t count_params(const GgufFile& f) {
  uint64_t n = 0;
  for (const GgufTensorInfo& t : f.tensors()) n += static_cast<uint64_t>(t.n_elements());
  return n;
}

const char* residency_name(const Model& m) {
  if (m.options().residency == ResidencyMode::kMmap) return "mmap";
  return m.streams() ? "stream" : "resident";
}

// Prometheus text for the connection counters (appended to the engine's metrics).
std::string connection_metrics(const ListenerStats& s) {
  std::string out;
  auto metric = [&out](const char* name, const char* type, const char* help, uint64_t v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " +
           std::to_string(v) + "\n";
  };
  metric("sniper_http_connections_open", "gauge", "Open HTTP connections.", s.open_connections);
  metric("sniper_http_connections_accepted_total", "counter", "HTTP connections admitted.", s.accepted);
  out +=
      "# HELP sniper_http_connections_rejected_total Connections answered 503 at a cap (--max-connections, "
      "--max-connections-per-client).\n# TYPE sniper_http_connections_rejected_total counter\n"
      "sniper_http_connections_rejected_total{cap=\"total\"} " +
      std::to_string(s.rejected_total_cap) + "\nsniper_http_connections_rejected_total{cap=\"per_client\"} " +
      std::to_string(s.rejected_client_cap) + "\n";
  metric("sniper_http_header_timeouts_total", "counter",
         "Connections closed because a request head was not complete in time.", s.header_timeouts);
  return out;
}

// A /v1/models entry: OpenAI's fields, then the pool's state of the model.
Json model_json(const ModelStatus& s) {
  Json m = Json::object();
  m["id"] = s.name;
  m["object"] = "model";
  m["created"] = s.loaded_at_unix;
  m["owned_by"] = "sniper";
  if (!s.aliases.empty()) m["aliases"] = s.aliases;
  m["loaded"] = s.state == ModelState::kLoaded;
  m["state"] = model_state_name(s.state);
  m["path"] = s.path;
  m["size_bytes"] = s.size_bytes;
  m["memory_bytes"] = s.memory_bytes;
  m["budget_bytes"] = s.budget_bytes;
  m["loaded_at"] = s.loaded_at_unix;
  m["expires_at"] = s.expires_at_unix;
  m["load_ms"] = s.load_ms;
  m["loads"] = s.n_loads;
  m["requests_active"] = s.n_active;
  m["requests_waiting"] = s.n_waiting;
  if (!s.last_error.empty()) m["last_error"] = s.last_error;
  if (!s.capabilities.empty()) m["capabilities"] = s.capabilities;
  return m;
}

}  // namespace

void send_json(httplib::Response& res, const Json& body, int status) {
  res.status = status;
  res.set_content(dump_json(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& error) { send_json(res, error_json(error), error.status); }

void send_api_error(const std::string& path, httplib::Response& res, int status, const std::string& message) {
  if (path.starts_with("/api/")) return send_json(res, ollama_error_json(message), status);
  if (path.starts_with("/v1/messages")) return send_json(res, anthropic_error_json(status, message), status);
  ApiError e = status_error(status, message);
  if (status == 401) {
    e.type = "authentication_error";
    e.code = "invalid_api_key";
  }
  if (status == 403) e.type = "permission_error";
  if (status == 415) e.code = "unsupported_media_type";
  send_error(res, e);
}

std::string last_path_segment(const httplib::Request& req) { return req.path.substr(req.path.rfind('/') + 1); }

Result<std::unique_ptr<HttpServer>> HttpServer::create(Model& model, const ServerOptions& options) {
  auto ctx = std::make_unique<ServerContext>();
  ctx->options = options;
  const std::string id = options.model_id.empty() ? model_id_from_path(model.gguf().path) : options.model_id;
  SNIPER_ASSIGN_OR_RETURN(std::unique_ptr<ServedModel> served,
                          ServedModel::create(id, &model, nullptr, options, &ctx->metrics));
  ctx->models = ModelPool::create_pinned(std::move(served), model.gguf().path, options.model_aliases);
  return assemble(std::move(ctx));
}

Result<std::unique_ptr<HttpServer>> HttpServer::create(std::vector<ModelSource> sources, const ModelPoolOptions& pool,
                                                       ModelFileLoader loader, const ServerOptions& options) {
  auto ctx = std::make_unique<ServerContext>();
  ctx->options = options;
  Metrics* metrics = &ctx->metrics;
  ModelLoader load_served = [loader = std::move(loader), options, metrics](
                                const ModelSource& source, uint64_t mem_bytes) -> Result<std::unique_ptr<ServedModel>> {
    ServerOptions o = options;
    SNIPER_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, loader(source, mem_bytes, &o.session));
    Model* raw = model.get();
    return ServedModel::create(source.name, raw, std::move(model), o, metrics);
  };
  SNIPER_ASSIGN_OR_RETURN(ctx->models, ModelPool::create(std::move(sources), pool, std::move(load_served)));
  return assemble(std::move(ctx));
}

Result<std::unique_ptr<HttpServer>> HttpServer::assemble(std::unique_ptr<ServerContext> ctx) {
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->ctx_ = std::move(ctx);
  const ServerOptions& options = s->ctx_->options;
  s->guard_.bound_host = options.host;
  s->guard_.allowed_hosts = options.allowed_hosts;
  s->guard_.cors_origins = options.cors_origins;
  SNIPER_TRY(normalise_guard_options(&s->guard_));
  s->ctx_->contexts = std::make_unique<ContextStore>(
      options.context_dir.empty() ? ContextStore::default_dir() : options.context_dir, options.context_compression);
  // Every served model's digest is computed in the background from the start (or read from the cache).
  s->ctx_->digests = std::make_unique<FileDigests>(FileDigests::default_dir());
  for (const ModelStatus& m : s->ctx_->models->status()) s->ctx_->digests->digest(m.path);
  s->install_routes();
  ListenerOptions lo;
  lo.max_connections = options.max_connections;
  lo.max_connections_per_client = options.max_connections_per_client;
  lo.header_timeout_s = options.header_timeout_s;
  lo.timeout_s = options.timeout_s;
  lo.wire.max_body_bytes = options.max_body_bytes;
  const RequestLogOptions log = options.log;
  lo.on_request = [](const httplib::Request& req) {
    begin_request_record(req.remote_addr, req.method, req.path, req.get_header_value("User-Agent"));
  };
  lo.on_response = [log](const httplib::Request&, const httplib::Response& res, bool complete) {
    end_request_record(res.status, complete, log);
  };
  HttpServer* raw = s.get();
  s->listener_ = std::make_unique<HttpListener>(
      lo, [raw](httplib::Request& req, httplib::Response& res) { raw->dispatch(req, res); },
      [](int status, const std::string& message) { return dump_json(error_json(status_error(status, message))); });
  return s;
}

HttpServer::~HttpServer() {
  stop();
  listener_.reset();  // waits until every connection thread has ended (and released its lease)
  if (ctx_ != nullptr) ctx_->models.reset();
}

ModelPool& HttpServer::models() { return *ctx_->models; }
Metrics& HttpServer::metrics() { return ctx_->metrics; }
const std::string& HttpServer::host() const { return ctx_->options.host; }

Result<int> HttpServer::bind() {
  SNIPER_ASSIGN_OR_RETURN(port_, listener_->bind(ctx_->options.host, ctx_->options.port));
  return port_;
}

void HttpServer::run() { listener_->run(); }

void HttpServer::stop() {
  if (ctx_ != nullptr && ctx_->models != nullptr) ctx_->models->stop();
  if (listener_ != nullptr) listener_->stop();
}

ListenerStats HttpServer::connection_stats() const { return listener_->stats(); }

void HttpServer::route(const char* method, std::string path, RouteHandler handler) {
  constexpr std::string_view kName = "{name}";
  const bool named = path.size() > kName.size() && path.compare(path.size() - kName.size(), kName.size(), kName) == 0;
  if (named) path.resize(path.size() - kName.size());
  const bool json_body = std::string_view(method) == "POST";  // every POST route takes a JSON body
  routes_.push_back(Route{method, std::move(path), named, std::move(handler), json_body});
}

bool HttpServer::Route::matches(const std::string& request_path) const {
  if (!named) return request_path == path;
  return request_path.size() > path.size() && request_path.compare(0, path.size(), path) == 0 &&
         request_path.find('/', path.size()) == std::string::npos;
}

void HttpServer::dispatch(httplib::Request& req, httplib::Response& res) {
  const ServerContext& c = *ctx_;
  // The request guard first (request_guard.h): a page in the user's browser must not reach the
  // routes under another name (DNS rebinding) or from another origin.
  const std::string host = req.get_header_value("Host");
  if (auto e = check_host(guard_, req.has_header("Host") ? &host : nullptr, req.version)) {
    return send_api_error(req.path, res, e->status, e->message);
  }
  const std::string origin = req.get_header_value("Origin");
  const OriginVerdict verdict = check_origin(guard_, req.has_header("Origin") ? &origin : nullptr, host);
  if (verdict == OriginVerdict::kRefused) {
    return send_api_error(req.path, res, 403,
                          "cross-origin requests from '" + origin.substr(0, 200) +
                              "' are refused; start the server with --cors-origin " + origin.substr(0, 200) +
                              " to allow that origin");
  }
  if (verdict == OriginVerdict::kAllowed) {
    res.set_header("Access-Control-Allow-Origin", allow_origin_value(guard_, origin));
    res.set_header("Vary", "Origin");
  }
  if (req.method == "OPTIONS") {  // a CORS preflight (or a plain OPTIONS): no route, no key
    res.status = 204;
    res.set_header("Allow", "GET, POST, DELETE, OPTIONS");
    if (verdict == OriginVerdict::kAllowed) {
      res.set_header("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
      const std::string asked = req.get_header_value("Access-Control-Request-Headers");
      res.set_header("Access-Control-Allow-Headers", asked.empty() ? "Authorization, Content-Type, X-Api-Key" : asked);
      res.set_header("Access-Control-Max-Age", "600");
    }
    return;
  }
  // Authentication: every route but the page and /health needs the key when one is set.
  // The key comes as "Authorization: Bearer KEY" or (Anthropic's clients) "x-api-key: KEY".
  if (!c.options.api_key.empty() && req.path != "/" && req.path != "/health") {
    const std::string auth = req.get_header_value("Authorization");
    const std::string x_api_key = req.get_header_value("x-api-key");
    constexpr std::string_view kBearer = "Bearer ";
    const bool bearer_ok = auth.size() > kBearer.size() && auth.compare(0, kBearer.size(), kBearer) == 0 &&
                           same_secret(auth.substr(kBearer.size()), c.options.api_key);
    if (!bearer_ok && !same_secret(x_api_key, c.options.api_key)) {
      const std::string message = auth.empty() && x_api_key.empty()
                                      ? "missing API key: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'"
                                      : "invalid API key";
      return send_api_error(req.path, res, 401, message);
    }
  }
  std::set<std::string> allowed;  // methods of the routes whose path matches
  for (const Route& r : routes_) {
    if (!r.matches(req.path)) continue;
    if (req.method != r.method) {
      allowed.insert(r.method);
      continue;
    }
    if (r.json_body && !is_json_content_type(req.get_header_value("Content-Type"))) {
      const std::string type = req.get_header_value("Content-Type");
      return send_api_error(req.path, res, 415,
                            (type.empty() ? std::string("the request has no Content-Type")
                                          : "Content-Type is '" + type.substr(0, 100) + "'") +
                                " but " + req.method + " " + r.path + (r.named ? "{name}" : "") +
                                " takes application/json");
    }
    // serve --temp, --top-k, ...: the sampling fields a generation request leaves out (after the
    // guard, the key and the Content-Type check: a refused body is never parsed).
    if (auto body = apply_sampling_defaults(req.method, req.path, req.body, c.options.sampling_defaults)) {
      req.body = std::move(*body);
    }
    try {
      r.handler(req, res);
      if (res.status == -1) res.status = 200;  // httplib's convention: a handler that set no status succeeded
    } catch (const std::exception& ex) {
      res = httplib::Response();
      send_error(res, status_error(500, std::string("internal error: ") + ex.what()));
    } catch (...) {
      res = httplib::Response();
      send_error(res, status_error(500, "internal error"));
    }
    return;
  }
  // In the API's own error shape (Ollama's {"error": "..."} under /api/, Anthropic's, OpenAI's).
  if (allowed.empty()) return send_api_error(req.path, res, 404, "no route " + req.method + " " + req.path);
  std::string methods;
  for (const std::string& m : allowed) methods += (methods.empty() ? "" : ", ") + m;
  send_api_error(req.path, res, 405,
                 "method " + req.method + " is not allowed on " + req.path + " (allowed: " + methods + ")");
  res.set_header("Allow", methods);
}

void HttpServer::install_routes() {
  ServerContext* c = ctx_.get();
  HttpServer* self = this;
  route("GET", "/", [](const httplib::Request&, httplib::Response& res) {
    const std::string_view page = webui_index_html();
    res.set_content(page.data(), page.size(), "text/html; charset=utf-8");
  });
  route("GET", "/health", [c](const httplib::Request&, httplib::Response& res) {
    const std::string why = c->options.degraded ? c->options.degraded() : std::string();
    if (!why.empty()) return send_json(res, Json{{"status", "degraded"}, {"reason", why}}, 503);
    send_json(res, Json{{"status", "ok"}});
  });
  route("GET", "/v1/models", [c](const httplib::Request&, httplib::Response& res) {
    Json data = Json::array();
    for (const ModelStatus& m : c->models->status()) data.push_back(model_json(m));
    send_json(res, Json{{"object", "list"}, {"data", data}});
  });
  route("GET", "/v1/models/{name}", [c](const httplib::Request& req, httplib::Response& res) {
    const std::string name = last_path_segment(req);
    for (const ModelStatus& m : c->models->status()) {
      if (m.name == name) return send_json(res, model_json(m));
    }
    ApiError e = bad_request("the model '" + name + "' does not exist", "model", "model_not_found");
    e.status = 404;
    send_error(res, e);
  });
  // The default model (or ?model=NAME); details that need it loaded are left out when it is not
  // (no load here).
  route("GET", "/props", [c](const httplib::Request& req, httplib::Response& res) {
    // ?model=NAME: that model (the web UI's picker); else the default one.
    const std::string asked = req.get_param_value("model");
    const std::string name = !asked.empty() && c->models->has(asked) ? asked : c->models->default_name();
    Json j = Json::object();
    j["model"] = name;
    j["slots"] = c->options.n_slots;
    j["memory_budget_bytes"] = c->models->options().mem_bytes;
    j["models"] = c->models->status().size();
    std::shared_ptr<ModelLease> lease = c->models->acquire_if_loaded(name);
    j["loaded"] = lease != nullptr;
    if (lease != nullptr) {
      const Model& m = *lease->model().model;
      j["model_path"] = m.gguf().path;
      j["n_ctx"] = lease->model().scheduler->n_ctx();
      j["residency"] = residency_name(m);
      j["streams"] = m.streams();                                     // some weights stream from the SSD
      j["streams_experts"] = m.streams() && m.plan().stream_experts;  // through the expert cache
      j["memory_budget_bytes"] = m.options().mem_bytes;
      j["arch"] = m.config().arch;
      j["n_params"] = count_params(m.gguf());
      j["chat_template"] = lease->model().chat_template.has_value();
    }
    send_json(res, j);
  });
  route("GET", "/metrics", [c, self](const httplib::Request&, httplib::Response& res) {
    res.set_content(c->metrics.render(current_rss_bytes(), peak_rss_bytes(), c->models->options().mem_bytes) +
                        c->models->metrics_text() + connection_metrics(self->connection_stats()),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  route("POST", "/v1/chat/completions",
        [c](const httplib::Request& req, httplib::Response& res) { handle_chat_completions(*c, req, res); });
  route("POST", "/v1/completions",
        [c](const httplib::Request& req, httplib::Response& res) { handle_completions(*c, req, res); });
  route("POST", "/v1/embeddings",
        [c](const httplib::Request& req, httplib::Response& res) { handle_openai_embeddings(*c, req, res); });
  route("POST", "/api/embed",
        [c](const httplib::Request& req, httplib::Response& res) { handle_ollama_embed(*c, req, res); });
  route("POST", "/api/embeddings",
        [c](const httplib::Request& req, httplib::Response& res) { handle_ollama_embeddings(*c, req, res); });
  route("POST", "/v1/context/save",
        [c](const httplib::Request& req, httplib::Response& res) { handle_context_save(*c, req, res); });
  route("POST", "/v1/context/load",
        [c](const httplib::Request& req, httplib::Response& res) { handle_context_load(*c, req, res); });
  route("POST", "/v1/context/upload",
        [c](const httplib::Request& req, httplib::Response& res) { handle_context_upload(*c, req, res); });
  route("POST", "/v1/context/download",
        [c](const httplib::Request& req, httplib::Response& res) { handle_context_download(*c, req, res); });
  // Ollama's API (ollama_routes.cpp) and Anthropic's Messages API (anthropic_routes.cpp).
  route("GET", "/api/version",
        [c](const httplib::Request& req, httplib::Response& res) { handle_ollama_version(*c, req, res); });
  route("GET", "/api/tags",
        [c](const httplib::Request& req, httplib::Response& res) { handle_ollama_tags(*c, req, res); });
  route("POST", "/api/show",
        [c](const httplib::Request& req, httplib::Response& res) { handle_ollama_show(*c, req, res); });
  route("GET", "/api/ps", [c](const httplib::Request& req, httplib::Response& res) { handle_ollama_ps(*c, req, res); });
  // Ollama's model management has no counterpart here: 501 in Ollama's shape, naming what to do.
  for (const char* path : {"/api/pull", "/api/push", "/api/create", "/api/copy"}) {
    route("POST", path, [](const httplib::Request& req, httplib::Response& res) {
      send_api_error(req.path, res, 501,
                     req.path.substr(5) +
                         " is not supported by sniper serve: it serves the GGUF files it was started with "
                         "(--model, --models DIR); fetch one with `sniper pull` and restart, or put it in the --models "
                         "directory");
    });
  }
  route("DELETE", "/api/delete", [](const httplib::Request& req, httplib::Response& res) {
    send_api_error(req.path, res, 501,
                   "delete is not supported by sniper serve: it never deletes model files; remove the GGUF from the "
                   "models directory yourself");
  });
  route("POST", "/api/chat",
        [c](const httplib::Request& req, httplib::Response& res) { handle_ollama_chat(*c, req, res); });
  route("POST", "/api/generate",
        [c](const httplib::Request& req, httplib::Response& res) { handle_ollama_generate(*c, req, res); });
  route("POST", "/v1/messages",
        [c](const httplib::Request& req, httplib::Response& res) { handle_anthropic_messages(*c, req, res); });
  route("POST", "/v1/messages/count_tokens",
        [c](const httplib::Request& req, httplib::Response& res) { handle_anthropic_count_tokens(*c, req, res); });
  route("GET", "/v1/context",
        [c](const httplib::Request& req, httplib::Response& res) { handle_context_list(*c, req, res); });
  route("DELETE", "/v1/context/{name}",
        [c](const httplib::Request& req, httplib::Response& res) { handle_context_delete(*c, req, res); });
}

}  // namespace sniper::server
