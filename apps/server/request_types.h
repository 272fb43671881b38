// SPDX-License-Identifier: MIT
// The server's protocol-neutral request and error types. Each API's parser (openai_protocol,
// ollama_protocol, anthropic_protocol) validates its own wire format into these, with the shared
// field validators (field_validators.h); the generation prologue (generation_prologue.h) turns
// them into a job, whichever API the request came from. An ApiError is rendered in each API's own
// error shape by its route (error_json, ollama_error_json, anthropic_error_json).
// Invariants: a GenerationParams accepted by a parser holds only values in their documented
// ranges (its sampler passes SamplerConfig::validate()), so nothing from a request can reach a
// CHECK. Plain data; thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sampling/grammar.h"
#include "sampling/sampler.h"

namespace sniper::server {

using Json = nlohmann::ordered_json;

// An error to send: HTTP status and the fields of OpenAI's error object (the other APIs use
// status and message).
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the request field at fault ("temperature", "options.top_k"); empty -> null
  std::string code;   // empty -> null
};

// A 400 invalid_request_error.
ApiError bad_request(std::string message, std::string param = {}, std::string code = {});
// An ApiError for an HTTP status: server_error type from 500 on; code request_too_large (413),
// server_busy (503).
ApiError status_error(int status, std::string message);

// A logit_bias entry as the request gave it, before the model's vocabulary is known: a token id,
// or text whose tokens all get the bias (llama.cpp's extension). Resolved and checked against
// the vocabulary by the generation prologue.
struct LogitBiasEntry {
  int64_t token = -1;  // >= 0: a token id
  std::string text;    // token < 0: text, tokenized without special tokens
  float bias = 0;      // in [-100, 100] or -inf (banned: -100 and false)
  std::string field;   // the entry's path for errors ("logit_bias.50256")
};

// Fields every generation request has, whatever its API.
struct GenerationParams {
  std::string model;  // empty when absent
  SamplerConfig sampler;
  int64_t max_tokens = -1;  // -1: until the end of the context
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;              // stream_options.include_usage
  bool ignore_eos = false;                 // extension: keep generating past end-of-generation tokens
  std::shared_ptr<const Grammar> grammar;  // structured output; null: unconstrained
  std::vector<LogitBiasEntry> logit_bias;  // resolved against the vocabulary by the prologue
  // The request's context window (Ollama options.num_ctx): prompt and reply together, checked
  // against the model's trained context and the server's; 0: the server's whole context.
  int64_t n_ctx = 0;
};

struct ChatRequest {
  GenerationParams params;
  Json messages;  // validated by the renderer
  Json tools;     // null or array
  Json template_kwargs = Json::object();
};

struct CompletionRequest {
  GenerationParams params;
  std::string prompt;
};

}  // namespace sniper::server
