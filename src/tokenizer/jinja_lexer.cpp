// SPDX-License-Identifier: MIT
// Jinja2 lexer (see jinja_lexer.h). Mirrors the regular expressions of jinja2/lexer.py with a
// hand-written scanner: the root rule finds the earliest "{{", "{%" or "{#", a tag's end rule is
// tried before the expression rules, and `line_starting` records whether the previous match
// ended in a newline (which lstrip_blocks needs when the text holds no newline).
#include "tokenizer/jinja_lexer.h"

#include <array>
#include <cerrno>
#include <cstdlib>

#include "tokenizer/jinja_string.h"

namespace sniper::jinja {

namespace {

// Longest operators first, as jinja2's operator_re is sorted by length.
constexpr std::array<std::string_view, 29> kOperators = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*",
                                                         "%",  "~",  "[",  "]",  "(",  ")",  "{", "}", "=", ".",
                                                         ":",  "|",  ",",  ";",  "<",  ">",  "!", "&", "^"};
constexpr size_t kValidOperators = 26;  // "!", "&", "^" are rejected like jinja2 does

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

int count_newlines(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// Returns the end of the whitespace run (\s*) starting at pos.
size_t skip_space(std::string_view s, size_t pos) {
  while (pos < s.size()) {
    size_t n = 1;
    if (!is_py_space(utf8_decode(s, pos, &n))) break;
    pos += n;
  }
  return pos;
}

bool all_space(std::string_view s) { return skip_space(s, 0) == s.size(); }

// Matches `{%[-+]?\s*<word>\s*` at pos; returns the position after it (0 if no match) and
// the sign.
size_t match_block_word(std::string_view s, size_t pos, std::string_view word, char* sign) {
  if (s.compare(pos, 2, "{%") != 0) return 0;
  size_t p = pos + 2;
  *sign = 0;
  if (p < s.size() && (s[p] == '-' || s[p] == '+')) *sign = s[p++];
  p = skip_space(s, p);
  if (s.compare(p, word.size(), word) != 0) return 0;
  p = skip_space(s, p + word.size());
  return p;
}

class Lexer {
 public:
  Lexer(std::string_view source, const LexerOptions& options) : options_(options) {
    // Newlines: \r\n and \r become \n, and one trailing newline is dropped.
    src_.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_ += '\n';
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        src_ += source[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
  }

  Result<std::vector<Token>> run() {
    while (pos_ < src_.size()) {
      const size_t start = find_tag_start(pos_);
      if (start == std::string::npos) {
        emit_data(src_.substr(pos_), line_);
        break;
      }
      SNIPER_TRY(lex_tag(start));
    }
    Token eof;
    eof.type = TokenType::kEof;
    eof.line = line_;
    tokens_.push_back(eof);
    return std::move(tokens_);
  }

 private:
  size_t find_tag_start(size_t from) const {
    while (true) {
      const size_t p = src_.find('{', from);
      if (p == std::string::npos || p + 1 >= src_.size()) return std::string::npos;
      const char c = src_[p + 1];
      if (c == '{' || c == '%' || c == '#') return p;
      from = p + 1;
    }
  }

  void emit_data(std::string text, int line) {
    if (text.empty()) return;
    Token t;
    t.type = TokenType::kData;
    t.text = std::move(text);
    t.line = line;
    tokens_.push_back(std::move(t));
  }

  // Applies `-` stripping or lstrip_blocks to the text before a tag (OptionalLStrip).
  std::string strip_text(std::string_view text, char sign, bool is_variable) const {
    if (sign == '-') return py_strip(text, nullptr, false, true);
    if (sign != '+' && options_.lstrip_blocks && !is_variable) {
      const size_t nl = text.rfind('\n');
      const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting_) && l_pos < text.size() && all_space(text.substr(l_pos))) {
        return std::string(text.substr(0, l_pos));
      }
    }
    return std::string(text);
  }

  // Consumes `end` characters from pos_ (updating line and line_starting).
  void advance_to(size_t end) {
    line_ += count_newlines(std::string_view(src_).substr(pos_, end - pos_));
    line_starting_ = end > pos_ && src_[end - 1] == '\n';
    pos_ = end;
  }

  // Matches the end of a block/comment tag at p: "+%}", "-%}\s*" or "%}\n?" (close is "%}" or
  // "#}"). Returns the end position or 0.
  size_t match_tag_end(size_t p, std::string_view close) const {
    if (src_[p] == '+' && src_.compare(p + 1, 2, close) == 0) return p + 3;
    if (src_[p] == '-' && src_.compare(p + 1, 2, close) == 0) return skip_space(src_, p + 3);
    if (src_.compare(p, 2, close) == 0) {
      size_t end = p + 2;
      if (options_.trim_blocks && end < src_.size() && src_[end] == '\n') ++end;
      return end;
    }
    return 0;
  }

  Status lex_tag(size_t start) {
    const char kind = src_[start + 1];
    char sign = 0;
    if (start + 2 < src_.size() && (src_[start + 2] == '-' || src_[start + 2] == '+')) sign = src_[start + 2];
    // A raw block begins with {% raw %} (no trim_blocks newline after it, as in jinja2).
    size_t raw_end = 0;
    if (kind == '%') {
      char raw_sign = 0;
      const size_t p = match_block_word(src_, start, "raw", &raw_sign);
      if (p != 0) {
        if (src_.compare(p, 3, "-%}") == 0) raw_end = skip_space(src_, p + 3);
        else if (src_.compare(p, 2, "%}") == 0) raw_end = p + 2;
      }
    }
    const int text_line = line_;
    emit_data(strip_text(std::string_view(src_).substr(pos_, start - pos_), sign, kind == '{'), text_line);
    advance_to(start);
    const int tag_line = line_;
    if (raw_end != 0) {
      advance_to(raw_end);
      return lex_raw(tag_line);
    }
    advance_to(start + 2 + (sign != 0 ? 1 : 0));
    if (kind == '#') {
      const size_t close = src_.find("#}", pos_);
      if (close == std::string::npos) {
        return make_error("template line %d: missing end of comment tag '#}'", tag_line);
      }
      size_t end = 0;
      if (close > pos_ && (src_[close - 1] == '-' || src_[close - 1] == '+')) end = match_tag_end(close - 1, "#}");
      if (end == 0) end = match_tag_end(close, "#}");
      advance_to(end);
      return ok_status();
    }
    return lex_expression(kind == '{', tag_line);
  }

  Status lex_raw(int tag_line) {
    size_t from = pos_;
    while (true) {
      const size_t p = src_.find("{%", from);
      if (p == std::string::npos) {
        return make_error("template line %d: missing end of raw directive ({%% endraw %%})", tag_line);
      }
      char sign = 0;
      const size_t q = match_block_word(src_, p, "endraw", &sign);
      const size_t end = q == 0 ? 0 : match_tag_end(q, "%}");
      if (end == 0) {
        from = p + 1;
        continue;
      }
      emit_data(strip_text(std::string_view(src_).substr(pos_, p - pos_), sign, false), line_);
      advance_to(end);
      return ok_status();
    }
  }

  Status lex_expression(bool is_variable, int tag_line) {
    Token begin;
    begin.type = is_variable ? TokenType::kVarBegin : TokenType::kBlockBegin;
    begin.line = tag_line;
    tokens_.push_back(begin);
    std::string balance;  // expected closing brackets
    while (true) {
      if (pos_ >= src_.size()) {
        return make_error("template line %d: unexpected end of template, the tag opened here with '%s' is never closed",
                          tag_line, is_variable ? "{{" : "{%");
      }
      if (balance.empty()) {
        size_t end = 0;
        if (is_variable) {
          if (src_.compare(pos_, 3, "-}}") == 0) end = skip_space(src_, pos_ + 3);
          else if (src_.compare(pos_, 2, "}}") == 0) end = pos_ + 2;
        } else {
          end = match_tag_end(pos_, "%}");
        }
        if (end != 0) {
          Token t;
          t.type = is_variable ? TokenType::kVarEnd : TokenType::kBlockEnd;
          t.line = line_;
          tokens_.push_back(t);
          advance_to(end);
          return ok_status();
        }
      }
      const size_t ws_end = skip_space(src_, pos_);
      if (ws_end > pos_) {
        advance_to(ws_end);
        continue;
      }
      SNIPER_TRY(lex_one(balance));
    }
  }

  // Lexes one number, name, string or operator at pos_.
  Status lex_one(std::string& balance) {
    Token t;
    t.line = line_;
    const char c = src_[pos_];
    if (is_digit(c)) {
      const bool after_dot = pos_ > 0 && src_[pos_ - 1] == '.';
      size_t end = after_dot ? 0 : match_float(pos_);
      if (end != 0) {
        std::string digits;
        for (size_t i = pos_; i < end; ++i) {
          if (src_[i] != '_') digits += src_[i];
        }
        t.type = TokenType::kFloat;
        t.float_value = std::strtod(digits.c_str(), nullptr);
      } else {
        SNIPER_TRY(lex_integer(t, &end));
      }
      t.text = src_.substr(pos_, end - pos_);
      tokens_.push_back(std::move(t));
      advance_to(end);
      return ok_status();
    }
    if (is_name_start(c)) {
      size_t end = pos_;
      while (end < src_.size() && is_name_char(src_[end])) ++end;
      t.type = TokenType::kName;
      t.text = src_.substr(pos_, end - pos_);
      tokens_.push_back(std::move(t));
      advance_to(end);
      return ok_status();
    }
    if (c == '\'' || c == '"') {
      size_t end = 0;
      SNIPER_TRY(lex_string(t, &end));
      tokens_.push_back(std::move(t));
      advance_to(end);
      return ok_status();
    }
    for (size_t i = 0; i < kOperators.size(); ++i) {
      const std::string_view op = kOperators[i];
      if (src_.compare(pos_, op.size(), op) != 0) continue;
      if (i >= kValidOperators) break;
      if (op == "(" || op == "[" || op == "{") {
        balance += op == "(" ? ')' : (op == "[" ? ']' : '}');
      } else if (op == ")" || op == "]" || op == "}") {
        if (balance.empty() || balance.back() != op[0]) {
          return make_error("template line %d: unexpected '%c'%s", line_, op[0],
                            balance.empty() ? "" : (std::string(", expected '") + balance.back() + "'").c_str());
        }
        balance.pop_back();
      }
      t.type = TokenType::kOp;
      t.text = std::string(op);
      tokens_.push_back(std::move(t));
      advance_to(pos_ + op.size());
      return ok_status();
    }
    size_t n = 1;
    (void)utf8_decode(src_, pos_, &n);
    return make_error("template line %d: unexpected character '%s' in tag", line_, src_.substr(pos_, n).c_str());
  }

  // Matches digits with single underscores between them: (\d+_)*\d+. Returns the end or 0.
  size_t match_digits(size_t p) const {
    if (p >= src_.size() || !is_digit(src_[p])) return 0;
    while (true) {
      while (p < src_.size() && is_digit(src_[p])) ++p;
      if (p + 1 < src_.size() && src_[p] == '_' && is_digit(src_[p + 1])) {
        ++p;
        continue;
      }
      return p;
    }
  }

  // jinja2 float_re: digits ( (.digits)? e[+-]?digits | .digits ).
  size_t match_float(size_t p) const {
    const size_t int_end = match_digits(p);
    if (int_end == 0) return 0;
    size_t q = int_end;
    bool has_fraction = false;
    if (q < src_.size() && src_[q] == '.') {
      const size_t frac_end = match_digits(q + 1);
      if (frac_end != 0) {
        q = frac_end;
        has_fraction = true;
      }
    }
    if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
      size_t r = q + 1;
      if (r < src_.size() && (src_[r] == '+' || src_[r] == '-')) ++r;
      const size_t exp_end = match_digits(r);
      if (exp_end != 0) return exp_end;
    }
    return has_fraction ? q : 0;
  }

  Status lex_integer(Token& t, size_t* end_out) {
    size_t p = pos_;
    int base = 10;
    if (src_[p] == '0' && p + 1 < src_.size()) {
      const char x = src_[p + 1];
      if (x == 'b' || x == 'B') base = 2;
      if (x == 'o' || x == 'O') base = 8;
      if (x == 'x' || x == 'X') base = 16;
    }
    std::string digits;
    if (base != 10) {
      p += 2;
      while (p < src_.size()) {
        const char d = src_[p];
        const bool ok = (base == 2 && (d == '0' || d == '1')) || (base == 8 && d >= '0' && d <= '7') ||
                        (base == 16 && (is_digit(d) || (d >= 'a' && d <= 'f') || (d >= 'A' && d <= 'F')));
        if (d == '_' && p + 1 < src_.size() && src_[p + 1] != '_') {
          ++p;
          continue;
        }
        if (!ok) break;
        digits += d;
        ++p;
      }
      if (digits.empty()) {
        base = 10;
        p = pos_;
      }
    }
    if (base == 10) {
      p = src_[pos_] == '0' ? pos_ + 1 : match_digits(pos_);
      if (src_[pos_] == '0') {
        while (p < src_.size() && (src_[p] == '0' || (src_[p] == '_' && p + 1 < src_.size() && src_[p + 1] == '0')))
          ++p;
      }
      for (size_t i = pos_; i < p; ++i) {
        if (src_[i] != '_') digits += src_[i];
      }
    }
    errno = 0;
    char* parse_end = nullptr;
    const long long v = std::strtoll(digits.c_str(), &parse_end, base);
    if (errno == ERANGE) {
      return make_error("template line %d: integer literal '%s' is out of the 64-bit range", line_, digits.c_str());
    }
    t.type = TokenType::kInt;
    t.int_value = v;
    *end_out = p;
    return ok_status();
  }

  // A quoted string literal with Python unicode-escape processing.
  Status lex_string(Token& t, size_t* end_out) {
    const char quote = src_[pos_];
    std::string value;
    size_t p = pos_ + 1;
    while (true) {
      if (p >= src_.size()) return make_error("template line %d: unterminated string literal", line_);
      const char c = src_[p];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++p;
        continue;
      }
      if (p + 1 >= src_.size()) return make_error("template line %d: unterminated string literal", line_);
      const char e = src_[p + 1];
      p += 2;
      switch (e) {
        case '\n': break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'n': value += '\n'; break;
        case 'r': value += '\r'; break;
        case 't': value += '\t'; break;
        case 'v': value += '\v'; break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t n_hex = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
          uint32_t cp = 0;
          for (size_t i = 0; i < n_hex; ++i) {
            const char h = p + i < src_.size() ? src_[p + i] : '\0';
            int d = -1;
            if (is_digit(h)) d = h - '0';
            else if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
            if (d < 0) return make_error("template line %d: truncated \\%c escape in string literal", line_, e);
            cp = cp * 16 + static_cast<uint32_t>(d);
          }
          if (cp > 0x10FFFF) return make_error("template line %d: \\%c escape is beyond U+10FFFF", line_, e);
          utf8_append(value, cp);
          p += n_hex;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int i = 0; i < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++i) {
              cp = cp * 8 + static_cast<uint32_t>(src_[p++] - '0');
            }
            utf8_append(value, cp);
          } else {
            value += '\\';
            value += e;
          }
      }
    }
    t.type = TokenType::kString;
    t.text = std::move(value);
    *end_out = p + 1;
    return ok_status();
  }

  LexerOptions options_;
  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

Result<std::vector<Token>> tokenize(std::string_view source, const LexerOptions& options) {
  Lexer lexer(source, options);
  return lexer.run();
}

std::string describe_token(const Token& token) {
  switch (token.type) {
    case TokenType::kData: return "template data";
    case TokenType::kVarBegin: return "'{{'";
    case TokenType::kVarEnd: return "end of print statement '}}'";
    case TokenType::kBlockBegin: return "'{%'";
    case TokenType::kBlockEnd: return "end of statement block '%}'";
    case TokenType::kName: return "name '" + token.text + "'";
    case TokenType::kString: return "string literal";
    case TokenType::kInt:
    case TokenType::kFloat: return "number '" + token.text + "'";
    case TokenType::kOp: return "'" + token.text + "'";
    case TokenType::kEof: return "end of template";
  }
  return "token";
}

}  // namespace sniper::jinja
