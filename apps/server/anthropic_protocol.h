// SPDX-License-Identifier: MIT
// Anthropic's Messages API wire format (POST /v1/messages): the request body validated and turned
// into the server's ChatRequest (system -> a system message; text, tool_use, tool_result and
// thinking content blocks -> OpenAI-shaped messages; tools' input_schema -> function parameters;
// thinking {"type": "enabled"|"disabled"} -> the template's enable_thinking), and the error
// object {"type": "error", "error": {"type", "message"}} with Anthropic's error type for a status.
// Defaults follow Anthropic: temperature 1, no top-p/top-k; max_tokens is required. Images and
// documents are refused (400): the server serves text-only models. tool_choice "tool" must name
// one of the tools, and "any" / "tool" need tools; neither forces a call (the model is offered
// the tools as with "auto"). The Messages API has no logit_bias or grammar.
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "server/request_body.h"
#include "server/request_types.h"

namespace sniper::server {

struct AnthropicRequest {
  std::string model;
  ChatRequest chat;              // params.model is left empty: the route checks the model
  std::optional<bool> thinking;  // thinking.type enabled / disabled
};

std::optional<ApiError> parse_anthropic_messages(const Json& body, AnthropicRequest* out);

// invalid_request_error (400), authentication_error (401), permission_error (403),
// not_found_error (404), request_too_large (413), rate_limit_error (429), overloaded_error (503),
// api_error otherwise.
std::string anthropic_error_type(int status);
Json anthropic_error_json(int status, const std::string& message);

}  // namespace sniper::server
