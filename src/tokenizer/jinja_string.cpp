// SPDX-License-Identifier: MIT
// Python-compatible string helpers (see jinja_string.h).
#include "tokenizer/jinja_string.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace sniper::jinja {

uint32_t utf8_decode(std::string_view s, size_t pos, size_t* n_bytes) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  size_t n = 0;
  uint32_t cp = 0;
  if (b0 < 0x80) {
    *n_bytes = 1;
    return b0;
  } else if ((b0 & 0xE0) == 0xC0) {
    n = 2;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4;
    cp = b0 & 0x07;
  } else {
    *n_bytes = 1;
    return b0;
  }
  if (pos + n > s.size()) {
    *n_bytes = 1;
    return b0;
  }
  for (size_t i = 1; i < n; ++i) {
    const auto b = static_cast<unsigned char>(s[pos + i]);
    if ((b & 0xC0) != 0x80) {
      *n_bytes = 1;
      return b0;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  *n_bytes = n;
  return cp;
}

std::vector<size_t> utf8_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  size_t pos = 0;
  while (pos < s.size()) {
    offsets.push_back(pos);
    size_t n = 1;
    (void)utf8_decode(s, pos, &n);
    pos += n;
  }
  offsets.push_back(s.size());
  return offsets;
}

size_t utf8_length(std::string_view s) {
  size_t count = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t n = 1;
    (void)utf8_decode(s, pos, &n);
    pos += n;
    ++count;
  }
  return count;
}

bool utf8_at(std::string_view s, uint64_t index, size_t* begin, size_t* len) {
  size_t pos = 0;
  uint64_t i = 0;
  while (pos < s.size()) {
    size_t n = 1;
    (void)utf8_decode(s, pos, &n);
    if (i == index) {
      *begin = pos;
      *len = n;
      return true;
    }
    pos += n;
    ++i;
  }
  *begin = s.size();
  *len = 0;
  return false;
}

size_t find_bytes(std::string_view hay, std::string_view needle, size_t from) {
  if (from > hay.size()) return std::string_view::npos;
  if (needle.empty()) return from;
  // A short needle: memchr for its first byte, then a compare of at most kShortNeedle bytes per
  // candidate, so at most kShortNeedle * len(hay) byte compares. Longer needles use two-way.
  constexpr size_t kShortNeedle = 32;
  if (needle.size() <= kShortNeedle) return hay.find(needle, from);
  const void* hit = ::memmem(hay.data() + from, hay.size() - from, needle.data(), needle.size());
  return hit == nullptr ? std::string_view::npos : static_cast<size_t>(static_cast<const char*>(hit) - hay.data());
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_py_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

namespace {

// Whether code point `cp` is stripped: whitespace, or a member of `chars`.
bool strip_member(uint32_t cp, const std::string* chars) {
  if (chars == nullptr) return is_py_space(cp);
  size_t pos = 0;
  while (pos < chars->size()) {
    size_t n = 1;
    if (utf8_decode(*chars, pos, &n) == cp) return true;
    pos += n;
  }
  return false;
}

bool is_line_break(uint32_t cp) {
  return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D || cp == 0x1E || cp == 0x85 ||
         cp == 0x2028 || cp == 0x2029;
}

}  // namespace

std::string_view py_strip_view(std::string_view s, const std::string* chars, bool left, bool right) {
  size_t begin = 0;
  size_t n = 1;
  if (left) {
    while (begin < s.size() && strip_member(utf8_decode(s, begin, &n), chars)) begin += n;
  }
  size_t end = s.size();
  if (right) {
    // From the end over ASCII bytes (never part of a longer sequence, so each is a code point of
    // its own); a non-ASCII byte needs the forward scan, so that invalid bytes split into code
    // points exactly as utf8_decode splits them.
    while (end > begin && static_cast<unsigned char>(s[end - 1]) < 0x80 &&
           strip_member(static_cast<unsigned char>(s[end - 1]), chars)) {
      --end;
    }
    if (end > begin && static_cast<unsigned char>(s[end - 1]) >= 0x80) {
      const size_t limit = end;
      end = begin;
      for (size_t pos = begin; pos < limit; pos += n) {
        if (!strip_member(utf8_decode(s, pos, &n), chars)) end = pos + n;
      }
    }
  }
  return s.substr(begin, end - begin);
}

std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  return std::string(py_strip_view(s, chars, left, right));
}

namespace {

// Collects parts, or only counts them when `out` is null; on every return path the count goes to
// *n_out (when given), also after a refusal.
struct Parts {
  Parts(std::vector<std::string_view>* out_, size_t max_, size_t* n_out_) : out(out_), max(max_), n_out(n_out_) {
    if (out != nullptr) out->clear();
  }
  Parts(const Parts&) = delete;
  Parts& operator=(const Parts&) = delete;
  ~Parts() {
    if (n_out != nullptr) *n_out = n;
  }
  std::vector<std::string_view>* out;
  size_t max;
  size_t* n_out;
  size_t n = 0;
  // Appends `part`, or returns false when that would make more than max parts.
  bool push(std::string_view part) {
    if (n >= max) return false;
    ++n;
    if (out != nullptr) out->push_back(part);
    return true;
  }
};

std::string reversed(std::string_view s) { return std::string(s.rbegin(), s.rend()); }

}  // namespace

bool py_split(std::string_view s, const std::string* sep, int64_t maxsplit, size_t max_parts,
              std::vector<std::string_view>* out, size_t* n_parts) {
  Parts p(out, max_parts, n_parts);
  Parts* parts = &p;
  if (sep != nullptr) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts->n) < maxsplit) {
      const size_t hit = find_bytes(s, *sep, start);
      if (hit == std::string_view::npos) break;
      if (!parts->push(s.substr(start, hit - start))) return false;
      start = hit + sep->size();
    }
    return parts->push(s.substr(start));
  }
  size_t pos = 0;
  size_t n = 1;
  while (true) {
    while (pos < s.size() && is_py_space(utf8_decode(s, pos, &n))) pos += n;
    if (pos >= s.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts->n) >= maxsplit) {
      // CPython's split_whitespace: the remainder keeps its trailing whitespace.
      return parts->push(s.substr(pos));
    }
    const size_t start = pos;
    while (pos < s.size() && !is_py_space(utf8_decode(s, pos, &n))) pos += n;
    if (!parts->push(s.substr(start, pos - start))) return false;
  }
  return true;
}

bool py_rsplit(std::string_view s, const std::string* sep, int64_t maxsplit, size_t max_parts,
               std::vector<std::string_view>* out, size_t* n_parts) {
  if (maxsplit < 0) return py_split(s, sep, maxsplit, max_parts, out, n_parts);
  Parts p(out, max_parts, n_parts);
  Parts* parts = &p;
  const auto k = static_cast<uint64_t>(maxsplit);
  if (sep != nullptr) {
    // Matching right to left is matching the reversed text left to right (non-overlapping).
    const std::string rs = reversed(s);
    const std::string rsep = reversed(*sep);
    size_t end = s.size();  // in s: the part left of the last cut
    size_t start = 0;       // in rs
    while (parts->n < k) {
      const size_t hit = find_bytes(rs, rsep, start);
      if (hit == std::string_view::npos) break;
      const size_t cut = s.size() - hit - sep->size();  // position of the separator in s
      if (!parts->push(s.substr(cut + sep->size(), end - cut - sep->size()))) return false;
      end = cut;
      start = hit + sep->size();
    }
    if (!parts->push(s.substr(0, end))) return false;
  } else {
    // CPython's rsplit_whitespace: the last k words, and before them the rest of the text from
    // its start (leading whitespace kept) to the end of the word before them. Forward over the
    // words, keeping the spans of the last k + 1 only (word j at last[j % keep]).
    const uint64_t keep = k < UINT64_MAX ? k + 1 : k;
    std::vector<std::pair<size_t, size_t>> last;
    uint64_t n_words = 0;
    size_t pos = 0;
    size_t n = 1;
    while (true) {
      while (pos < s.size() && is_py_space(utf8_decode(s, pos, &n))) pos += n;
      if (pos >= s.size()) break;
      const size_t begin = pos;
      while (pos < s.size() && !is_py_space(utf8_decode(s, pos, &n))) pos += n;
      if (last.size() < keep) {
        if (last.size() >= parts->max) return false;
        last.emplace_back(begin, pos);
      } else {
        last[n_words % keep] = {begin, pos};
      }
      ++n_words;
    }
    const uint64_t first = n_words - last.size();
    for (uint64_t j = first; j < n_words; ++j) {
      auto [b, e] = last[j % keep];
      if (j == first && n_words > k) b = 0;  // the remainder
      if (!parts->push(s.substr(b, e - b))) return false;
    }
    return true;
  }
  if (out != nullptr) std::reverse(out->begin(), out->end());
  return true;
}

bool py_splitlines(std::string_view s, size_t max_parts, std::vector<std::string_view>* out, size_t* n_lines) {
  Parts p(out, max_parts, n_lines);
  Parts* lines = &p;
  size_t start = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t n = 1;
    const uint32_t cp = utf8_decode(s, pos, &n);
    if (is_line_break(cp)) {
      if (!lines->push(s.substr(start, pos - start))) return false;
      if (cp == '\r' && pos + 1 < s.size() && s[pos + 1] == '\n') ++n;
      start = pos + n;
    }
    pos += n;
  }
  if (start < s.size()) return lines->push(s.substr(start));
  return true;
}

uint64_t py_replace_count(std::string_view s, std::string_view old, int64_t count) {
  const uint64_t limit = count < 0 ? UINT64_MAX : static_cast<uint64_t>(count);
  if (old.empty()) return std::min<uint64_t>(utf8_length(s) + 1, limit);
  uint64_t hits = 0;
  for (size_t start = 0; hits < limit; ++hits) {
    const size_t hit = find_bytes(s, old, start);
    if (hit == std::string_view::npos) break;
    start = hit + old.size();
  }
  return hits;
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts `repl` before every code point and at the end.
    int64_t done = 0;
    size_t pos = 0;
    while (pos < s.size()) {
      if (count < 0 || done < count) {
        out += repl;
        ++done;
      }
      size_t n = 1;
      (void)utf8_decode(s, pos, &n);
      out += s.substr(pos, n);
      pos += n;
    }
    if (count < 0 || done < count) out += repl;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t hit = find_bytes(s, old, start);
    if (hit == std::string_view::npos) break;
    out += s.substr(start, hit - start);
    out += repl;
    start = hit + old.size();
    ++done;
  }
  out += s.substr(start);
  return out;
}

int64_t py_count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(utf8_length(s)) + 1;
  return static_cast<int64_t>(py_replace_count(s, sub, -1));
}

int64_t py_find(std::string_view s, std::string_view sub, bool reverse) {
  size_t hit = std::string_view::npos;
  if (!reverse) {
    hit = find_bytes(s, sub, 0);
  } else if (sub.size() <= s.size()) {
    // The last occurrence is the first one of the reversed needle in the reversed text.
    const size_t r = find_bytes(reversed(s), reversed(sub), 0);
    if (r != std::string_view::npos) hit = s.size() - r - sub.size();
  }
  if (hit == std::string_view::npos) return -1;
  return static_cast<int64_t>(utf8_length(s.substr(0, hit)));
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string ascii_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::string py_capitalize(std::string_view s) {
  std::string out = ascii_lower(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 'a' + 'A');
  return out;
}

std::string py_title(std::string_view s) {
  // str.title(): a cased character that follows an uncased one is upper-cased, others lowered.
  std::string out(s);
  bool prev_cased = false;
  for (char& c : out) {
    const bool lower = c >= 'a' && c <= 'z';
    const bool upper = c >= 'A' && c <= 'Z';
    if (lower && !prev_cased) c = static_cast<char>(c - 'a' + 'A');
    if (upper && prev_cased) c = static_cast<char>(c - 'A' + 'a');
    prev_cased = lower || upper;
  }
  return out;
}

bool py_repr_string(std::string& out, std::string_view s, size_t max_size) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  out += quote;
  size_t pos = 0;
  while (pos < s.size()) {
    if (out.size() > max_size) return false;
    size_t n = 1;
    const uint32_t cp = utf8_decode(s, pos, &n);
    char buf[16];
    if (cp == '\\') {
      out += "\\\\";
    } else if (cp == static_cast<uint32_t>(quote)) {
      out += '\\';
      out += quote;
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) {
      std::snprintf(buf, sizeof(buf), "\\x%02x", cp);
      out += buf;
    } else if (cp == 0x2028 || cp == 0x2029) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      out += buf;
    } else {
      out += s.substr(pos, n);
    }
    pos += n;
  }
  out += quote;
  return out.size() <= max_size;
}

bool json_escape_string(std::string& out, std::string_view s, bool ensure_ascii, size_t max_size) {
  out += '"';
  size_t pos = 0;
  char buf[16];
  while (pos < s.size()) {
    if (out.size() > max_size) return false;
    size_t n = 1;
    const uint32_t cp = utf8_decode(s, pos, &n);
    switch (cp) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (cp < 0x20) {
          std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
          out += buf;
        } else if (ensure_ascii && cp >= 0x80) {
          if (cp >= 0x10000) {
            const uint32_t v = cp - 0x10000;
            std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
          } else {
            std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
          }
          out += buf;
        } else {
          out += s.substr(pos, n);
        }
    }
    pos += n;
  }
  out += '"';
  return out.size() <= max_size;
}

std::string py_float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  if (x == 0) return std::signbit(x) ? "-0.0" : "0.0";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), x, std::chars_format::scientific);
  const std::string sci(buf, res.ptr);
  // sci looks like "-1.2345e+02": split into sign, digits and exponent.
  const size_t e_pos = sci.find('e');
  std::string mantissa = sci.substr(0, e_pos);
  const int exp10 = std::atoi(sci.c_str() + e_pos + 1);
  std::string sign;
  if (mantissa[0] == '-') {
    sign = "-";
    mantissa.erase(0, 1);
  }
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  const int decpt = exp10 + 1;  // value = 0.<digits> * 10^decpt
  std::string out = sign;
  if (decpt <= -4 || decpt > 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    std::snprintf(buf, sizeof(buf), "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    out += buf;
  } else if (decpt <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-decpt), '0');
    out += digits;
  } else if (static_cast<size_t>(decpt) >= digits.size()) {
    out += digits;
    out.append(static_cast<size_t>(decpt) - digits.size(), '0');
    out += ".0";
  } else {
    out += digits.substr(0, static_cast<size_t>(decpt));
    out += '.';
    out += digits.substr(static_cast<size_t>(decpt));
  }
  return out;
}

}  // namespace sniper::jinja
