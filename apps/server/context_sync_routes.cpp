// SPDX-License-Identifier: MIT
// Object-storage routes of the context store (server/context_sync.h):
//   POST /v1/context/upload   {"name": NAME, "remote": "s3://bucket/prefix"} pushes a saved context;
//   POST /v1/context/download {"name": NAME, "remote": "s3://bucket/prefix"} pulls one into the
//   store, verified (sha256, file checksum, this server's model fingerprint), ready for
//   POST /v1/context/load.
// The endpoint and credentials are the server's AWS_* environment, never the request's.
// Errors: a bad body 400; no such context (local for upload, remote for download) 404; a context
// of another model 409; credentials refused, endpoint unreachable, corrupt download or another S3
// error 502 with codes remote_forbidden, remote_unreachable, remote_context_corrupt, remote_error;
// no credentials configured 500 remote_not_configured.
#include "server/context_sync.h"
#include "server/server_context.h"

namespace sniper::server {

namespace {

struct SyncRequest {
  std::string name;
  S3Location where;
  std::string model;  // empty: the pool's default
};

std::optional<ApiError> parse_sync_request(const httplib::Request& req, const ServerContext& ctx, SyncRequest* out) {
  Json body;
  if (auto e = parse_body(req.body, &body)) return e;
  if (!body.is_object()) return bad_request("the body must be a JSON object {\"name\", \"remote\"}");
  auto name = body.find("name");
  if (name == body.end() || !name->is_string()) return bad_request("name is required and must be a string", "name");
  out->name = name->get<std::string>();
  Status st = ContextStore::validate_name(out->name);
  if (!st.ok()) return bad_request(st.error().message, "name");
  auto remote = body.find("remote");
  if (remote == body.end() || !remote->is_string()) {
    return bad_request("remote is required and must be an s3://bucket/prefix string", "remote");
  }
  auto where = parse_s3_url(remote->get<std::string>());
  if (!where.ok()) return bad_request(where.error().message, "remote");
  out->where = std::move(where).value();
  if (auto model = body.find("model"); model != body.end() && !model->is_null()) {
    out->model = model->is_string() ? model->get<std::string>() : "";
    if (!model->is_string() || !ctx.models->has(model->get<std::string>())) {
      ApiError e = bad_request("the model does not exist on this server (GET /v1/models lists them)", "model",
                               "model_not_found");
      e.status = 404;
      return e;
    }
  }
  return std::nullopt;
}

ApiError sync_error(SyncFailure why, const Error& error) {
  ApiError e = bad_request(error.message, "name", sync_failure_code(why));
  switch (why) {
    case SyncFailure::kInvalid: e.status = 400; break;
    case SyncFailure::kNotFound: e.status = 404; break;
    case SyncFailure::kModelMismatch: e.status = 409; break;
    default:
      e.status = 502;
      e.type = "server_error";
      e.param.clear();
  }
  return e;
}

Json transfer_json(const ContextTransfer& t) {
  Json out = Json::object();
  out["name"] = t.name;
  out["object"] = "context";
  out["url"] = t.url;
  out["bytes"] = t.bytes;
  out["sha256"] = t.sha256;
  out["n_tokens"] = t.n_tokens;
  out["ms"] = t.ms;
  return out;
}

// The sync client for the request, or an error when the server has no credentials.
std::optional<ApiError> make_sync(const SyncRequest& r, std::optional<ContextSync>* out) {
  auto config = s3_config_from_env();
  if (!config.ok()) {
    ApiError e = bad_request(config.error().message, "", "remote_not_configured");
    e.status = 500;
    e.type = "server_error";
    return e;
  }
  out->emplace(std::move(config).value(), r.where);
  return std::nullopt;
}

}  // namespace

void handle_context_upload(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  SyncRequest r;
  if (auto e = parse_sync_request(req, ctx, &r)) return send_error(res, *e);
  std::optional<ContextSync> sync;
  if (auto e = make_sync(r, &sync)) return send_error(res, *e);
  auto t = sync->push(*ctx.contexts, r.name);
  if (!t.ok()) return send_error(res, sync_error(sync->last_failure(), t.error()));
  send_json(res, transfer_json(*t));
}

void handle_context_download(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  SyncRequest r;
  if (auto e = parse_sync_request(req, ctx, &r)) return send_error(res, *e);
  std::optional<ContextSync> sync;
  if (auto e = make_sync(r, &sync)) return send_error(res, *e);
  ApiError lease_error;
  std::shared_ptr<ModelLease> lease = ctx.models->acquire(r.model, &lease_error);  // its fingerprint checks the file
  if (lease == nullptr) return send_error(res, lease_error);
  auto t = sync->pull(*ctx.contexts, r.name, lease->model().fingerprint);
  if (!t.ok()) return send_error(res, sync_error(sync->last_failure(), t.error()));
  send_json(res, transfer_json(*t));
}

}  // namespace sniper::server
