// SPDX-License-Identifier: MIT
// Unicode helpers for the tokenizers: a lenient UTF-8 decoder with llama.cpp's error behaviour,
// UTF-8 encoding, code point categories (from ICU, matching the \p{L} \p{N} \s ... classes the
// pre-tokenizer regexes use), and GPT-2's byte <-> printable-character map.
// Invariants: decoding never fails (an invalid byte becomes one U+FFFD and decoding resumes at the
// next byte); every function here is pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sniper {

inline constexpr uint32_t kUnicodeReplacementChar = 0xFFFD;
inline constexpr uint32_t kUnicodeMaxCodepoint = 0x10FFFF;

// Length of the UTF-8 sequence a lead byte announces, looked up from its high nibble
// (0x0-0xB -> 1, 0xC-0xD -> 2, 0xE -> 3, 0xF -> 4). Continuation and invalid lead bytes count as 1.
size_t utf8_sequence_length(uint8_t lead);

// Decodes `text` to code points. Like llama.cpp, overlong forms and surrogates decode as written;
// a byte that does not start a complete sequence becomes U+FFFD and decoding resumes one byte later.
// Sequences above U+10FFFF are treated as invalid too (llama.cpp throws on them later).
std::vector<uint32_t> utf8_to_codepoints(std::string_view text);

// Appends the UTF-8 encoding of `cp` (CHECKs cp <= U+10FFFF).
void append_utf8(std::string& out, uint32_t cp);

// Length of the longest prefix of `bytes` made of complete, well-formed UTF-8 sequences
// (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF).
size_t utf8_valid_prefix_length(std::string_view bytes);

// Unicode general-category classes of one code point, as the tokenizer regexes see them.
// `defined` is false only outside [0, U+10FFFF]; unassigned code points count as control,
// as in llama.cpp's tables (Python regex \p{C} includes Cn).
struct CodepointFlags {
  bool defined = false;
  bool is_letter = false;       // \p{L}
  bool is_number = false;       // \p{N}
  bool is_mark = false;         // \p{M}
  bool is_punctuation = false;  // \p{P}
  bool is_symbol = false;       // \p{S}
  bool is_separator = false;    // \p{Z}
  bool is_control = false;      // \p{C}
  bool is_whitespace = false;   // \s (the Unicode White_Space property)
};

CodepointFlags codepoint_flags(uint32_t cp);

// Simple (1:1) lowercase mapping; returns cp itself when it has none.
uint32_t codepoint_to_lower(uint32_t cp);

// GPT-2 byte-level BPE maps every byte to a printable code point: bytes '!'..'~', 0xA1..0xAC and
// 0xAE..0xFF map to themselves, the other 68 bytes to U+0100.. in increasing byte order.
// Returns the UTF-8 of the code point for `byte`.
const std::string& gpt2_byte_to_utf8(uint8_t byte);

// Inverse of gpt2_byte_to_utf8 on code points: the byte for `cp`, or -1 if cp is not in the map.
int gpt2_codepoint_to_byte(uint32_t cp);

}  // namespace sniper
