// SPDX-License-Identifier: MIT
// JSON Schema -> Grammar: compiles a JSON schema (the subset structured output needs) into a
// byte-level grammar whose every complete sentence is JSON that parses and validates against
// the schema. Supported keywords: type (a name or an array of names: object, array, string,
// number, integer, boolean, null), properties, required, additionalProperties (false, true or a
// schema; only declared and required properties are generated, which every form allows), items,
// minItems/maxItems, minLength/maxLength, enum, const, anyOf; annotations (title, description,
// $schema, $id, $comment, default, examples) are ignored. Any other keyword is an error naming it
// and where it sits ("$.properties.age: the keyword 'minimum' is not supported"), never silently
// dropped, so a schema is never loosened.
// Bounds (so generation terminates and the output parses into doubles and int64s): integers have
// at most 16 digits, fractions at most 16, exponents at most 2; whitespace runs at most
// JsonGrammarLimits::max_ws bytes; an unconstrained value ({} or format "json") nests at most
// max_any_depth containers and its strings (keys too) hold at most max_any_string characters (a
// schema with "type": "string" and no maxLength is unbounded); counted repetitions (minItems/maxItems,
// minLength/maxLength) at most max_count; schemas nest at most max_schema_depth; an enum or anyOf
// has at most max_alternatives entries and the grammar at most max_rules rules and max_elements
// symbols (errors say which). An enum compiles to a trie (values that share a prefix share its
// rules), so matching it costs the same per byte whatever the number of values. Strings are valid UTF-8 and their
// escapes never produce a lone surrogate. Property order follows the schema's. Pure functions; thread-safe.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "sampling/grammar.h"

namespace sniper {

struct JsonGrammarLimits {
  int max_ws = 16;            // whitespace bytes between tokens
  int max_any_depth = 6;      // nesting of an unconstrained value
  int max_any_string = 256;   // characters in an unconstrained value's strings
  int max_schema_depth = 32;  // nesting of the schema itself
  int max_count = 1024;       // minItems, maxItems, minLength, maxLength
  int max_rules = 65536;      // grammar size: a larger schema is an error (bounds a request's cost)
  // Grammar symbols (about one per byte of the schema's enum and const literals): 2Mi, 8 bytes
  // each. A 40,000-value enum of 32-byte strings takes 1.3Mi.
  size_t max_elements = size_t{1} << 21;
  size_t max_alternatives = 65536;  // entries of one enum or anyOf
};

// The grammar of JSON valid against `schema`, with optional leading whitespace and nothing after
// the value. Errors name the path and the problem.
[[nodiscard]] Result<std::shared_ptr<const Grammar>> json_schema_grammar(const nlohmann::ordered_json& schema,
                                                                         const JsonGrammarLimits& limits = {});
// The grammar of any JSON object (format "json", response_format json_object).
std::shared_ptr<const Grammar> json_object_grammar(const JsonGrammarLimits& limits = {});

}  // namespace sniper
