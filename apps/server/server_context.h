// SPDX-License-Identifier: MIT
// ServerContext: what the route handlers share (model, tokenizer, template, scheduler, metrics,
// context store), plus the small helpers that write JSON and error responses. Owned by
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
#include "server/keep_alive.h"
#include "server/metrics.h"
#include "server/openai_protocol.h"
#include "server/scheduler.h"
#include "server/server_options.h"
#include "tokenizer/chat_template.h"

namespace sniper::server {

struct ServerContext {
  Model* model = nullptr;
  const Tokenizer* tokenizer = nullptr;
  ServerOptions options;
  std::string model_id;
  std::optional<ChatTemplate> chat_template;  // absent: the model carries none
  ChatFormat chat_format;
  std::string bos_token, eos_token;
  uint64_t fingerprint = 0;
  Metrics metrics;
  std::unique_ptr<ContextStore> contexts;
  KeepAlive keep_alive;  // Ollama's keep_alive for this model (/api/ps)
  // The tokens' bytes for grammar-constrained sampling, built on first use (make_generation_job).
  std::mutex grammar_vocab_mu;
  std::shared_ptr<const TokenVocabulary> grammar_vocab;
  std::unique_ptr<Scheduler> scheduler;  // last: stopped before the rest is destroyed
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
// context_sync_routes.cpp: POST /v1/context/upload and /v1/context/download (object storage).
void handle_context_upload(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_context_download(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

// Shared by the generation and context routes: renders a chat (template or plain) or
// tokenizes a prompt into ids. Returns an error to send on failure.
struct PromptTokens {
  std::vector<int32_t> ids;
  RenderedChat rendered;  // chat only
};
std::optional<ApiError> chat_prompt_tokens(ServerContext& ctx, const ChatRequest& request, PromptTokens* out,
                                           bool add_generation_prompt = true);
std::vector<int32_t> text_prompt_tokens(const ServerContext& ctx, const std::string& prompt);
// Validates the model name (404 model_not_found unless empty or the served model) and the prompt
// length, and builds the generation job (sampler, stops, max tokens, grammar) for `prompt`.
std::optional<ApiError> make_generation_job(ServerContext& ctx, const GenerationParams& p,
                                            std::vector<int32_t> prompt, std::shared_ptr<Job>* out);
// 400 context_length_exceeded unless 0 < n_prompt < n_ctx.
std::optional<ApiError> check_prompt_length(const ServerContext& ctx, size_t n_prompt);

}  // namespace sniper::server
