// SPDX-License-Identifier: MIT
// Jinja2 tests (`x is defined`, `x is divisibleby 3`, ...) with jinja2/tests.py semantics.
#include <array>

#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_eval.h"
#include "tokenizer/jinja_string.h"

namespace sniper::jinja {

namespace {

using TestFn = Result<bool> (*)(Interpreter&, const Value&, const CallArgs&);

// A test that takes no arguments, defined by a predicate on the value.
#define SNIPER_UNARY_TEST(fn_name, test_name, expr)                       \
  Result<bool> fn_name(Interpreter&, const Value& v, const CallArgs& a) { \
    SNIPER_TRY(bind_args(test_name, a, {}));                              \
    return (expr);                                                        \
  }

SNIPER_UNARY_TEST(t_defined, "defined", !v.is_undefined())
SNIPER_UNARY_TEST(t_undefined, "undefined", v.is_undefined())
SNIPER_UNARY_TEST(t_none, "none", v.is_none())
SNIPER_UNARY_TEST(t_boolean, "boolean", v.is_bool())
SNIPER_UNARY_TEST(t_true, "true", v.is_bool() && v.as_bool())
SNIPER_UNARY_TEST(t_false, "false", v.is_bool() && !v.as_bool())
SNIPER_UNARY_TEST(t_integer, "integer", v.is_int())
SNIPER_UNARY_TEST(t_float, "float", v.kind() == Kind::kFloat)
SNIPER_UNARY_TEST(t_number, "number", v.is_number())
SNIPER_UNARY_TEST(t_string, "string", v.is_string())
SNIPER_UNARY_TEST(t_mapping, "mapping", v.kind() == Kind::kDict)
// Undefined iterates as empty and has a length, so jinja2 counts it as iterable and sequence.
SNIPER_UNARY_TEST(t_iterable, "iterable",
                  v.is_string() || v.is_sequence() || v.kind() == Kind::kDict || v.is_undefined())
SNIPER_UNARY_TEST(t_sequence, "sequence",
                  v.is_string() || v.is_sequence() || v.kind() == Kind::kDict || v.is_undefined())
SNIPER_UNARY_TEST(t_callable, "callable", v.kind() == Kind::kCallable)
SNIPER_UNARY_TEST(t_escaped, "escaped", false)
#undef SNIPER_UNARY_TEST

// str(v) == lower(str(v)) and != upper(str(v)): no ASCII capital and at least one small letter
// (upper: the reverse).
Result<bool> case_test(Interpreter& in, const Value& v, const CallArgs& a, const char* name, bool want_lower) {
  SNIPER_TRY(bind_args(name, a, {}));
  SNIPER_ASSIGN_OR_RETURN(Value s, in.str(v));
  SNIPER_TRY(in.budget().bytes(s.as_string().size()));
  bool has_lower = false;
  bool has_upper = false;
  for (char c : s.as_string()) {
    has_lower = has_lower || (c >= 'a' && c <= 'z');
    has_upper = has_upper || (c >= 'A' && c <= 'Z');
  }
  return want_lower ? (has_lower && !has_upper) : (has_upper && !has_lower);
}
Result<bool> t_lower(Interpreter& in, const Value& v, const CallArgs& a) { return case_test(in, v, a, "lower", true); }
Result<bool> t_upper(Interpreter& in, const Value& v, const CallArgs& a) { return case_test(in, v, a, "upper", false); }

Result<bool> parity(const Value& v, const CallArgs& a, const char* name, int64_t want) {
  SNIPER_TRY(bind_args(name, a, {}));
  SNIPER_ASSIGN_OR_RETURN(int64_t i, int_arg(name, "value", v));
  return ((i % 2) + 2) % 2 == want;
}
Result<bool> t_odd(Interpreter&, const Value& v, const CallArgs& a) { return parity(v, a, "odd", 1); }
Result<bool> t_even(Interpreter&, const Value& v, const CallArgs& a) { return parity(v, a, "even", 0); }

Result<bool> t_divisibleby(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("divisibleby", a, {required("num")}));
  SNIPER_ASSIGN_OR_RETURN(int64_t x, int_arg("divisibleby", "value", v));
  SNIPER_ASSIGN_OR_RETURN(int64_t n, int_arg("divisibleby", "num", p[0]));
  if (n == 0) return make_error("divisibleby: num must not be zero");
  return x % n == 0;
}

Result<bool> t_in(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("in", a, {required("seq")}));
  const Value& seq = p[0];
  if (seq.is_string() && !v.is_string()) {
    return make_error("in: 'in <string>' requires string as left operand, not %s", type_name(v).c_str());
  }
  if (seq.is_string() || seq.kind() == Kind::kDict || seq.is_sequence()) return in.contains(seq, v);
  SNIPER_ASSIGN_OR_RETURN(std::shared_ptr<const List> items, in.iterate(seq));
  for (const Value& x : *items) {
    SNIPER_ASSIGN_OR_RETURN(bool eq, in.eq(x, v));
    if (eq) return true;
  }
  return false;
}

Result<bool> t_sameas(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("sameas", a, {required("other")}));
  const Value& o = p[0];
  if (v.kind() != o.kind()) return false;
  if (v.identity() != nullptr) return v.identity() == o.identity();
  return in.eq(v, o);
}

// Comparison tests: eq/equalto/==, ne/!=, lt/lessthan/<, le/<=, gt/greaterthan/>, ge/>=.
Result<bool> cmp_test(Interpreter& in, const Value& v, const CallArgs& a, const char* name, int mode) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args(name, a, {required("other")}));
  if (mode == 0 || mode == 1) {
    SNIPER_ASSIGN_OR_RETURN(bool eq, in.eq(v, p[0]));
    return mode == 0 ? eq : !eq;
  }
  if (v.is_undefined() || p[0].is_undefined()) return make_error("%s: cannot compare an undefined value", name);
  SNIPER_ASSIGN_OR_RETURN(int c, in.cmp(v, p[0]));
  switch (mode) {
    case 2: return c < 0;
    case 3: return c <= 0;
    case 4: return c > 0;
    default: return c >= 0;
  }
}
Result<bool> t_eq(Interpreter& in, const Value& v, const CallArgs& a) { return cmp_test(in, v, a, "eq", 0); }
Result<bool> t_ne(Interpreter& in, const Value& v, const CallArgs& a) { return cmp_test(in, v, a, "ne", 1); }
Result<bool> t_lt(Interpreter& in, const Value& v, const CallArgs& a) { return cmp_test(in, v, a, "lt", 2); }
Result<bool> t_le(Interpreter& in, const Value& v, const CallArgs& a) { return cmp_test(in, v, a, "le", 3); }
Result<bool> t_gt(Interpreter& in, const Value& v, const CallArgs& a) { return cmp_test(in, v, a, "gt", 4); }
Result<bool> t_ge(Interpreter& in, const Value& v, const CallArgs& a) { return cmp_test(in, v, a, "ge", 5); }

struct TestEntry {
  std::string_view name;
  TestFn fn;
};

constexpr std::array<TestEntry, 38> kTests = {{
    {"defined", t_defined},
    {"undefined", t_undefined},
    {"none", t_none},
    {"boolean", t_boolean},
    {"true", t_true},
    {"false", t_false},
    {"integer", t_integer},
    {"float", t_float},
    {"number", t_number},
    {"string", t_string},
    {"mapping", t_mapping},
    {"iterable", t_iterable},
    {"sequence", t_sequence},
    {"callable", t_callable},
    {"escaped", t_escaped},
    {"lower", t_lower},
    {"upper", t_upper},
    {"odd", t_odd},
    {"even", t_even},
    {"divisibleby", t_divisibleby},
    {"in", t_in},
    {"sameas", t_sameas},
    {"eq", t_eq},
    {"equalto", t_eq},
    {"==", t_eq},
    {"ne", t_ne},
    {"!=", t_ne},
    {"lt", t_lt},
    {"lessthan", t_lt},
    {"<", t_lt},
    {"le", t_le},
    {"<=", t_le},
    {"gt", t_gt},
    {"greaterthan", t_gt},
    {">", t_gt},
    {"ge", t_ge},
    {">=", t_ge},
    {"filter", nullptr},
}};

const TestEntry* find_test(std::string_view name) {
  for (const TestEntry& t : kTests) {
    if (t.name == name && t.fn != nullptr) return &t;
  }
  return nullptr;
}

}  // namespace

bool is_known_test(std::string_view name) { return find_test(name) != nullptr; }

Result<bool> apply_test(Interpreter& in, std::string_view name, const Value& subject, const CallArgs& args) {
  const TestEntry* t = find_test(name);
  if (t == nullptr) return make_error("unknown test '%.*s'", static_cast<int>(name.size()), name.data());
  return t->fn(in, subject, args);
}

}  // namespace sniper::jinja
