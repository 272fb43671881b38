// SPDX-License-Identifier: MIT
// Jinja2 parser: turns the lexer's tokens into a statement tree, following the grammar and
// operator precedence of jinja2/parser.py (condexpr < or < and < not < compare < +,- < ~ <
// *,/,//,% < ** < unary -,+ < filters/tests/calls < postfix).
// Invariants: unknown statements, filters and tests are rejected here, with their line, so a
// template that parses only fails at render time for data-dependent reasons. Nesting of
// expressions and blocks is bounded (kMaxParseDepth) so hostile input cannot exhaust the stack.
#pragma once

#include <string_view>

#include "base/result.h"
#include "tokenizer/jinja_ast.h"

namespace sniper::jinja {

inline constexpr int kMaxParseDepth = 100;

// Parses template source (trim_blocks and lstrip_blocks on, as HuggingFace renders). Returns the
// top-level body, or an Error naming the line and construct that could not be parsed.
[[nodiscard]] Result<Body> parse_template(std::string_view source);

}  // namespace sniper::jinja
