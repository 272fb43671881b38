// SPDX-License-Identifier: MIT
// Context persistence routes: POST /v1/context/save {name, messages|prompt, compression?}
// (none|q8_0|q4_0, default serve --context-compression) evaluates the
// prompt in a slot (reusing any cached prefix) and writes its KV state to the context store;
// POST /v1/context/load {name} reads and verifies a saved state and restores it into an idle
// slot, where the next request starting with those tokens reuses it; GET /v1/context lists;
// DELETE /v1/context/{name} removes. Errors: bad names/bodies 400, unknown names 404, a state
// made for another model or KV shape 409, a corrupt or foreign file 400. Save and load act on
// the body's "model" (default: the pool's default model), loading it if needed.
#include <chrono>

#include "server/generation_prologue.h"
#include "server/server_context.h"

namespace sniper::server {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

ApiError with_status(ApiError e, int status, const char* type = nullptr) {
  e.status = status;
  if (type != nullptr) e.type = type;
  return e;
}

// Reads {"name": ...} from the body and validates it.
std::optional<ApiError> read_name(const Json& body, std::string* name) {
  auto it = body.find("name");
  if (it == body.end() || !it->is_string()) return bad_request("name is required and must be a string", "name");
  *name = it->get<std::string>();
  Status st = ContextStore::validate_name(*name);
  if (!st.ok()) return bad_request(st.error().message, "name");
  return std::nullopt;
}

ApiError busy() {
  return with_status(bad_request("the server is busy: all slots and the queue are full; retry later"), 503,
                     "server_error");
}

}  // namespace

void handle_context_save(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const auto t0 = std::chrono::steady_clock::now();
  Json body;
  if (auto e = parse_body(req.body, &body)) return send_error(res, *e);
  std::string name;
  if (auto e = read_name(body, &name)) return send_error(res, *e);
  ApiError lease_error;
  std::shared_ptr<ModelLease> lease = lease_model(ctx, body, &lease_error);
  if (lease == nullptr) return send_error(res, lease_error);
  const ServedModel& m = lease->model();
  ContextCompression compression = ctx.contexts->default_compression();
  if (auto it = body.find("compression"); it != body.end() && !it->is_null()) {
    auto c = it->is_string()
                 ? parse_context_compression(it->get<std::string>())
                 : Result<ContextCompression>(make_error("compression must be a string: none, q8_0 or q4_0"));
    if (!c.ok()) return send_error(res, bad_request(c.error().message, "compression"));
    compression = *c;
  }
  std::vector<int32_t> ids;
  if (body.contains("messages")) {
    ChatRequest chat;
    if (auto e = parse_chat_request(body, &chat)) return send_error(res, *e);
    PromptTokens pt;
    if (auto e = chat_prompt_tokens(m, chat, &pt, /*add_generation_prompt=*/false, ctx.options.content_special_tokens))
      return send_error(res, *e);
    ids = std::move(pt.ids);
  } else if (auto it = body.find("prompt"); it != body.end() && it->is_string()) {
    ids = text_prompt_tokens(m, it->get<std::string>());
  } else {
    return send_error(res, bad_request("messages (an array) or prompt (a string) is required", "prompt"));
  }
  if (auto e = check_prompt_length(m, ids.size())) return send_error(res, *e);
  auto job = std::make_shared<Job>();
  job->kind = JobKind::kSave;
  job->prompt = std::move(ids);
  if (!m.scheduler->submit(job)) return send_error(res, busy());
  const JobResult& r = job->wait_done();
  if (!r.error.empty()) {
    ApiError e = bad_request(r.error);
    e.status = r.error_status;
    if (e.status >= 500) e.type = "server_error";
    return send_error(res, e);
  }
  const auto t_write = std::chrono::steady_clock::now();
  if (Status ok = check_compressible(*r.state, compression); !ok.ok()) {
    return send_error(res, bad_request(ok.error().message, "compression"));
  }
  Status st = ctx.contexts->save(name, *r.state, compression);
  if (!st.ok()) return send_error(res, with_status(bad_request(st.error().message), 500, "server_error"));
  Json out = Json::object();
  out["name"] = name;
  out["n_tokens"] = r.state->n_tokens();
  out["n_evaluated"] = r.n_prompt - r.n_cached;
  out["bytes"] = ctx.contexts->file_bytes(name);
  out["compression"] = context_compression_name(compression);
  out["eval_ms"] = r.prompt_ms;
  out["write_ms"] = ms_since(t_write);
  out["ms"] = ms_since(t0);
  send_json(res, out);
}

void handle_context_load(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const auto t0 = std::chrono::steady_clock::now();
  Json body;
  if (auto e = parse_body(req.body, &body)) return send_error(res, *e);
  std::string name;
  if (auto e = read_name(body, &name)) return send_error(res, *e);
  ApiError lease_error;
  std::shared_ptr<ModelLease> lease = lease_model(ctx, body, &lease_error);
  if (lease == nullptr) return send_error(res, lease_error);
  const ServedModel& m = lease->model();
  if (!ctx.contexts->exists(name)) {
    return send_error(
        res, with_status(bad_request("no saved context named '" + name + "'", "name", "context_not_found"), 404));
  }
  auto state = ctx.contexts->load(name);
  if (!state.ok()) return send_error(res, bad_request(state.error().message, "name", "invalid_context_file"));
  const double read_ms = ms_since(t0);
  if (state->model_fingerprint != m.fingerprint) {
    char msg[256];
    std::snprintf(msg, sizeof(msg),
                  "context '%s' was saved with another model file (fingerprint %016llx, this model is %016llx)",
                  name.c_str(), static_cast<unsigned long long>(state->model_fingerprint),
                  static_cast<unsigned long long>(m.fingerprint));
    return send_error(res, with_status(bad_request(msg, "name", "context_model_mismatch"), 409));
  }
  auto job = std::make_shared<Job>();
  job->kind = JobKind::kLoad;
  job->load = std::make_shared<SessionState>(std::move(state).value());
  if (!m.scheduler->submit(job)) return send_error(res, busy());
  const JobResult& r = job->wait_done();
  if (!r.error.empty()) {
    ApiError e = bad_request("context '" + name + "': " + r.error, "name",
                             r.error_status == 409 ? "context_shape_mismatch" : "");
    e.status = r.error_status;
    if (e.status >= 500) e.type = "server_error";
    return send_error(res, e);
  }
  Json out = Json::object();
  out["name"] = name;
  out["n_tokens"] = r.n_prompt;
  out["slot"] = r.slot;
  out["read_ms"] = read_ms;
  out["restore_ms"] = r.prompt_ms;
  out["ms"] = ms_since(t0);
  send_json(res, out);
}

void handle_context_list(ServerContext& ctx, const httplib::Request&, httplib::Response& res) {
  Json data = Json::array();
  for (const ContextInfo& c : ctx.contexts->list()) {
    Json e = Json::object();
    e["name"] = c.name;
    e["n_tokens"] = c.n_tokens;
    e["bytes"] = c.bytes;
    e["created"] = c.created;
    data.push_back(std::move(e));
  }
  send_json(res, Json{{"object", "list"}, {"data", data}});
}

void handle_context_delete(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const std::string name = last_path_segment(req);
  Status st = ContextStore::validate_name(name);
  if (!st.ok()) return send_error(res, bad_request(st.error().message, "name"));
  auto removed = ctx.contexts->remove(name);
  if (!removed.ok()) return send_error(res, with_status(bad_request(removed.error().message), 500, "server_error"));
  if (!*removed) {
    return send_error(
        res, with_status(bad_request("no saved context named '" + name + "'", "name", "context_not_found"), 404));
  }
  send_json(res, Json{{"name", name}, {"object", "context"}, {"deleted", true}});
}

}  // namespace sniper::server
