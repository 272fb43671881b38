// SPDX-License-Identifier: MIT
// Request bodies as every JSON route reads them: bytes -> a bounded, UTF-8-checked JSON object
// (bounded_json.h), and JSON back to text without ever throwing.
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/bounded_json.h"
#include "server/request_types.h"

namespace sniper::server {

// The bounds every request body is parsed within (see bounded_json.h).
inline constexpr JsonLimits kRequestJsonLimits{};

// Parses a request body (bytes) into JSON; malformed JSON, invalid UTF-8, non-objects and
// documents past kRequestJsonLimits (nesting 64, 256Ki values, 4096 members per object, 128Ki
// elements per array; checked while parsing) are errors whose message names the limit.
std::optional<ApiError> parse_body(std::string_view body, Json* out);

// True when every byte sequence is well-formed UTF-8.
bool is_valid_utf8(std::string_view s);

// Serializes without ever throwing (invalid UTF-8 would be replaced, though none should occur).
std::string dump_json(const Json& j);

}  // namespace sniper::server
