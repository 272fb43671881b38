// SPDX-License-Identifier: MIT
// Structured output for the server's APIs: turns a request's format field into the grammar that
// constrains sampling (sampling/json_schema_grammar.h). OpenAI: response_format {"type": "text"},
// {"type": "json_object"} (any JSON object) or {"type": "json_schema", "json_schema": {"schema":
// {...}, "name", "strict"}}. Ollama: format "json" (any JSON object), "" (none) or a JSON schema
// object. llama.cpp's "grammar" (GBNF, sampling/gbnf.h) and "json_schema" fields. A schema
// outside the supported subset is a 400 naming the keyword and where it sits; a GBNF error
// names the line and column.
// Pure functions; thread-safe.
#pragma once

#include <memory>
#include <optional>

#include "sampling/grammar.h"
#include "server/request_types.h"

namespace sniper::server {

// OpenAI response_format; `param` names the field in errors. *out stays null for "text".
std::optional<ApiError> openai_response_format(const Json& response_format, std::shared_ptr<const Grammar>* out);
// Ollama format; *out stays null for "" or null.
std::optional<ApiError> ollama_format(const Json& format, std::shared_ptr<const Grammar>* out);
// llama.cpp's extension fields of /v1/chat/completions and /v1/completions: "grammar" (GBNF text;
// errors name the line and column) and "json_schema" (a schema, as response_format's).
// At most one of response_format (json_object / json_schema), grammar and json_schema may
// constrain a request: *out must be null on entry or the field is a 400.
std::optional<ApiError> gbnf_grammar(const Json& grammar, std::shared_ptr<const Grammar>* out);
std::optional<ApiError> llama_json_schema(const Json& schema, std::shared_ptr<const Grammar>* out);

}  // namespace sniper::server
