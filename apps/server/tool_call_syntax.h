// SPDX-License-Identifier: MIT
// Parsers for the bodies of the non-JSON tool-call syntaxes models write, each turning one call
// into {"name": string, "arguments": object} for ChatOutputParser:
//   Qwen3.5 (XML, between <tool_call> and </tool_call>):
//     <function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>
//   Gemma 4 (between <|tool_call> and <tool_call|>):
//     call:NAME{key:VALUE,...} with VALUE one of <|"|>text<|"|>, {..}, [..], number, true,
//     false, null or None (the template writes Python's None; keys bare or <|"|>-quoted).
// Invariants: the input is untrusted model output: any malformed body (missing tags, unbalanced
// brackets, trailing text, nesting deeper than kMaxToolCallDepth) is std::nullopt, never a crash
// and never a partial call. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace sniper::server {

// Deepest {..}/[..] nesting accepted in a Gemma 4 argument value.
inline constexpr int kMaxToolCallDepth = 64;

// Parses one Qwen3.5 call body (the text between <tool_call> and </tool_call>; surrounding
// whitespace allowed). A parameter value loses the one newline the template writes on each side;
// it stays a string when `tool_schemas[NAME]["properties"][KEY]["type"]` is "string", and is
// otherwise read as JSON when it parses as JSON (numbers, booleans, objects, arrays, null; also
// Python's True/False/None, which the template's `| string` writes), else kept as a string.
// `tool_schemas`: function name -> its "parameters" JSON Schema (object or null).
std::optional<nlohmann::ordered_json> parse_qwen35_xml_call(std::string_view body,
                                                            const nlohmann::ordered_json& tool_schemas);

// Parses one Gemma 4 call body (the text between <|tool_call> and <tool_call|>).
std::optional<nlohmann::ordered_json> parse_gemma4_call(std::string_view body);

}  // namespace sniper::server
