// SPDX-License-Identifier: MIT
// The OpenAI wire format: request bodies validated into the neutral request types
// (request_types.h) with the shared field validators (field_validators.h), and the error object.
// Defaults follow OpenAI: temperature 1, top_p 1, no top-k or min-p (top_k, min_p,
// repeat_penalty and ignore_eos are accepted as extension fields).
// Decisions: max_tokens may be any integer >= 1 and is capped by the room left in the
// context (finish_reason "length"); n must be 1; logprobs/top_logprobs and echo are refused
// (400) when asked for; response_format json_object / json_schema, and llama.cpp's grammar
// (GBNF) and json_schema fields, constrain sampling with a grammar (structured_output.h; one of
// them per request); logit_bias takes OpenAI's {"id": bias} and llama.cpp's {"text": bias} and
// [[id or text, bias], ...] forms, biases in [-100, 100] (-100 and false ban the token);
// tool_choice must name one of the request's tools ("required" needs tools). It does not force
// a call: the model is offered the tools through its template as with "auto".
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "server/request_body.h"
#include "server/request_types.h"

namespace sniper::server {

// {"error":{"message","type","param","code"}}
Json error_json(const ApiError& e);

// Validates and extracts a chat completion request.
std::optional<ApiError> parse_chat_request(const Json& body, ChatRequest* out);
// Validates and extracts a text completion request.
std::optional<ApiError> parse_completion_request(const Json& body, CompletionRequest* out);

// "chatcmpl-<24 random alphanumerics>" style ids. Thread-safe.
std::string make_id(const char* prefix);
int64_t unix_time_now();

}  // namespace sniper::server
