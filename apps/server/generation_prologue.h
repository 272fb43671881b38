// SPDX-License-Identifier: MIT
// The one prologue of every generation route (POST /v1/chat/completions, /v1/completions,
// /api/chat, /api/generate, /v1/messages): once an API's parser has turned the body into a
// GenerationRequest, prepare_generation() leases the model, applies what depends on it (thinking),
// renders the chat through the model's template (or tokenizes the text), checks that the prompt
// fits the context and builds the scheduler Job. What needs the model is checked here for every
// API: logit_bias token ids against the vocabulary (text entries tokenized), and a request's
// context window (num_ctx) against the model's trained context and the slot's. The route then frames the job's output
// in its API's wire format (job_runner.h). A new generation route or field goes through here, so every API gets it the
// same way (docs/server-requests.md). Errors are ApiErrors for the route to send in its API's error shape. Runs on the
// HTTP thread; thread-safe (the model pool and the served models are).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/chat_format.h"
#include "server/job.h"
#include "server/model_pool.h"
#include "server/request_types.h"

namespace sniper::server {

struct ServerContext;

// A generation request in neutral form.
struct GenerationRequest {
  std::string model;  // the pool's model name; "" = the pool's default
  GenerationParams params;
  // The prompt: a chat (messages rendered with the model's template, or "User: ..." lines for a
  // model without one), or text tokenized as it is (special tokens parsed, BOS added).
  bool chat = false;
  Json messages = Json::array();  // OpenAI-shaped; the renderer validates them
  Json tools;                     // null or an OpenAI tools array
  Json template_kwargs = Json::object();
  std::string text;
  // Images for the text prompt (Ollama raw /api/generate): image parts (media_input.h), each at
  // one <__media__> marker of the text, or all before it when it has none (as sniper run).
  Json text_media = Json::array();
  // Thinking asked for by the API (Ollama think, Anthropic thinking): becomes the template's
  // enable_thinking when the model supports thinking; otherwise ignored, or a 400 when
  // thinking_required (Ollama answers "does not support thinking").
  std::optional<bool> thinking;
  bool thinking_required = false;
  std::string prompt_param = "messages";  // the field a too-long prompt is reported on
};

// The tokens of a prompt and, for a chat, how the template rendered it.
struct PromptTokens {
  std::vector<int32_t> ids;
  RenderedChat rendered;  // chat only
  // A chat with media: the chunks and the prompt as cells (ids then equals its cells, with
  // kMediaToken at media cells); null for text.
  std::shared_ptr<JobMedia> media;
};

// What a route needs to run and frame the job.
struct PreparedGeneration {
  std::shared_ptr<ModelLease> lease;  // held until the response is written
  PromptTokens prompt;
  std::shared_ptr<Job> job;
  bool template_rendered = false;  // a chat template rendered the prompt: parse thinking and tool calls
  bool tools = false;              // the request offered tools
};

// Leases request.model (unless `lease` is given: a route that had to acquire it itself),
// renders/tokenizes the prompt and builds the job. Errors: the pool's (404 unknown model, 503
// while loading fails), 400 for an invalid chat, a prompt that does not fit (code
// context_length_exceeded), or a parameter the model cannot honour.
[[nodiscard]] std::optional<ApiError> prepare_generation(ServerContext& ctx, const GenerationRequest& request,
                                                         std::shared_ptr<ModelLease> lease, PreparedGeneration* out);

// The pieces of the prologue, shared with the context routes (context_routes.cpp):
// Renders a chat (template or plain) into ids. The template's markup becomes control tokens;
// text from the request never does ("<|im_end|>" typed by a user is plain text: the request's
// strings are escaped before rendering, Tokenizer::escape_special_text), unless
// content_special (serve --content-special-tokens, the old behaviour).
// With `media` (chunks encoded, prompt empty): the messages hold `media_marker` where each chunk
// goes (take_media), and the prompt is built with the chunks in place (media->prompt, out->media).
[[nodiscard]] std::optional<ApiError> chat_prompt_tokens(const ServedModel& m, const ChatRequest& request,
                                                         PromptTokens* out, bool add_generation_prompt = true,
                                                         bool content_special = false,
                                                         std::shared_ptr<JobMedia> media = nullptr,
                                                         std::string_view media_marker = {});
// Tokenizes a text prompt (BOS added, special tokens parsed).
std::vector<int32_t> text_prompt_tokens(const ServedModel& m, const std::string& prompt);
// 400 context_length_exceeded unless 0 < n_prompt < n_ctx (the slot's context, or the one given).
[[nodiscard]] std::optional<ApiError> check_prompt_length(const ServedModel& m, size_t n_prompt);
[[nodiscard]] std::optional<ApiError> check_prompt_length(size_t n_prompt, int64_t n_ctx);
// The model a request names in body["model"] (absent or null: the pool's default), leased
// (loaded on demand, waiting at most --load-timeout). Null with *error set on failure: not a
// string (400), unknown (404 model_not_found), or the pool's errors.
std::shared_ptr<ModelLease> lease_model(ServerContext& ctx, const Json& body, ApiError* error);

}  // namespace sniper::server
