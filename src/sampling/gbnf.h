// SPDX-License-Identifier: MIT
// GBNF (llama.cpp's grammar format, the server's "grammar" field) -> Grammar. The syntax is
// llama.cpp's (src/llama-grammar.cpp at the reference revision):
//   rule   ::= name "::=" alternates, ending at a newline (newlines are free inside ( ) and after |)
//   name   ::= [a-zA-Z0-9-]+
//   term   ::= "literal" | [char class] | [^negated class] | . | name | ( alternates )
//   repeat ::= term* | term+ | term? | term{m} | term{m,} | term{m,n}
//   # comments run to the end of the line; escapes \n \r \t \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH
// Literals and classes are Unicode code points, matched as their UTF-8 bytes (a class becomes
// the byte sequences of its code point ranges; `.` is any code point), so generated text is
// always valid UTF-8. The start rule is "root".
// Differences from llama.cpp, all refusals with a clear error: token references (<[id]>,
// <token>, !<...>) are not supported; a rule defined twice is an error (llama.cpp keeps the
// last); a code point that is a surrogate or above U+10FFFF is an error; left recursion is an
// error (llama.cpp refuses it too). Bounds: the text (max_bytes), rules, grammar symbols,
// repetition counts (2000, as llama.cpp), group nesting, and the chain of rules entered before
// a byte is consumed (the matcher expands it recursively).
// Errors name the line and column (1-based, in bytes) and what was expected there:
// "grammar line 3, column 9: expected '::=' after the rule name 'value'".
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "base/result.h"
#include "sampling/grammar.h"

namespace sniper {

struct GbnfLimits {
  size_t max_bytes = 256 << 10;           // grammar text
  int32_t max_rules = 65536;              // named and synthesized rules
  size_t max_elements = size_t{1} << 21;  // grammar symbols
  int max_repetition = 2000;              // m and n of {m,n} (llama.cpp's MAX_REPETITION_THRESHOLD)
  int max_nesting = 64;                   // nested ( ) groups
  int max_left_depth = 1024;              // rules entered one inside another before a byte (Grammar::left_depth)
};

// Parses GBNF text into a validated grammar rooted at "root".
[[nodiscard]] Result<std::shared_ptr<const Grammar>> parse_gbnf(std::string_view text, const GbnfLimits& limits = {});

}  // namespace sniper
