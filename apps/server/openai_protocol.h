// SPDX-License-Identifier: MIT
// The OpenAI wire format: request bodies parsed and validated into structs (every field's type
// and range checked, so no request value can reach a CHECK), and the response, stream chunk
// and error objects built as JSON. Defaults follow OpenAI: temperature 1, top_p 1, no top-k
// or min-p (top_k, min_p, repeat_penalty and ignore_eos are accepted as extension fields).
// Decisions: max_tokens may be any integer >= 1 and is capped by the room left in the
// context (finish_reason "length"); n must be 1; logprobs/top_logprobs and echo are refused
// (400) when asked for; response_format json_object / json_schema constrain sampling with a
// grammar (structured_output.h).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sampling/grammar.h"
#include "sampling/sampler.h"
#include "server/bounded_json.h"

namespace sniper::server {

using Json = nlohmann::ordered_json;

// The bounds every request body is parsed within (see bounded_json.h).
inline constexpr JsonLimits kRequestJsonLimits{};

// An error to send: HTTP status and the OpenAI error object's fields.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // empty -> null
  std::string code;   // empty -> null
};

ApiError bad_request(std::string message, std::string param = {}, std::string code = {});
// {"error":{"message","type","param","code"}}
Json error_json(const ApiError& e);

// Fields shared by chat and text completions.
struct GenerationParams {
  std::string model;  // empty when absent
  SamplerConfig sampler;
  int64_t max_tokens = -1;  // -1: until the end of the context
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;              // stream_options.include_usage
  bool ignore_eos = false;                 // extension: keep generating past end-of-generation tokens
  std::shared_ptr<const Grammar> grammar;  // structured output; null: unconstrained
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

// Parses a request body (bytes) into JSON; malformed JSON, invalid UTF-8, non-objects and
// documents past kRequestJsonLimits (nesting 64, 256Ki values, 4096 members per object, 128Ki
// elements per array; checked while parsing) are errors whose message names the limit.
std::optional<ApiError> parse_body(std::string_view body, Json* out);
// Validates and extracts a chat completion request.
std::optional<ApiError> parse_chat_request(const Json& body, ChatRequest* out);
// Validates and extracts a text completion request.
std::optional<ApiError> parse_completion_request(const Json& body, CompletionRequest* out);

// True when every byte sequence is well-formed UTF-8.
bool is_valid_utf8(std::string_view s);

// Serializes without ever throwing (invalid UTF-8 would be replaced, though none should occur).
std::string dump_json(const Json& j);

// "chatcmpl-<24 random alphanumerics>" style ids. Thread-safe.
std::string make_id(const char* prefix);
int64_t unix_time_now();

}  // namespace sniper::server
