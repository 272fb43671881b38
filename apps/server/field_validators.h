// SPDX-License-Identifier: MIT
// The field validators every API parser uses (OpenAI, Ollama, Anthropic, the chat renderer's
// callers): read one member of a JSON object, check its type and range, and either store it or
// return a 400 whose message has one shape everywhere:
//   type:   "<field> must be <expected>, got <what>"        ("options.top_k must be an integer, got 1.5")
//   range:  "<field> is <value> but must be in [lo, hi]"    ("temperature is 2.5 but must be in [0, 2]")
//   enum:   "<field> is '<value>' but must be one of a, b"  ("tool_choice is 'maybe' but must be one of ...")
//   count:  "<field> has N entries but at most M are allowed"
//   length: "<field> is N bytes long but at most M are allowed"
// <field> is the member's path from the body ("options.temperature", "messages[2].role"), and the
// error's param is the same path.
// Rules shared by every API (the strict, documented behaviour; docs/server-requests.md):
// - an absent member and a JSON null are the same: "not given", the output keeps its default;
// - numbers must be finite; an integer is any JSON integer, or a number with an integral value
//   below 2^53 in magnitude ("max_tokens": 5.0 is 5); an integer outside the range is refused,
//   never clamped, whatever its size (an unsigned value above INT64_MAX included);
// - strings are bytes checked for UTF-8 by parse_body; lengths are in bytes.
// Pure functions over an immutable Json; thread-safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/request_types.h"

namespace sniper::server {

// "a string", "a number", "an object", ... for messages.
const char* json_kind(const Json& j);
// A short rendering of a value for messages: strings quoted with '', at most 40 bytes.
std::string describe_json(const Json& j);

// An inclusive range of doubles; `open_lo` excludes lo ("(0, 1]").
struct NumberRange {
  double lo, hi;
  bool open_lo = false;
};

// An inclusive range of integers.
struct IntegerRange {
  int64_t lo, hi;
};

// What a list of strings may hold.
struct StringListRule {
  size_t max_count = 16;     // entries
  size_t max_bytes = 1024;   // per entry
  bool allow_single = true;  // a lone string is a list of one
  bool allow_empty = false;  // "" as an entry
};

// Reads the members of one JSON object. `path` names the object in messages: "" for the body,
// "options", "messages[2]".
class FieldReader {
 public:
  // Precondition: obj.is_object().
  explicit FieldReader(const Json& obj, std::string path = {});

  // The member, or null when it is absent or JSON null.
  const Json* get(std::string_view key) const;
  // The member's path for messages ("options.top_k").
  std::string path(std::string_view key) const;
  // A 400 about member `key` (param = its path).
  ApiError error(std::string_view key, const std::string& message) const;
  // "<field> must be <expected>, got <what>".
  ApiError type_error(std::string_view key, const char* expected) const;

  // A number in `range`, stored as float / double.
  [[nodiscard]] std::optional<ApiError> number(std::string_view key, NumberRange range, float* out) const;
  [[nodiscard]] std::optional<ApiError> number(std::string_view key, NumberRange range, double* out) const;
  // An integer in `range`.
  [[nodiscard]] std::optional<ApiError> integer(std::string_view key, IntegerRange range, int64_t* out) const;
  // A seed: any integer in [-2^63, 2^64 - 1]; a negative one wraps to its two's complement.
  [[nodiscard]] std::optional<ApiError> seed(std::string_view key, uint64_t* out) const;
  [[nodiscard]] std::optional<ApiError> boolean(std::string_view key, bool* out) const;
  // A string of at most max_bytes bytes (and at least one when !allow_empty).
  [[nodiscard]] std::optional<ApiError> string(std::string_view key, std::string* out, bool allow_empty = true,
                                               size_t max_bytes = SIZE_MAX) const;
  // A string that is one of `allowed`.
  [[nodiscard]] std::optional<ApiError> one_of(std::string_view key, std::initializer_list<const char*> allowed,
                                               std::string* out) const;
  // A list of strings (or one string when rule.allow_single), appended to *out.
  [[nodiscard]] std::optional<ApiError> string_list(std::string_view key, const StringListRule& rule,
                                                    std::vector<std::string>* out) const;
  // An object / an array of at most max_count elements; *out points into the body (null when
  // absent).
  [[nodiscard]] std::optional<ApiError> object(std::string_view key, const Json** out) const;
  [[nodiscard]] std::optional<ApiError> array(std::string_view key, size_t max_count, const Json** out) const;
  // A member that must be present and not null.
  [[nodiscard]] std::optional<ApiError> require(std::string_view key) const;

  const Json& json() const { return *obj_; }
  const std::string& object_path() const { return path_; }

 private:
  const Json* obj_;
  std::string path_;
};

// Runs a validator and returns its error from the enclosing function.
#define SNIPER_TRY_API(expr)         \
  do {                               \
    if (auto e_ = (expr)) return e_; \
  } while (0)

}  // namespace sniper::server
