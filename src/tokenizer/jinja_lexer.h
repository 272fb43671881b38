// SPDX-License-Identifier: MIT
// Jinja2 lexer: splits template source into data and tag tokens, applying Jinja2's whitespace
// rules exactly (newline normalisation, one trailing newline dropped, `-` stripping, `+`
// overrides, trim_blocks and lstrip_blocks as jinja2/lexer.py implements them).
// Invariants: comments and raw blocks never reach the parser (raw content becomes data);
// expression tokens only appear between a kVarBegin/kBlockBegin and its matching end token.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace sniper::jinja {

enum class TokenType : uint8_t {
  kData,        // literal template text (text holds it)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,        // identifier or keyword
  kString,      // string literal (text holds the decoded value)
  kInt,         // integer literal (int_value)
  kFloat,       // float literal (float_value)
  kOp,          // operator or punctuation (text holds it)
  kEof,
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string text;
  int line = 1;
  int64_t int_value = 0;
  double float_value = 0;
};

struct LexerOptions {
  bool trim_blocks = true;    // drop the first newline after a block or comment tag
  bool lstrip_blocks = true;  // strip spaces before a block or comment tag at line start
};

// Tokenizes `source`. Returns an Error naming the line for unterminated tags, comments, raw
// blocks and strings, unbalanced brackets and characters that are not part of the syntax.
[[nodiscard]] Result<std::vector<Token>> tokenize(std::string_view source, const LexerOptions& options);

// A readable name for a token ("end of statement block", "'('", "name 'x'") for error messages.
[[nodiscard]] std::string describe_token(const Token& token);

}  // namespace sniper::jinja
