// SPDX-License-Identifier: MIT
#include "sampling/json_schema_grammar.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string>

#include "base/check.h"

namespace sniper {

namespace {

using Json = nlohmann::ordered_json;
using Seq = Grammar::Sequence;

Grammar::Symbol lit_byte(char c) { return Grammar::byte(static_cast<uint8_t>(c)); }

Grammar::Symbol range(uint8_t lo, uint8_t hi) {
  ByteSet s;
  s.add_range(lo, hi);
  return Grammar::bytes(s);
}

Seq literal(std::string_view text) {
  Seq s;
  Grammar::append_literal(&s, text);
  return s;
}

Seq concat(Seq a, const Seq& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class Builder {
 public:
  explicit Builder(const JsonGrammarLimits& limits) : limits_(limits) {}

  Grammar& grammar() { return g_; }

  int32_t rule(std::string name) { return g_.add_rule(std::move(name)); }
  void alt(int32_t r, const Seq& s) { g_.add_alternative(r, s); }

  // ws ::= "" | [ \t\n\r] ws' ... at most max_ws bytes (a chain of tail calls).
  int32_t ws() {
    if (ws_ >= 0) return ws_;
    const int n = std::max(0, limits_.max_ws);
    std::vector<int32_t> chain(static_cast<size_t>(n) + 1);
    for (int i = 0; i <= n; ++i) chain[static_cast<size_t>(i)] = rule("ws" + std::to_string(i));
    ByteSet space;
    for (char c : std::string_view(" \t\n\r")) space.add(static_cast<uint8_t>(c));
    for (int i = 0; i <= n; ++i) {
      alt(chain[static_cast<size_t>(i)], {});
      if (i < n)
        alt(chain[static_cast<size_t>(i)], {Grammar::bytes(space), Grammar::ref(chain[static_cast<size_t>(i) + 1])});
    }
    ws_ = chain[0];
    return ws_;
  }

  // One string character: unescaped printable ASCII, an escape, or a well-formed UTF-8 sequence.
  int32_t json_char() {
    if (char_ >= 0) return char_;
    char_ = rule("char");
    ByteSet plain;
    plain.add_range(0x20, 0x7F);
    plain.bits['"' >> 6] &= ~(uint64_t{1} << ('"' & 63));
    plain.bits['\\' >> 6] &= ~(uint64_t{1} << ('\\' & 63));
    alt(char_, {Grammar::bytes(plain)});
    ByteSet simple_esc;
    for (char c : std::string_view("\"\\/bfnrt")) simple_esc.add(static_cast<uint8_t>(c));
    alt(char_, {lit_byte('\\'), Grammar::bytes(simple_esc)});
    // \uXXXX other than a surrogate (D800-DFFF): first digit not d/D, or d/D then 0-7.
    ByteSet hex, hex_not_d, d, hex_low;
    hex.add_range('0', '9');
    hex.add_range('a', 'f');
    hex.add_range('A', 'F');
    hex_not_d = hex;
    hex_not_d.bits['d' >> 6] &= ~(uint64_t{1} << ('d' & 63));
    hex_not_d.bits['D' >> 6] &= ~(uint64_t{1} << ('D' & 63));
    d.add('d');
    d.add('D');
    hex_low.add_range('0', '7');
    alt(char_, {lit_byte('\\'), lit_byte('u'), Grammar::bytes(hex_not_d), Grammar::bytes(hex), Grammar::bytes(hex),
                Grammar::bytes(hex)});
    alt(char_, {lit_byte('\\'), lit_byte('u'), Grammar::bytes(d), Grammar::bytes(hex_low), Grammar::bytes(hex),
                Grammar::bytes(hex)});
    // UTF-8 (RFC 3629 table 3-7): no overlongs, no surrogates, nothing past U+10FFFF.
    const auto cont = range(0x80, 0xBF);
    alt(char_, {range(0xC2, 0xDF), cont});
    alt(char_, {lit_byte('\xE0'), range(0xA0, 0xBF), cont});
    alt(char_, {range(0xE1, 0xEC), cont, cont});
    alt(char_, {lit_byte('\xED'), range(0x80, 0x9F), cont});
    alt(char_, {range(0xEE, 0xEF), cont, cont});
    alt(char_, {lit_byte('\xF0'), range(0x90, 0xBF), cont, cont});
    alt(char_, {range(0xF1, 0xF3), cont, cont, cont});
    alt(char_, {lit_byte('\xF4'), range(0x80, 0x8F), cont, cont});
    return char_;
  }

  // A string of any length.
  int32_t any_string() {
    if (string_ >= 0) return string_;
    const int32_t body = rule("string-body");
    alt(body, {lit_byte('"')});
    alt(body, {Grammar::ref(json_char()), Grammar::ref(body)});
    string_ = rule("string");
    alt(string_, {lit_byte('"'), Grammar::ref(body)});
    return string_;
  }

  // A string of an unconstrained value: at most max_any_string characters.
  int32_t free_string() {
    if (free_string_ < 0) free_string_ = string(0, std::max(0, limits_.max_any_string));
    return free_string_;
  }

  // A string of [min_len, max_len] characters (max_len < 0: unbounded).
  int32_t string(int64_t min_len, int64_t max_len) {
    if (min_len == 0 && max_len < 0) return any_string();
    const int64_t top = max_len < 0 ? min_len : max_len;
    std::vector<int32_t> s(static_cast<size_t>(top) + 1);
    for (int64_t k = 0; k <= top; ++k) s[static_cast<size_t>(k)] = rule("string-" + std::to_string(k));
    for (int64_t k = 0; k <= top; ++k) {
      const int32_t r = s[static_cast<size_t>(k)];
      if (k == top && max_len < 0) {  // at least min_len reached: any further length
        alt(r, {lit_byte('"')});
        alt(r, {Grammar::ref(json_char()), Grammar::ref(r)});
        continue;
      }
      if (k >= min_len) alt(r, {lit_byte('"')});
      if (k < top) alt(r, {Grammar::ref(json_char()), Grammar::ref(s[static_cast<size_t>(k) + 1])});
    }
    const int32_t str = rule("string-bounded");
    alt(str, {lit_byte('"'), Grammar::ref(s[0])});
    return str;
  }

  // Up to n more digits.
  int32_t digits_upto(int n, const std::string& name) {
    int32_t next = rule(name + std::to_string(n));
    alt(next, {});
    for (int i = n - 1; i >= 0; --i) {
      const int32_t r = rule(name + std::to_string(i));
      alt(r, {});
      alt(r, {range('0', '9'), Grammar::ref(next)});
      next = r;
    }
    return next;
  }

  // -?(0|[1-9][0-9]{0,15})
  int32_t integer() {
    if (integer_ >= 0) return integer_;
    const int32_t more = digits_upto(15, "int-digit");
    const int32_t uint = rule("uint");
    alt(uint, {lit_byte('0')});
    alt(uint, {range('1', '9'), Grammar::ref(more)});
    integer_ = rule("integer");
    alt(integer_, {Grammar::ref(uint)});
    alt(integer_, {lit_byte('-'), Grammar::ref(uint)});
    return integer_;
  }

  // integer (. [0-9]{1,16})? ([eE] [+-]? [0-9]{1,2})?
  int32_t number() {
    if (number_ >= 0) return number_;
    const int32_t frac_more = digits_upto(15, "frac-digit");
    const int32_t frac = rule("frac");
    alt(frac, {});
    alt(frac, {lit_byte('.'), range('0', '9'), Grammar::ref(frac_more)});
    const int32_t exp_more = digits_upto(1, "exp-digit");
    const int32_t exp = rule("exp");
    ByteSet e, sign;
    e.add('e');
    e.add('E');
    sign.add('+');
    sign.add('-');
    alt(exp, {});
    alt(exp, {Grammar::bytes(e), range('0', '9'), Grammar::ref(exp_more)});
    alt(exp, {Grammar::bytes(e), Grammar::bytes(sign), range('0', '9'), Grammar::ref(exp_more)});
    number_ = rule("number");
    alt(number_, {Grammar::ref(integer()), Grammar::ref(frac), Grammar::ref(exp)});
    return number_;
  }

  int32_t literal_rule(const std::string& text) {
    auto it = literals_.find(text);
    if (it != literals_.end()) return it->second;
    const int32_t r = rule("literal");
    alt(r, literal(text));
    literals_[text] = r;
    return r;
  }

  // One of `texts` (each a JSON value's text), as a trie of rules: a rule per branching point,
  // whose alternatives are the bytes up to the next branching point and a reference to its rule
  // (or nothing, where a text ends). Texts that share a prefix share its bytes, so the matcher
  // follows one parse, not one per text (an enum of 40,000 values with a common prefix kept
  // 40,000 stacks alive). Built without recursion: texts may nest to any depth ("a", "aa", ...).
  int32_t alternation(std::vector<std::string> texts) {
    std::sort(texts.begin(), texts.end());
    texts.erase(std::unique(texts.begin(), texts.end()), texts.end());
    struct Node {
      size_t begin, end, depth;  // texts[begin, end) share their first `depth` bytes
      int32_t rule;
    };
    const int32_t root = rule("enum");
    std::vector<Node> todo = {{0, texts.size(), 0, root}};
    while (!todo.empty()) {
      const Node n = todo.back();
      todo.pop_back();
      size_t i = n.begin;
      if (texts[i].size() == n.depth) {  // sorted: a text that ends here comes first
        alt(n.rule, {});
        ++i;
      }
      while (i < n.end) {
        // The group of texts continuing with the same byte, and the bytes they all share.
        size_t j = i + 1;
        while (j < n.end && texts[j][n.depth] == texts[i][n.depth]) ++j;
        size_t common = texts[i].size();
        for (size_t k = i + 1; k < j; ++k) {
          size_t c = n.depth;
          while (c < common && c < texts[k].size() && texts[k][c] == texts[i][c]) ++c;
          common = c;
        }
        Seq seq = literal(std::string_view(texts[i]).substr(n.depth, common - n.depth));
        if (j - i > 1) {
          const int32_t child = rule("enum");
          seq.push_back(Grammar::ref(child));
          todo.push_back({i, j, common, child});
        }
        alt(n.rule, seq);
        i = j;
      }
    }
    return root;
  }

  // Any JSON value nested at `depth` (containers only while depth < max_any_depth).
  int32_t any_value(int depth) {
    if (depth >= static_cast<int>(any_values_.size())) any_values_.resize(static_cast<size_t>(depth) + 1, -1);
    if (any_values_[static_cast<size_t>(depth)] >= 0) return any_values_[static_cast<size_t>(depth)];
    const int32_t v = rule("value" + std::to_string(depth));
    any_values_[static_cast<size_t>(depth)] = v;
    alt(v, {Grammar::ref(free_string())});
    alt(v, {Grammar::ref(number())});
    alt(v, literal("true"));
    alt(v, literal("false"));
    alt(v, literal("null"));
    if (depth < limits_.max_any_depth) {
      alt(v, {Grammar::ref(any_object(depth))});
      alt(v, {Grammar::ref(any_array(depth))});
    } else {
      alt(v, literal("{}"));
      alt(v, literal("[]"));
    }
    return v;
  }

  // Any object at `depth`: { ws } | { ws member (ws , ws member)* ws }
  int32_t any_object(int depth) {
    const int32_t member = rule("member" + std::to_string(depth));
    alt(member, {Grammar::ref(free_string()), Grammar::ref(ws()), lit_byte(':'), Grammar::ref(ws()),
                 Grammar::ref(any_value(depth + 1))});
    const int32_t tail = rule("members-tail" + std::to_string(depth));
    const int32_t rest = rule("members" + std::to_string(depth));
    alt(rest, {Grammar::ref(ws()), Grammar::ref(tail)});
    alt(tail, {lit_byte('}')});
    alt(tail, {lit_byte(','), Grammar::ref(ws()), Grammar::ref(member), Grammar::ref(rest)});
    const int32_t obj = rule("object" + std::to_string(depth));
    alt(obj, {lit_byte('{'), Grammar::ref(ws()), lit_byte('}')});
    alt(obj, {lit_byte('{'), Grammar::ref(ws()), Grammar::ref(member), Grammar::ref(rest)});
    return obj;
  }

  int32_t any_array(int depth) { return array(any_value(depth + 1), 0, -1, "array" + std::to_string(depth)); }

  // [ ws ] or [ ws item (ws , ws item)* ws ] with [min_items, max_items] items (max < 0: any).
  int32_t array(int32_t item, int64_t min_items, int64_t max_items, const std::string& name) {
    // after[k]: k items written; next comes ws then "]" (k >= min) or ", item" (k < max).
    const int64_t top = max_items < 0 ? std::max<int64_t>(min_items, 1) : max_items;
    std::vector<int32_t> after(static_cast<size_t>(top) + 1), tail(static_cast<size_t>(top) + 1);
    for (int64_t k = 1; k <= top; ++k) {
      after[static_cast<size_t>(k)] = rule(name + "-after" + std::to_string(k));
      tail[static_cast<size_t>(k)] = rule(name + "-tail" + std::to_string(k));
    }
    for (int64_t k = 1; k <= top; ++k) {
      const int32_t a = after[static_cast<size_t>(k)];
      const int32_t t = tail[static_cast<size_t>(k)];
      alt(a, {Grammar::ref(ws()), Grammar::ref(t)});
      if (k >= min_items) alt(t, {lit_byte(']')});
      if (k < top) {
        alt(t,
            {lit_byte(','), Grammar::ref(ws()), Grammar::ref(item), Grammar::ref(after[static_cast<size_t>(k) + 1])});
      } else if (max_items < 0) {  // unbounded: loop on the last state
        alt(t, {lit_byte(','), Grammar::ref(ws()), Grammar::ref(item), Grammar::ref(a)});
      }
    }
    const int32_t arr = rule(name);
    if (min_items == 0) alt(arr, {lit_byte('['), Grammar::ref(ws()), lit_byte(']')});
    if (max_items != 0) alt(arr, {lit_byte('['), Grammar::ref(ws()), Grammar::ref(item), Grammar::ref(after[1])});
    return arr;
  }

  const JsonGrammarLimits& limits() const { return limits_; }

 private:
  JsonGrammarLimits limits_;
  Grammar g_;
  int32_t ws_ = -1, char_ = -1, string_ = -1, free_string_ = -1, integer_ = -1, number_ = -1;
  std::vector<int32_t> any_values_;
  std::map<std::string, int32_t> literals_;
};

class SchemaCompiler {
 public:
  explicit SchemaCompiler(Builder* b) : b_(*b) {}

  // Refuses a grammar past the limits (checked as it grows, so a large schema stops early).
  Status check_size(const std::string& path) {
    if (b_.grammar().n_rules() > b_.limits().max_rules) {
      return make_error(
          "%s: the schema is too large (its grammar passes %d rules; lower maxLength/maxItems or split it)",
          path.c_str(), b_.limits().max_rules);
    }
    if (b_.grammar().n_elements() > b_.limits().max_elements) {
      return make_error(
          "%s: the schema is too large (its grammar passes %zu symbols, about one per byte of its "
          "literals; shorten its enums and consts)",
          path.c_str(), b_.limits().max_elements);
    }
    return ok_status();
  }

  // The alternatives of an enum or anyOf: a non-empty array of at most max_alternatives.
  Status check_alternatives(const Json& list, const std::string& path, const char* key) {
    if (!list.is_array() || list.empty()) return make_error("%s.%s must be a non-empty array", path.c_str(), key);
    if (list.size() > b_.limits().max_alternatives) {
      return make_error("%s.%s has %zu entries but at most %zu are allowed", path.c_str(), key, list.size(),
                        b_.limits().max_alternatives);
    }
    return ok_status();
  }

  Result<int32_t> compile(const Json& schema, const std::string& path, int depth) {
    SNIPER_TRY(check_size(path));
    if (depth > b_.limits().max_schema_depth) {
      return make_error("%s: the schema nests deeper than %d levels", path.c_str(), b_.limits().max_schema_depth);
    }
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return b_.any_value(1);
      return make_error("%s: the schema is false, which no value satisfies", path.c_str());
    }
    if (!schema.is_object()) return make_error("%s: a schema must be an object or a boolean", path.c_str());
    static const std::set<std::string> kKnown = {"type",      "properties",  "required", "additionalProperties",
                                                 "items",     "minItems",    "maxItems", "minLength",
                                                 "maxLength", "enum",        "const",    "anyOf",
                                                 "title",     "description", "$schema",  "$id",
                                                 "$comment",  "default",     "examples"};
    for (auto it = schema.begin(); it != schema.end(); ++it) {
      if (kKnown.count(it.key()) == 0) {
        return make_error(
            "%s: the keyword '%s' is not supported (supported: type, properties, required, "
            "additionalProperties, items, minItems, maxItems, minLength, maxLength, enum, const, anyOf)",
            path.c_str(), it.key().c_str());
      }
    }
    if (auto c = schema.find("const"); c != schema.end()) return b_.literal_rule(c->dump());
    if (auto e = schema.find("enum"); e != schema.end()) {
      SNIPER_TRY(check_alternatives(*e, path, "enum"));
      std::vector<std::string> texts;
      texts.reserve(e->size());
      size_t bytes = 0;
      for (const Json& v : *e) {
        texts.push_back(v.dump());
        bytes += texts.back().size();
        if (bytes > b_.limits().max_elements) {  // each byte becomes a grammar symbol
          return make_error("%s.enum: the schema is too large (its values pass %zu bytes)", path.c_str(),
                            b_.limits().max_elements);
        }
      }
      const int32_t r = b_.alternation(std::move(texts));
      SNIPER_TRY(check_size(path + ".enum"));
      return r;
    }
    if (auto a = schema.find("anyOf"); a != schema.end()) {
      SNIPER_TRY(check_alternatives(*a, path, "anyOf"));
      const int32_t r = b_.rule("anyOf");
      for (size_t i = 0; i < a->size(); ++i) {
        SNIPER_ASSIGN_OR_RETURN(const int32_t sub,
                                compile((*a)[i], path + ".anyOf[" + std::to_string(i) + "]", depth + 1));
        b_.alt(r, {Grammar::ref(sub)});
      }
      return r;
    }
    std::vector<std::string> types;
    if (auto t = schema.find("type"); t != schema.end()) {
      if (t->is_string()) {
        types.push_back(t->get<std::string>());
      } else if (t->is_array() && !t->empty()) {
        for (const Json& n : *t) {
          if (!n.is_string()) return make_error("%s.type must be a string or an array of strings", path.c_str());
          types.push_back(n.get<std::string>());
        }
      } else {
        return make_error("%s.type must be a string or a non-empty array of strings", path.c_str());
      }
    } else if (schema.contains("properties") || schema.contains("required") ||
               schema.contains("additionalProperties")) {
      types.push_back("object");
    } else if (schema.contains("items") || schema.contains("minItems") || schema.contains("maxItems")) {
      types.push_back("array");
    } else if (schema.contains("minLength") || schema.contains("maxLength")) {
      types.push_back("string");
    } else {
      return b_.any_value(1);
    }
    if (types.size() == 1) return compile_type(types[0], schema, path, depth);
    const int32_t r = b_.rule("types");
    for (const std::string& t : types) {
      SNIPER_ASSIGN_OR_RETURN(const int32_t sub, compile_type(t, schema, path, depth));
      b_.alt(r, {Grammar::ref(sub)});
    }
    return r;
  }

 private:
  Result<int64_t> count(const Json& schema, const char* key, const std::string& path, int64_t fallback) {
    auto it = schema.find(key);
    if (it == schema.end()) return fallback;
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > b_.limits().max_count) {
      return make_error("%s.%s must be an integer in [0, %d]", path.c_str(), key, b_.limits().max_count);
    }
    return it->get<int64_t>();
  }

  Result<int32_t> compile_type(const std::string& type, const Json& schema, const std::string& path, int depth) {
    if (type == "string") {
      SNIPER_ASSIGN_OR_RETURN(const int64_t lo, count(schema, "minLength", path, 0));
      SNIPER_ASSIGN_OR_RETURN(const int64_t hi, count(schema, "maxLength", path, -1));
      if (hi >= 0 && hi < lo)
        return make_error("%s: maxLength %lld is below minLength %lld", path.c_str(), static_cast<long long>(hi),
                          static_cast<long long>(lo));
      return b_.string(lo, hi);
    }
    if (type == "number") return b_.number();
    if (type == "integer") return b_.integer();
    if (type == "boolean") {
      const int32_t r = b_.rule("boolean");
      b_.alt(r, literal("true"));
      b_.alt(r, literal("false"));
      return r;
    }
    if (type == "null") return b_.literal_rule("null");
    if (type == "array") return compile_array(schema, path, depth);
    if (type == "object") return compile_object(schema, path, depth);
    return make_error("%s.type is '%s' but must be one of object, array, string, number, integer, boolean, null",
                      path.c_str(), type.c_str());
  }

  Result<int32_t> compile_array(const Json& schema, const std::string& path, int depth) {
    int32_t item = -1;
    if (auto it = schema.find("items"); it != schema.end()) {
      SNIPER_ASSIGN_OR_RETURN(item, compile(*it, path + ".items", depth + 1));
    } else {
      item = b_.any_value(1);
    }
    SNIPER_ASSIGN_OR_RETURN(const int64_t lo, count(schema, "minItems", path, 0));
    SNIPER_ASSIGN_OR_RETURN(const int64_t hi, count(schema, "maxItems", path, -1));
    if (hi >= 0 && hi < lo)
      return make_error("%s: maxItems %lld is below minItems %lld", path.c_str(), static_cast<long long>(hi),
                        static_cast<long long>(lo));
    return b_.array(item, lo, hi, "array");
  }

  Result<int32_t> compile_object(const Json& schema, const std::string& path, int depth) {
    struct Prop {
      std::string key_json;  // the key as a JSON string literal
      int32_t value;
      bool required;
    };
    std::vector<Prop> props;
    std::set<std::string> required;
    if (auto r = schema.find("required"); r != schema.end()) {
      if (!r->is_array()) return make_error("%s.required must be an array of strings", path.c_str());
      for (const Json& n : *r) {
        if (!n.is_string()) return make_error("%s.required must be an array of strings", path.c_str());
        required.insert(n.get<std::string>());
      }
    }
    bool closed = false;
    if (auto a = schema.find("additionalProperties"); a != schema.end()) {
      if (a->is_boolean()) {
        closed = !a->get<bool>();
      } else if (!a->is_object()) {
        return make_error("%s.additionalProperties must be a boolean or a schema", path.c_str());
      }
    }
    std::set<std::string> declared;
    if (auto p = schema.find("properties"); p != schema.end()) {
      if (!p->is_object()) return make_error("%s.properties must be an object", path.c_str());
      for (auto it = p->begin(); it != p->end(); ++it) {
        SNIPER_ASSIGN_OR_RETURN(const int32_t v, compile(it.value(), path + ".properties." + it.key(), depth + 1));
        props.push_back({Json(it.key()).dump(), v, required.count(it.key()) > 0});
        declared.insert(it.key());
      }
    }
    for (const std::string& name : required) {
      if (declared.count(name) != 0) continue;
      if (closed) {
        return make_error("%s: '%s' is required but not among the properties, and additionalProperties is false",
                          path.c_str(), name.c_str());
      }
      props.push_back({Json(name).dump(), b_.any_value(1), true});
    }
    if (props.empty()) {
      if (!closed) return b_.any_object(1);
      const int32_t r = b_.rule("empty-object");
      b_.alt(r, {lit_byte('{'), Grammar::ref(b_.ws()), lit_byte('}')});
      return r;
    }
    // from[i][first]: the properties from i on; `first` when none has been written yet (no comma).
    const size_t n = props.size();
    std::vector<std::array<int32_t, 2>> from(n + 1);
    for (size_t i = 0; i <= n; ++i) from[i] = {b_.rule("props"), b_.rule("props")};
    for (int first = 0; first < 2; ++first) b_.alt(from[n][static_cast<size_t>(first)], {});
    for (size_t i = 0; i < n; ++i) {
      const Prop& p = props[i];
      Seq kv = literal(p.key_json);
      kv.push_back(Grammar::ref(b_.ws()));
      kv.push_back(lit_byte(':'));
      kv.push_back(Grammar::ref(b_.ws()));
      kv.push_back(Grammar::ref(p.value));
      for (int first = 0; first < 2; ++first) {
        Seq s;
        if (first == 0) s = {Grammar::ref(b_.ws()), lit_byte(','), Grammar::ref(b_.ws())};
        s = concat(s, kv);
        s.push_back(Grammar::ref(from[i + 1][0]));
        b_.alt(from[i][static_cast<size_t>(first)], s);
        if (!p.required)
          b_.alt(from[i][static_cast<size_t>(first)], {Grammar::ref(from[i + 1][static_cast<size_t>(first)])});
      }
    }
    const int32_t obj = b_.rule("object");
    b_.alt(obj, {lit_byte('{'), Grammar::ref(b_.ws()), Grammar::ref(from[0][1]), Grammar::ref(b_.ws()), lit_byte('}')});
    return obj;
  }

  Builder& b_;
};

std::shared_ptr<const Grammar> finish(Builder& b, int32_t value) {
  const int32_t root = b.rule("root");
  b.alt(root, {Grammar::ref(b.ws()), Grammar::ref(value)});
  b.grammar().set_root(root);
  return std::make_shared<const Grammar>(std::move(b.grammar()));
}

}  // namespace

Result<std::shared_ptr<const Grammar>> json_schema_grammar(const nlohmann::ordered_json& schema,
                                                           const JsonGrammarLimits& limits) {
  Builder b(limits);
  SchemaCompiler c(&b);
  SNIPER_ASSIGN_OR_RETURN(const int32_t value, c.compile(schema, "$", 0));
  auto g = finish(b, value);
  SNIPER_TRY(g->validate());
  return g;
}

std::shared_ptr<const Grammar> json_object_grammar(const JsonGrammarLimits& limits) {
  Builder b(limits);
  auto g = finish(b, b.any_object(0));
  CHECK(g->validate().ok(), "the JSON object grammar is invalid");
  return g;
}

}  // namespace sniper
