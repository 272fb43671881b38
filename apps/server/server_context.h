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
// An ApiError for an HTTP status: server_error type from 500 on; code request_too_large (413),
// server_busy (503).
ApiError status_error(int status, std::string message);
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
void handle_context_upload(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_context_download(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

// Shared by the generation and context routes: renders a chat (template or plain) or
// tokenizes a prompt into ids. Returns an error to send on failure.
struct PromptTokens {
  std::vector<int32_t> ids;
  RenderedChat rendered;  // chat only
};
std::optional<ApiError> chat_prompt_tokens(const ServedModel& m, const ChatRequest& request, PromptTokens* out,
                                           bool add_generation_prompt = true);
std::vector<int32_t> text_prompt_tokens(const ServedModel& m, const std::string& prompt);
// Builds the generation job (sampler, stops, max tokens, grammar) for `prompt` on model `m`:
// 400 context_length_exceeded unless the prompt fits.
std::optional<ApiError> make_generation_job(ServedModel& m, const GenerationParams& p, std::vector<int32_t> prompt,
                                            std::shared_ptr<Job>* out);
// 400 context_length_exceeded unless 0 < n_prompt < n_ctx.
std::optional<ApiError> check_prompt_length(const ServedModel& m, size_t n_prompt);
// The model a request names in body["model"] (absent or null: the pool's default), leased
// (loaded on demand, waiting at most --load-timeout). Null with *error set on failure: not a
// string (400), unknown (404 model_not_found), or the pool's errors.
std::shared_ptr<ModelLease> lease_model(ServerContext& ctx, const Json& body, ApiError* error);

}  // namespace sniper::server
