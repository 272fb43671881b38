// SPDX-License-Identifier: MIT
// Structured output for the server's APIs: turns a request's format field into the grammar that
// constrains sampling (sampling/json_schema_grammar.h). OpenAI: response_format {"type": "text"},
// {"type": "json_object"} (any JSON object) or {"type": "json_schema", "json_schema": {"schema":
// {...}, "name", "strict"}}. Ollama: format "json" (any JSON object), "" (none) or a JSON schema
// object. A schema outside the supported subset is a 400 naming the keyword and where it sits.
// Pure functions; thread-safe.
#pragma once

#include <memory>
#include <optional>

#include "sampling/grammar.h"
#include "server/openai_protocol.h"

namespace sniper::server {

// OpenAI response_format; `param` names the field in errors. *out stays null for "text".
std::optional<ApiError> openai_response_format(const Json& response_format, std::shared_ptr<const Grammar>* out);
// Ollama format; *out stays null for "" or null.
std::optional<ApiError> ollama_format(const Json& format, std::shared_ptr<const Grammar>* out);

}  // namespace sniper::server
