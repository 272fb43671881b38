// SPDX-License-Identifier: MIT
// GBNF parser (see gbnf.h). A recursive-descent parser over the text, building the Grammar as
// it goes; recursion is bounded by GbnfLimits::max_nesting (one level per "(" group).
#include "sampling/gbnf.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sniper {

namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr uint32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

struct CpRange {
  uint32_t lo, hi;
};

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

void append_utf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t utf8_len(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// The byte-range sequences of the UTF-8 encodings of [lo, hi] (no surrogates inside): splits the
// range until every byte position of a piece spans a whole range of bytes (RE2's method).
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<std::vector<std::pair<uint8_t, uint8_t>>>* out) {
  struct Piece {
    uint32_t lo, hi;
  };
  std::vector<Piece> todo = {{lo, hi}};
  while (!todo.empty()) {
    Piece p = todo.back();
    todo.pop_back();
    bool split = false;
    for (uint32_t edge : {0x7Fu, 0x7FFu, 0xFFFFu}) {  // one encoded length per piece
      if (p.lo <= edge && p.hi > edge) {
        todo.push_back({edge + 1, p.hi});
        todo.push_back({p.lo, edge});
        split = true;
        break;
      }
    }
    if (split) continue;
    const size_t n = utf8_len(p.lo);
    for (size_t i = 1; i < n && !split; ++i) {
      const uint32_t m = (1u << (6 * i)) - 1;  // the low i continuation bytes
      if ((p.lo & ~m) != (p.hi & ~m)) {
        if ((p.lo & m) != 0) {
          todo.push_back({(p.lo | m) + 1, p.hi});
          todo.push_back({p.lo, p.lo | m});
          split = true;
        } else if ((p.hi & m) != m) {
          todo.push_back({p.hi & ~m, p.hi});
          todo.push_back({p.lo, (p.hi & ~m) - 1});
          split = true;
        }
      }
    }
    if (split) continue;
    std::string a, b;
    append_utf8(p.lo, &a);
    append_utf8(p.hi, &b);
    std::vector<std::pair<uint8_t, uint8_t>> seq;
    for (size_t i = 0; i < a.size(); ++i) seq.emplace_back(static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i]));
    out->push_back(std::move(seq));
  }
}

// Sorted, merged ranges without the surrogates; the complement (over every code point) when
// `negate`.
std::vector<CpRange> normalise(std::vector<CpRange> ranges, bool negate) {
  std::sort(ranges.begin(), ranges.end(), [](const CpRange& a, const CpRange& b) { return a.lo < b.lo; });
  std::vector<CpRange> merged;
  for (const CpRange& r : ranges) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  if (negate) {
    std::vector<CpRange> inverse;
    uint32_t next = 0;
    for (const CpRange& r : merged) {
      if (r.lo > next) inverse.push_back({next, r.lo - 1});
      next = r.hi + 1;
    }
    if (next <= kMaxCodePoint) inverse.push_back({next, kMaxCodePoint});
    merged = std::move(inverse);
  }
  std::vector<CpRange> out;
  for (const CpRange& r : merged) {  // cut out the surrogates
    if (r.hi < kSurrogateLo || r.lo > kSurrogateHi) {
      out.push_back(r);
      continue;
    }
    if (r.lo < kSurrogateLo) out.push_back({r.lo, kSurrogateLo - 1});
    if (r.hi > kSurrogateHi) out.push_back({kSurrogateHi + 1, r.hi});
  }
  return out;
}

class GbnfParser {
 public:
  GbnfParser(std::string_view text, const GbnfLimits& limits) : text_(text), limits_(limits) {}

  Result<std::shared_ptr<const Grammar>> parse() {
    if (text_.size() > limits_.max_bytes) {
      return make_error("the grammar is %zu bytes but at most %zu are allowed", text_.size(), limits_.max_bytes);
    }
    skip_space(true);
    while (!at_end()) SNIPER_TRY(parse_rule());
    auto root = ids_.find("root");
    if (root == ids_.end()) return make_error("the grammar has no 'root' rule (generation starts there)");
    for (const auto& [name, id] : ids_) {
      if (!defined_[static_cast<size_t>(id)]) {
        return error_at(first_use_[static_cast<size_t>(id)], "rule '" + name + "' is used but never defined");
      }
    }
    g_.set_root(root->second);
    Status st = g_.validate();
    if (!st.ok()) return make_error("the grammar is invalid: %s", st.error().message.c_str());
    if (const size_t depth = g_.left_depth(); depth > static_cast<size_t>(limits_.max_left_depth)) {
      return make_error(
          "the grammar nests %zu rules one inside the other before any text (at most %d): the matcher expands "
          "them recursively",
          depth, limits_.max_left_depth);
    }
    return std::make_shared<const Grammar>(std::move(g_));
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  Error error_at(size_t at, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return Error{"grammar line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what};
  }
  // What is at pos_, for "expected X, found Y".
  std::string found() const {
    if (at_end()) return "the end of the grammar";
    const char c = peek();
    if (c == '\n' || c == '\r') return "the end of the line";
    if (static_cast<unsigned char>(c) < 0x20) return "a control character";
    return "'" + std::string(1, c) + "'";
  }

  void skip_space(bool newline_ok) {
    while (!at_end()) {
      const char c = peek();
      if (c == '#') {
        while (!at_end() && peek() != '\n' && peek() != '\r') ++pos_;
      } else if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  Error too_many_symbols() const {
    return error_at(pos_, "the grammar has more than " + std::to_string(limits_.max_elements) +
                              " symbols (literals, classes and repetitions expand to symbols)");
  }
  Status check_size() const {
    if (g_.n_rules() > limits_.max_rules) {
      return error_at(pos_, "the grammar has more than " + std::to_string(limits_.max_rules) + " rules");
    }
    if (g_.n_elements() > limits_.max_elements) return too_many_symbols();
    return ok_status();
  }

  int32_t rule_named(const std::string& name, size_t at) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    const int32_t id = g_.add_rule(name);
    ids_[name] = id;
    defined_.resize(static_cast<size_t>(g_.n_rules()), false);
    first_use_.resize(static_cast<size_t>(g_.n_rules()), 0);
    first_use_[static_cast<size_t>(id)] = at;
    return id;
  }

  int32_t synthesized_rule(const std::string& parent) {
    const int32_t id = g_.add_rule(parent + "(" + std::to_string(++n_synthesized_) + ")");
    defined_.resize(static_cast<size_t>(g_.n_rules()), true);
    first_use_.resize(static_cast<size_t>(g_.n_rules()), 0);
    return id;
  }

  Result<std::string> parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_word_char(peek())) ++pos_;
    if (pos_ == start) return error_at(start, "expected a rule name, found " + found());
    return std::string(text_.substr(start, pos_ - start));
  }

  Status parse_rule() {
    const size_t start = pos_;
    SNIPER_ASSIGN_OR_RETURN(const std::string name, parse_name());
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") {
      return error_at(pos_, "expected '::=' after the rule name '" + name + "', found " + found());
    }
    pos_ += 3;
    skip_space(true);
    const int32_t id = rule_named(name, start);
    if (defined_[static_cast<size_t>(id)]) return error_at(start, "rule '" + name + "' is defined twice");
    defined_[static_cast<size_t>(id)] = true;
    SNIPER_TRY(parse_alternates(id, name, /*nested=*/false, 0));
    if (peek() == '\r') {
      pos_ += peek(1) == '\n' ? 2 : 1;
    } else if (peek() == '\n') {
      ++pos_;
    } else if (!at_end()) {
      return error_at(pos_, "expected the end of rule '" + name + "' (a newline), found " + found());
    }
    skip_space(true);
    return ok_status();
  }

  Status parse_alternates(int32_t rule, const std::string& name, bool nested, int depth) {
    Grammar::Sequence seq;
    SNIPER_TRY(parse_sequence(&seq, name, nested, depth));
    g_.add_alternative(rule, seq);
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      seq.clear();
      SNIPER_TRY(parse_sequence(&seq, name, nested, depth));
      g_.add_alternative(rule, seq);
    }
    return check_size();
  }

  // One code point of a literal or class: an escape or a UTF-8 character.
  Result<uint32_t> parse_char() {
    const size_t start = pos_;
    if (at_end()) return error_at(start, "unexpected end of the grammar");
    if (peek() == '\\') {
      const char e = peek(1);
      int hex = 0;
      switch (e) {
        case 'x': hex = 2; break;
        case 'u': hex = 4; break;
        case 'U': hex = 8; break;
        case 't': pos_ += 2; return uint32_t{'\t'};
        case 'r': pos_ += 2; return uint32_t{'\r'};
        case 'n': pos_ += 2; return uint32_t{'\n'};
        case '\\':
        case '"':
        case '[':
        case ']': pos_ += 2; return static_cast<uint32_t>(static_cast<unsigned char>(e));
        default:
          return error_at(start, "unknown escape '\\" + std::string(1, e == '\0' ? ' ' : e) +
                                     "' (known: \\n \\r \\t \\\\ \\\" \\[ \\] \\xHH \\uHHHH \\UHHHHHHHH)");
      }
      pos_ += 2;
      uint32_t v = 0;
      for (int i = 0; i < hex; ++i) {
        const char c = peek();
        int d = -1;
        if (c >= '0' && c <= '9') d = c - '0';
        if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        if (d < 0) return error_at(pos_, "expected " + std::to_string(hex) + " hex digits after '\\" + e + "'");
        v = (v << 4) | static_cast<uint32_t>(d);
        ++pos_;
      }
      if (v > kMaxCodePoint || (v >= kSurrogateLo && v <= kSurrogateHi)) {
        return error_at(start, "the escape names code point " + std::to_string(v) +
                                   ", which is not a Unicode scalar value (a surrogate or above U+10FFFF)");
      }
      return v;
    }
    const auto b0 = static_cast<uint8_t>(peek());
    size_t n = 0;
    uint32_t cp = 0;
    if (b0 < 0x80) {
      n = 1;
      cp = b0;
    } else if (b0 >= 0xC2 && b0 <= 0xDF) {
      n = 2;
      cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      n = 3;
      cp = b0 & 0x0F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      n = 4;
      cp = b0 & 0x07;
    } else {
      return error_at(start, "invalid UTF-8");
    }
    for (size_t i = 1; i < n; ++i) {
      const auto b = static_cast<uint8_t>(peek(i));
      if ((b & 0xC0) != 0x80) return error_at(start, "invalid UTF-8");
      cp = (cp << 6) | (b & 0x3F);
    }
    if (utf8_len(cp) != n || cp > kMaxCodePoint || (cp >= kSurrogateLo && cp <= kSurrogateHi)) {
      return error_at(start, "invalid UTF-8");
    }
    pos_ += n;
    return cp;
  }

  // The symbols matching one code point of `ranges`: one byte set when all are ASCII, else a
  // reference to a rule with one alternative per UTF-8 byte sequence.
  Result<Grammar::Symbol> class_symbol(const std::vector<CpRange>& ranges, const std::string& name, size_t at) {
    if (ranges.empty()) return error_at(at, "the character class matches nothing");
    if (ranges.back().hi < 0x80) {
      ByteSet set;
      for (const CpRange& r : ranges) set.add_range(static_cast<uint8_t>(r.lo), static_cast<uint8_t>(r.hi));
      return Grammar::bytes(set);
    }
    std::vector<std::vector<std::pair<uint8_t, uint8_t>>> seqs;
    for (const CpRange& r : ranges) utf8_sequences(r.lo, r.hi, &seqs);
    const int32_t rule = synthesized_rule(name);
    for (const auto& seq : seqs) {
      Grammar::Sequence alt;
      for (const auto& [lo, hi] : seq) {
        ByteSet set;
        set.add_range(lo, hi);
        alt.push_back(Grammar::bytes(set));
      }
      g_.add_alternative(rule, alt);
    }
    return Grammar::ref(rule);
  }

  Status parse_sequence(Grammar::Sequence* seq, const std::string& name, bool nested, int depth) {
    size_t term_start = SIZE_MAX;  // where the last term begins in *seq (repetitions apply to it)
    while (!at_end()) {
      const size_t at = pos_;
      const char c = peek();
      if (c == '"') {
        ++pos_;
        term_start = seq->size();
        std::string bytes;
        while (peek() != '"') {
          if (at_end()) return error_at(at, "the string literal is not closed (expected '\"')");
          SNIPER_ASSIGN_OR_RETURN(const uint32_t cp, parse_char());
          append_utf8(cp, &bytes);
        }
        ++pos_;
        Grammar::append_literal(seq, bytes);
        skip_space(nested);
      } else if (c == '[') {
        ++pos_;
        const bool negate = peek() == '^';
        if (negate) ++pos_;
        std::vector<CpRange> ranges;
        while (peek() != ']') {
          if (at_end()) return error_at(at, "the character class is not closed (expected ']')");
          const size_t lo_at = pos_;
          SNIPER_ASSIGN_OR_RETURN(const uint32_t lo, parse_char());
          uint32_t hi = lo;
          if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
            ++pos_;
            SNIPER_ASSIGN_OR_RETURN(hi, parse_char());
            if (hi < lo) return error_at(lo_at, "the range's end is below its start");
          }
          ranges.push_back({lo, hi});
        }
        ++pos_;
        term_start = seq->size();
        SNIPER_ASSIGN_OR_RETURN(const Grammar::Symbol sym,
                                class_symbol(normalise(std::move(ranges), negate), name, at));
        seq->push_back(sym);
        skip_space(nested);
      } else if (c == '.') {
        ++pos_;
        term_start = seq->size();
        if (any_char_ < 0) {
          SNIPER_ASSIGN_OR_RETURN(const Grammar::Symbol sym, class_symbol(normalise({}, true), "any", at));
          any_char_ = sym.rule;
        }
        seq->push_back(Grammar::ref(any_char_));
        skip_space(nested);
      } else if (is_word_char(c)) {
        SNIPER_ASSIGN_OR_RETURN(const std::string ref, parse_name());
        term_start = seq->size();
        seq->push_back(Grammar::ref(rule_named(ref, at)));
        skip_space(nested);
      } else if (c == '(') {
        if (depth >= limits_.max_nesting) {
          return error_at(at, "groups nest deeper than " + std::to_string(limits_.max_nesting) + " levels");
        }
        ++pos_;
        skip_space(true);
        const int32_t sub = synthesized_rule(name);
        SNIPER_TRY(parse_alternates(sub, name, /*nested=*/true, depth + 1));
        if (peek() != ')')
          return error_at(pos_, "expected ')' to close the group opened at column " + std::to_string(column_of(at)) +
                                    ", found " + found());
        ++pos_;
        term_start = seq->size();
        seq->push_back(Grammar::ref(sub));
        skip_space(nested);
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (term_start == SIZE_MAX) return error_at(at, "'" + std::string(1, c) + "' has nothing before it to repeat");
        int64_t min = 0, max = -1;  // max -1: unbounded
        ++pos_;
        if (c == '+') min = 1;
        if (c == '?') max = 1;
        if (c == '{') {
          skip_space(nested);
          SNIPER_ASSIGN_OR_RETURN(min, parse_count());
          skip_space(nested);
          if (peek() == '}') {
            max = min;
          } else if (peek() == ',') {
            ++pos_;
            skip_space(nested);
            if (peek() >= '0' && peek() <= '9') {
              SNIPER_ASSIGN_OR_RETURN(max, parse_count());
              skip_space(nested);
              if (max < min) return error_at(at, "the repetition's maximum is below its minimum");
            }
            if (peek() != '}') return error_at(pos_, "expected '}' to close the repetition, found " + found());
          } else {
            return error_at(pos_, "expected ',' or '}' in the repetition, found " + found());
          }
          ++pos_;
        }
        skip_space(nested);
        SNIPER_TRY(repeat(seq, term_start, min, max, name));
        // As llama.cpp: a following repetition applies to this whole expansion ("x{2}?").
        if (seq->size() == term_start) term_start = SIZE_MAX;
      } else if (c == '<' || c == '!') {
        return error_at(at, "token references (<[id]>, <token>, !<...>) are not supported; write the text instead");
      } else {
        break;
      }
      if (seq->size() > limits_.max_elements) return too_many_symbols();
    }
    return ok_status();
  }

  size_t column_of(size_t at) const {
    const size_t nl = text_.rfind('\n', at == 0 ? 0 : at - 1);
    return nl == std::string_view::npos || at == 0 ? at + 1 : at - nl;
  }

  Result<int64_t> parse_count() {
    const size_t start = pos_;
    int64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      ++pos_;
      if (v > limits_.max_repetition) {
        return error_at(start, "a repetition count is above " + std::to_string(limits_.max_repetition));
      }
    }
    if (pos_ == start) return error_at(start, "expected a repetition count, found " + found());
    return v;
  }

  // Replaces the term seq[term_start, end) by `min` copies of it and then up to max - min more
  // (unbounded when max < 0), with right-recursive rules (tail calls in the matcher).
  Status repeat(Grammar::Sequence* seq, size_t term_start, int64_t min, int64_t max, const std::string& name) {
    const Grammar::Sequence term(seq->begin() + static_cast<long>(term_start), seq->end());
    seq->resize(term_start);
    if (term.size() * static_cast<size_t>(std::max<int64_t>(min, 1)) + seq->size() > limits_.max_elements) {
      return too_many_symbols();
    }
    for (int64_t i = 0; i < min; ++i) seq->insert(seq->end(), term.begin(), term.end());
    if (max < 0) {
      const int32_t star = synthesized_rule(name);  // star ::= term star |
      Grammar::Sequence alt = term;
      alt.push_back(Grammar::ref(star));
      g_.add_alternative(star, alt);
      g_.add_alternative(star, {});
      seq->push_back(Grammar::ref(star));
    } else if (max > min) {
      int32_t next = -1;  // opt_k ::= term opt_{k+1} | ; the last without the reference
      for (int64_t k = max - min; k > 0; --k) {
        const int32_t opt = synthesized_rule(name);
        Grammar::Sequence alt = term;
        if (next >= 0) alt.push_back(Grammar::ref(next));
        g_.add_alternative(opt, alt);
        g_.add_alternative(opt, {});
        next = opt;
        SNIPER_TRY(check_size());
      }
      seq->push_back(Grammar::ref(next));
    }
    return check_size();
  }

  std::string_view text_;
  GbnfLimits limits_;
  size_t pos_ = 0;
  Grammar g_;
  std::map<std::string, int32_t> ids_;  // named rules
  std::vector<bool> defined_;           // [rule]
  std::vector<size_t> first_use_;       // [rule] offset of its first reference (for errors)
  int32_t any_char_ = -1;               // the rule of '.', made once
  int n_synthesized_ = 0;
};

}  // namespace

Result<std::shared_ptr<const Grammar>> parse_gbnf(std::string_view text, const GbnfLimits& limits) {
  return GbnfParser(text, limits).parse();
}

}  // namespace sniper
