// SPDX-License-Identifier: MIT
// StreamingDetokenizer and sanitize_utf8: UTF-8 validation per RFC 3629 with U+FFFD for every
// maximal ill-formed subpart; an incomplete sequence at the end of the stream is held back until
// more bytes arrive (push) or the stream ends (flush).
#include "tokenizer/tokenizer.h"

namespace sniper {

namespace {

constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

enum class SeqKind { kValid, kIncomplete, kInvalid };

struct Seq {
  SeqKind kind;
  size_t length;  // valid: sequence length; incomplete: bytes present; invalid: maximal subpart
};

// Classifies the UTF-8 sequence starting at s[i] (i < s.size()).
Seq classify(std::string_view s, size_t i) {
  const auto b0 = uint8_t(s[i]);
  if (b0 < 0x80) return {SeqKind::kValid, 1};
  size_t len = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlongs
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlongs
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {SeqKind::kInvalid, 1};
  }
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) return {SeqKind::kIncomplete, k};
    const auto b = uint8_t(s[i + k]);
    const uint8_t min = k == 1 ? lo : 0x80;
    const uint8_t max = k == 1 ? hi : 0xBF;
    if (b < min || b > max) return {SeqKind::kInvalid, k};
  }
  return {SeqKind::kValid, len};
}

// Appends the sanitized form of `s` to `out`. With `hold_incomplete`, a trailing incomplete
// sequence is not emitted; returns the offset where the unconsumed tail starts.
size_t append_sanitized(std::string_view s, bool hold_incomplete, std::string& out) {
  size_t i = 0;
  while (i < s.size()) {
    const Seq seq = classify(s, i);
    if (seq.kind == SeqKind::kValid) {
      out.append(s.substr(i, seq.length));
    } else if (seq.kind == SeqKind::kIncomplete && hold_incomplete) {
      return i;
    } else {
      out.append(kReplacementUtf8);
    }
    i += seq.length;
  }
  return i;
}

}  // namespace

std::string sanitize_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  append_sanitized(bytes, /*hold_incomplete=*/false, out);
  return out;
}

std::string StreamingDetokenizer::push(int32_t id) {
  pending_ += tokenizer_->token_to_piece(id, render_special_);
  std::string out;
  const size_t consumed = append_sanitized(pending_, /*hold_incomplete=*/true, out);
  pending_.erase(0, consumed);
  return out;
}

std::string StreamingDetokenizer::flush() {
  std::string out = sanitize_utf8(pending_);
  pending_.clear();
  return out;
}

}  // namespace sniper
