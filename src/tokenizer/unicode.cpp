// SPDX-License-Identifier: MIT
// Unicode helpers: lenient UTF-8 decoding (llama.cpp semantics), ICU-backed categories and the
// GPT-2 byte map. See unicode.h for the contracts.
#include "tokenizer/unicode.h"

#include <unicode/uchar.h>

#include <array>

#include "base/check.h"

namespace sniper {

size_t utf8_sequence_length(uint8_t lead) {
  static constexpr size_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[lead >> 4];
}

namespace {

bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// Decodes one code point at `offset` the way llama.cpp's unicode_cpt_from_utf8 does: lead byte
// bit patterns decide the length, and every continuation byte must be 10xxxxxx. Returns false for
// an invalid sequence (offset untouched).
bool decode_one(const uint8_t* s, size_t n, size_t& offset, uint32_t& cp) {
  const uint8_t b0 = s[offset];
  if ((b0 & 0x80) == 0) {
    cp = b0;
    offset += 1;
    return true;
  }
  if ((b0 & 0x40) == 0) return false;  // stray continuation byte
  if ((b0 & 0x20) == 0) {
    if (offset + 1 >= n || !is_continuation(s[offset + 1])) return false;
    cp = (uint32_t(b0 & 0x1F) << 6) | (s[offset + 1] & 0x3F);
    offset += 2;
    return true;
  }
  if ((b0 & 0x10) == 0) {
    if (offset + 2 >= n || !is_continuation(s[offset + 1]) || !is_continuation(s[offset + 2])) return false;
    cp = (uint32_t(b0 & 0x0F) << 12) | (uint32_t(s[offset + 1] & 0x3F) << 6) | (s[offset + 2] & 0x3F);
    offset += 3;
    return true;
  }
  if ((b0 & 0x08) == 0) {
    if (offset + 3 >= n || !is_continuation(s[offset + 1]) || !is_continuation(s[offset + 2]) ||
        !is_continuation(s[offset + 3])) {
      return false;
    }
    const uint32_t value = (uint32_t(b0 & 0x07) << 18) | (uint32_t(s[offset + 1] & 0x3F) << 12) |
                           (uint32_t(s[offset + 2] & 0x3F) << 6) | (s[offset + 3] & 0x3F);
    if (value > kUnicodeMaxCodepoint) return false;
    cp = value;
    offset += 4;
    return true;
  }
  return false;
}

}  // namespace

std::vector<uint32_t> utf8_to_codepoints(std::string_view text) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  size_t offset = 0;
  while (offset < text.size()) {
    uint32_t cp = 0;
    if (decode_one(s, text.size(), offset, cp)) {
      out.push_back(cp);
    } else {
      out.push_back(kUnicodeReplacementChar);
      offset += 1;
    }
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  CHECK(cp <= kUnicodeMaxCodepoint, "code point 0x%X is above U+10FFFF", cp);
  if (cp <= 0x7F) {
    out.push_back(char(cp));
  } else if (cp <= 0x7FF) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp <= 0xFFFF) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

size_t utf8_valid_prefix_length(std::string_view bytes) {
  const auto* s = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    const uint8_t b0 = s[i];
    size_t len = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte (RFC 3629 table)
    if (b0 < 0x80) {
      len = 1;
    } else if (b0 >= 0xC2 && b0 <= 0xDF) {
      len = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      len = 3;
      if (b0 == 0xE0) lo = 0xA0;
      if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      len = 4;
      if (b0 == 0xF0) lo = 0x90;
      if (b0 == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + len > n) return i;
    if (len >= 2 && (s[i + 1] < lo || s[i + 1] > hi)) return i;
    for (size_t k = 2; k < len; ++k) {
      if (!is_continuation(s[i + k])) return i;
    }
    i += len;
  }
  return i;
}

CodepointFlags codepoint_flags(uint32_t cp) {
  CodepointFlags f;
  if (cp > kUnicodeMaxCodepoint) return f;
  f.defined = true;
  const auto c = static_cast<UChar32>(cp);
  switch (u_charType(c)) {
    case U_UPPERCASE_LETTER:
    case U_LOWERCASE_LETTER:
    case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER:
    case U_OTHER_LETTER: f.is_letter = true; break;
    case U_DECIMAL_DIGIT_NUMBER:
    case U_LETTER_NUMBER:
    case U_OTHER_NUMBER: f.is_number = true; break;
    case U_NON_SPACING_MARK:
    case U_ENCLOSING_MARK:
    case U_COMBINING_SPACING_MARK: f.is_mark = true; break;
    case U_DASH_PUNCTUATION:
    case U_START_PUNCTUATION:
    case U_END_PUNCTUATION:
    case U_CONNECTOR_PUNCTUATION:
    case U_OTHER_PUNCTUATION:
    case U_INITIAL_PUNCTUATION:
    case U_FINAL_PUNCTUATION: f.is_punctuation = true; break;
    case U_MATH_SYMBOL:
    case U_CURRENCY_SYMBOL:
    case U_MODIFIER_SYMBOL:
    case U_OTHER_SYMBOL: f.is_symbol = true; break;
    case U_SPACE_SEPARATOR:
    case U_LINE_SEPARATOR:
    case U_PARAGRAPH_SEPARATOR: f.is_separator = true; break;
    default:  // Cc, Cf, Co, Cs and unassigned (Cn)
      f.is_control = true;
      break;
  }
  f.is_whitespace = u_hasBinaryProperty(c, UCHAR_WHITE_SPACE) != 0;
  return f;
}

uint32_t codepoint_to_lower(uint32_t cp) {
  if (cp > kUnicodeMaxCodepoint) return cp;
  return static_cast<uint32_t>(u_tolower(static_cast<UChar32>(cp)));
}

namespace {

// byte -> code point of the GPT-2 byte map; code points stay below 256 + 68.
struct Gpt2ByteMap {
  std::array<std::string, 256> byte_to_utf8;
  std::array<int16_t, 324> cp_to_byte;

  Gpt2ByteMap() {
    cp_to_byte.fill(-1);
    std::array<uint32_t, 256> cps{};
    std::array<bool, 256> direct{};
    for (int b = 0; b < 256; ++b) {
      direct[b] = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    }
    uint32_t n = 0;
    for (int b = 0; b < 256; ++b) cps[b] = direct[b] ? uint32_t(b) : 256 + n++;
    for (int b = 0; b < 256; ++b) {
      append_utf8(byte_to_utf8[b], cps[b]);
      cp_to_byte[cps[b]] = int16_t(b);
    }
  }
};

const Gpt2ByteMap& gpt2_byte_map() {
  static const Gpt2ByteMap map;
  return map;
}

}  // namespace

const std::string& gpt2_byte_to_utf8(uint8_t byte) { return gpt2_byte_map().byte_to_utf8[byte]; }

int gpt2_codepoint_to_byte(uint32_t cp) {
  const auto& map = gpt2_byte_map();
  return cp < map.cp_to_byte.size() ? map.cp_to_byte[cp] : -1;
}

}  // namespace sniper
