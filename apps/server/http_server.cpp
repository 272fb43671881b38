// SPDX-License-Identifier: MIT
#include "server/http_server.h"

#include <cstring>
#include <exception>

#include "base/process_stats.h"
#include "engine/session_state.h"
#include "server/server_context.h"
#include "server/webui_asset.h"

namespace sniper::server {

namespace {

// Routes and their methods, for 405 answers (httplib itself only knows "not found").
struct KnownRoute {
  const char* path;
  bool prefix;  // path is a prefix followed by a name
  const char* methods;
};
constexpr KnownRoute kRoutes[] = {
    {"/", false, "GET"},
    {"/health", false, "GET"},
    {"/props", false, "GET"},
    {"/metrics", false, "GET"},
    {"/v1/models", false, "GET"},
    {"/v1/models/", true, "GET"},
    {"/v1/chat/completions", false, "POST"},
    {"/v1/completions", false, "POST"},
    {"/v1/context", false, "GET"},
    {"/v1/context/save", false, "POST"},
    {"/v1/context/load", false, "POST"},
    {"/v1/context/", true, "DELETE"},
};

const char* allowed_methods(const std::string& path) {
  for (const KnownRoute& r : kRoutes) {
    if (r.prefix ? (path.size() > std::strlen(r.path) && path.compare(0, std::strlen(r.path), r.path) == 0 &&
                    path.find('/', std::strlen(r.path)) == std::string::npos)
                 : path == r.path) {
      return r.methods;
    }
  }
  return nullptr;
}

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

}  // namespace

void send_json(httplib::Response& res, const Json& body, int status) {
  res.status = status;
  res.set_content(dump_json(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& error) { send_json(res, error_json(error), error.status); }

Result<std::unique_ptr<HttpServer>> HttpServer::create(Model& model, const ServerOptions& options) {
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->ctx_ = std::make_unique<ServerContext>();
  ServerContext& ctx = *s->ctx_;
  ctx.model = &model;
  ctx.options = options;
  SNIPER_ASSIGN_OR_RETURN(ctx.tokenizer, model.tokenizer());
  ctx.model_id = options.model_id.empty() ? model_id_from_path(model.gguf().path) : options.model_id;
  if (!model.chat_template().empty()) {
    auto tmpl = ChatTemplate::parse(model.chat_template());
    if (!tmpl.ok()) return make_error("the model's chat template: %s", tmpl.error().message.c_str());
    ctx.chat_template.emplace(std::move(tmpl).value());
    ctx.chat_format = detect_chat_format(model.chat_template());
  }
  const Tokenizer& tok = *ctx.tokenizer;
  if (tok.bos_id() >= 0) ctx.bos_token = tok.token_to_piece(tok.bos_id(), true);
  if (tok.eos_id() >= 0) ctx.eos_token = tok.token_to_piece(tok.eos_id(), true);
  SNIPER_ASSIGN_OR_RETURN(ctx.fingerprint, model_fingerprint(model.gguf()));
  ctx.contexts = std::make_unique<ContextStore>(options.context_dir.empty() ? ContextStore::default_dir() : options.context_dir);
  SchedulerOptions so;
  so.n_slots = options.n_slots;
  so.queue_capacity = options.queue_capacity;
  so.session = options.session;
  so.model_fingerprint = ctx.fingerprint;
  SNIPER_ASSIGN_OR_RETURN(ctx.scheduler, Scheduler::create(model, tok, so, &ctx.metrics));
  s->http_ = std::make_unique<httplib::Server>();
  s->install_routes();
  return s;
}

HttpServer::~HttpServer() {
  stop();
  if (ctx_ != nullptr) ctx_->scheduler.reset();
}

Scheduler& HttpServer::scheduler() { return *ctx_->scheduler; }
Metrics& HttpServer::metrics() { return ctx_->metrics; }
const std::string& HttpServer::host() const { return ctx_->options.host; }

Result<int> HttpServer::bind() {
  const ServerOptions& o = ctx_->options;
  if (o.port < 0 || o.port > 65535) return make_error("--port is %d but must be in [0, 65535]", o.port);
  int port;
  if (o.port == 0) {
    port = http_->bind_to_any_port(o.host);
  } else {
    port = http_->bind_to_port(o.host, o.port) ? o.port : -1;
  }
  if (port <= 0) return make_error("cannot listen on %s:%d (address in use or not available)", o.host.c_str(), o.port);
  port_ = port;
  return port;
}

void HttpServer::run() { http_->listen_after_bind(); }

void HttpServer::stop() {
  if (ctx_ != nullptr && ctx_->scheduler != nullptr) ctx_->scheduler->stop();
  if (http_ != nullptr) http_->stop();
}

void HttpServer::install_routes() {
  ServerContext* c = ctx_.get();
  httplib::Server& h = *http_;
  const ServerOptions& o = c->options;
  // Every slot and queued request holds a worker while it streams; keep some for control.
  const size_t n_workers = static_cast<size_t>(o.n_slots + o.queue_capacity + 8);
  h.new_task_queue = [n_workers] { return new httplib::ThreadPool(n_workers); };
  h.set_payload_max_length(o.max_body_bytes);
  h.set_keep_alive_timeout(2);
  h.set_read_timeout(30);
  h.set_write_timeout(30);

  h.set_pre_routing_handler([c](const httplib::Request& req, httplib::Response& res) {
    if (c->options.api_key.empty() || req.path == "/" || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (auth.size() > kBearer.size() && auth.compare(0, kBearer.size(), kBearer) == 0 &&
        same_secret(auth.substr(kBearer.size()), c->options.api_key)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    ApiError e;
    e.status = 401;
    e.type = "authentication_error";
    e.code = "invalid_api_key";
    e.message = auth.empty() ? "missing API key: send 'Authorization: Bearer KEY'" : "invalid API key";
    send_error(res, e);
    return httplib::Server::HandlerResponse::Handled;
  });

  h.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // our own error JSON
    ApiError e;
    e.status = res.status;
    if (res.status == 404) {
      if (const char* methods = allowed_methods(req.path)) {
        e.status = 405;
        e.message = "method " + req.method + " is not allowed on " + req.path + " (allowed: " + methods + ")";
        res.set_header("Allow", methods);
      } else {
        e.message = "no route " + req.method + " " + req.path;
      }
    } else if (res.status == 413) {
      e.message = "the request body is too large";
      e.code = "request_too_large";
    } else if (res.status >= 500) {
      e.type = "server_error";
      e.message = "internal server error";
    } else {
      e.message = "bad request";
    }
    send_error(res, e);
    return httplib::Server::HandlerResponse::Handled;
  }));

  h.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    ApiError e;
    e.status = 500;
    e.type = "server_error";
    e.message = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& ex) {
      e.message = std::string("internal error: ") + ex.what();
    } catch (...) {
    }
    send_error(res, e);
  });

  h.Get("/", [](const httplib::Request&, httplib::Response& res) {
    const std::string_view page = webui_index_html();
    res.set_content(page.data(), page.size(), "text/html; charset=utf-8");
  });
  h.Get("/health", [](const httplib::Request&, httplib::Response& res) { send_json(res, Json{{"status", "ok"}}); });
  auto model_json = [c] {
    Json m = Json::object();
    m["id"] = c->model_id;
    m["object"] = "model";
    m["created"] = 0;
    m["owned_by"] = "sniper";
    return m;
  };
  h.Get("/v1/models", [model_json](const httplib::Request&, httplib::Response& res) {
    send_json(res, Json{{"object", "list"}, {"data", Json::array({model_json()})}});
  });
  h.Get(R"(/v1/models/([^/]+))", [c, model_json](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] != c->model_id) {
      ApiError e = bad_request("the model '" + std::string(req.matches[1]) + "' does not exist", "model", "model_not_found");
      e.status = 404;
      return send_error(res, e);
    }
    send_json(res, model_json());
  });
  h.Get("/props", [c](const httplib::Request&, httplib::Response& res) {
    const Model& m = *c->model;
    Json j = Json::object();
    j["model"] = c->model_id;
    j["model_path"] = m.gguf().path;
    j["n_ctx"] = c->scheduler->n_ctx();
    j["slots"] = c->scheduler->n_slots();
    j["residency"] = residency_name(m);
    j["memory_budget_bytes"] = m.options().mem_bytes;
    j["arch"] = m.config().arch;
    j["n_params"] = count_params(m.gguf());
    j["chat_template"] = c->chat_template.has_value();
    send_json(res, j);
  });
  h.Get("/metrics", [c](const httplib::Request&, httplib::Response& res) {
    res.set_content(c->metrics.render(current_rss_bytes(), peak_rss_bytes(), c->model->options().mem_bytes),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  h.Post("/v1/chat/completions", [c](const httplib::Request& req, httplib::Response& res) { handle_chat_completions(*c, req, res); });
  h.Post("/v1/completions", [c](const httplib::Request& req, httplib::Response& res) { handle_completions(*c, req, res); });
  h.Post("/v1/context/save", [c](const httplib::Request& req, httplib::Response& res) { handle_context_save(*c, req, res); });
  h.Post("/v1/context/load", [c](const httplib::Request& req, httplib::Response& res) { handle_context_load(*c, req, res); });
  h.Get("/v1/context", [c](const httplib::Request& req, httplib::Response& res) { handle_context_list(*c, req, res); });
  h.Delete(R"(/v1/context/([^/]+))", [c](const httplib::Request& req, httplib::Response& res) { handle_context_delete(*c, req, res); });
}

}  // namespace sniper::server
