// SPDX-License-Identifier: MIT
// Ollama's wire format (https://github.com/ollama/ollama/blob/main/docs/api.md): /api/chat and
// /api/generate request bodies parsed and validated into the server's GenerationParams plus
// Ollama's own fields (stream defaults to true, think, keep_alive, format, raw, system), Ollama
// messages converted to the OpenAI shape the chat renderer validates, and the assistant message
// converted back (tool call arguments as objects, reasoning as `thinking`).
// Sampling defaults follow Ollama: temperature 0.8, top_k 40, top_p 0.9, repeat_penalty 1.1,
// num_predict -1 (until the end or the context is full). options.num_ctx is the request's
// context window (prompt and reply): above the model's trained context or the server's --ctx it
// is a 400; within, the prompt must fit it and the reply stops when it is full (done_reason
// "length"); the slot's KV cache keeps the server's size. Unknown options are ignored, as Ollama
// does; known ones of the wrong type are 400s. Ollama has no logit_bias, grammar or tool_choice.
// Errors are {"error": "..."}. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "server/request_body.h"
#include "server/request_types.h"

namespace sniper::server {

struct OllamaRequest {
  std::string model;        // as sent ("name" or "name:tag")
  GenerationParams params;  // sampler, max_tokens, stop, grammar (params.model empty)
  bool stream = true;
  std::optional<bool> think;         // absent: the template's default
  std::optional<double> keep_alive;  // seconds; kKeepAliveForever for negative
  // /api/chat
  Json messages = Json::array();  // OpenAI-shaped
  Json tools;                     // null or array
  // /api/generate
  std::string prompt, system;
  bool raw = false;
  Json images = Json::array();  // image parts (media_input.h), from "images"
};

std::optional<ApiError> parse_ollama_chat(const Json& body, OllamaRequest* out);
std::optional<ApiError> parse_ollama_generate(const Json& body, OllamaRequest* out);

// {"error": message}
Json ollama_error_json(const std::string& message);
// The pool's name for an Ollama model name: "NAME:latest" is NAME.
std::string ollama_pool_name(const std::string& name);
// The OpenAI-shaped assistant message (ChatOutputParser::message()) as Ollama's: role, content
// (never null), thinking (when present), tool_calls [{"function": {"name", "arguments": {..}}}].
Json ollama_message(const Json& openai_message);

}  // namespace sniper::server
