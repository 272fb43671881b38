// SPDX-License-Identifier: MIT
// ServerContext: what the route handlers share (options, metrics, context store, and the model
// pool a request leases its model from: tokenizer, template and scheduler are per model, in
// ServedModel), plus the small helpers that write JSON and error responses. Owned by
// HttpServer; handlers run on HttpListener's connection threads and only use thread-safe members.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <httplib.h>

#include "engine/model.h"
#include "server/chat_format.h"
#include "server/context_store.h"
#include "server/metrics.h"
#include "server/model_facts.h"
#include "server/model_pool.h"
#include "server/openai_protocol.h"
#include "server/scheduler.h"
#include "server/server_options.h"
#include "tokenizer/chat_template.h"

namespace sniper::server {

struct ServerContext {
  ServerOptions options;
  Metrics metrics;
  std::unique_ptr<ContextStore> contexts;
  std::unique_ptr<FileDigests> digests;  // the models' SHA-256 for Ollama's digest (model_facts.h)
  std::unique_ptr<ModelPool> models;     // last: its schedulers stop before the rest is destroyed
};

void send_json(httplib::Response& res, const Json& body, int status = 200);
void send_error(httplib::Response& res, const ApiError& error);
// An error in the shape of the API `path` belongs to: Ollama's under /api/, Anthropic's under
// /v1/messages, OpenAI's otherwise.
void send_api_error(const std::string& path, httplib::Response& res, int status, const std::string& message);
// The name in a "/prefix/{name}" route: the path after its last '/'.
std::string last_path_segment(const httplib::Request& req);

// Route handlers (generation_routes.cpp, context_routes.cpp).
void handle_chat_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_context_save(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_context_load(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_context_list(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_context_delete(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
// ollama_routes.cpp: /api/version, /api/tags, /api/show, /api/ps, /api/chat, /api/generate.
void handle_ollama_version(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_ollama_tags(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_ollama_show(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_ollama_ps(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_ollama_chat(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_ollama_generate(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
// anthropic_routes.cpp: POST /v1/messages.
void handle_anthropic_messages(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
// anthropic_count_tokens.cpp: POST /v1/messages/count_tokens.
void handle_anthropic_count_tokens(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
// context_sync_routes.cpp: POST /v1/context/upload and /v1/context/download (object storage).
// embedding_routes.cpp
void handle_openai_embeddings(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_ollama_embed(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_ollama_embeddings(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_context_upload(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_context_download(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

}  // namespace sniper::server
