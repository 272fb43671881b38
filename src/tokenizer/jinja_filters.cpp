// SPDX-License-Identifier: MIT
// Jinja2 filters (jinja2/filters.py semantics, with HuggingFace's tojson) and argument binding.
// Each filter is one function in a constant name -> function table.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_eval.h"
#include "tokenizer/jinja_string.h"

namespace sniper::jinja {

Result<std::vector<Value>> bind_args(std::string_view fn, const CallArgs& call, std::initializer_list<Param> params) {
  std::vector<Value> out;
  std::vector<bool> set(params.size(), false);
  if (call.args.size() > params.size()) {
    return make_error("%.*s takes at most %zu argument(s), %zu given", static_cast<int>(fn.size()), fn.data(),
                      params.size(), call.args.size());
  }
  for (const Param& p : params) out.push_back(p.def);
  for (size_t i = 0; i < call.args.size(); ++i) {
    out[i] = call.args[i];
    set[i] = true;
  }
  for (const auto& [k, v] : call.kwargs) {
    size_t i = 0;
    for (const Param& p : params) {
      if (p.name == k) break;
      ++i;
    }
    if (i == params.size()) {
      return make_error("%.*s got an unexpected keyword argument '%s'", static_cast<int>(fn.size()), fn.data(),
                        k.c_str());
    }
    if (set[i]) {
      return make_error("%.*s got multiple values for argument '%s'", static_cast<int>(fn.size()), fn.data(),
                        k.c_str());
    }
    out[i] = v;
    set[i] = true;
  }
  size_t i = 0;
  for (const Param& p : params) {
    if (p.required && !set[i]) {
      return make_error("%.*s is missing its required argument '%.*s'", static_cast<int>(fn.size()), fn.data(),
                        static_cast<int>(p.name.size()), p.name.data());
    }
    ++i;
  }
  return out;
}

Result<int64_t> int_arg(std::string_view fn, std::string_view param, const Value& v) {
  if (v.is_int() || v.is_bool()) return v.as_int();
  return make_error("%.*s: argument '%.*s' must be an integer, got %s '%s'", static_cast<int>(fn.size()), fn.data(),
                    static_cast<int>(param.size()), param.data(), type_name(v).c_str(), to_str(v).c_str());
}

Result<std::string> string_arg(std::string_view fn, std::string_view param, const Value& v) {
  if (v.is_string()) return v.as_string();
  return make_error("%.*s: argument '%.*s' must be a string, got %s", static_cast<int>(fn.size()), fn.data(),
                    static_cast<int>(param.size()), param.data(), type_name(v).c_str());
}

namespace {

using FilterFn = Result<Value> (*)(Interpreter&, const Value&, const CallArgs&);

Value str_value(std::string s) { return Value::string(std::move(s)); }

// For case-insensitive sorting/uniqueness: lower-cases strings, leaves other values alone.
Value ignore_case(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(ascii_lower(v.as_string()));
  return v;
}

// jinja2 make_attrgetter: "a.b.0" looked up item-first, part by part.
Result<Value> get_attribute_path(Interpreter& in, const Value& item, const Value& attribute) {
  if (attribute.is_int()) return in.get_item(item, attribute);
  if (!attribute.is_string())
    return make_error("attribute must be a string or an integer, got %s", type_name(attribute).c_str());
  Value cur = item;
  const std::string dot = ".";
  const std::vector<std::string> parts = py_split(attribute.as_string(), &dot, -1);
  for (const std::string& part : parts) {
    const bool is_index =
        !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    SNIPER_ASSIGN_OR_RETURN(
        cur, in.get_item(cur, is_index ? Value::integer(std::atoll(part.c_str())) : Value::string(part)));
  }
  return cur;
}

Result<Value> f_abs(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("abs", a, {}));
  if (v.kind() == Kind::kFloat) return Value::number(std::fabs(v.as_double()));
  if (v.is_int() || v.is_bool()) {
    if (v.as_int() == INT64_MIN) return make_error("abs: integer overflow");
    return Value::integer(std::llabs(v.as_int()));
  }
  return make_error("abs: bad operand type '%s'", type_name(v).c_str());
}

Result<Value> f_attr(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("attr", a, {required("name")}));
  SNIPER_ASSIGN_OR_RETURN(std::string name, string_arg("attr", "name", p[0]));
  return in.get_attr(v, name);
}

Result<Value> f_capitalize(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("capitalize", a, {}));
  return str_value(py_capitalize(to_str(v)));
}

Result<Value> f_center(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("center", a, {optional("width", Value::integer(80))}));
  SNIPER_ASSIGN_OR_RETURN(int64_t width, int_arg("center", "width", p[0]));
  const std::string s = to_str(v);
  const auto len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return str_value(s);
  SNIPER_TRY(in.check_size(static_cast<size_t>(width)));
  const int64_t pad = width - len;
  const int64_t left = pad / 2 + (pad & width & 1);  // CPython's pad() split
  return str_value(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(pad - left), ' '));
}

Result<Value> f_length(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("length", a, {}));
  switch (v.kind()) {
    case Kind::kUndefined: return Value::integer(0);
    case Kind::kString: return Value::integer(static_cast<int64_t>(utf8_length(v.as_string())));
    case Kind::kList:
    case Kind::kTuple: return Value::integer(static_cast<int64_t>(v.as_list().size()));
    case Kind::kDict: return Value::integer(static_cast<int64_t>(v.as_dict().items.size()));
    default: return make_error("length: object of type '%s' has no len()", type_name(v).c_str());
  }
}

Result<Value> f_default(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p, bind_args("default", a,
                        {optional("default_value", Value::string("")), optional("boolean", Value::boolean(false))}));
  if (v.is_undefined() || (truthy(p[1]) && !truthy(v))) return p[0];
  return v;
}

Result<Value> f_dictsort(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p, bind_args("dictsort", a,
                        {optional("case_sensitive", Value::boolean(false)), optional("by", Value::string("key")),
                         optional("reverse", Value::boolean(false))}));
  if (!v.has_dict()) return make_error("dictsort: expected a dict, got %s", type_name(v).c_str());
  const bool by_value = p[1].is_string() && p[1].as_string() == "value";
  if (!by_value && !(p[1].is_string() && p[1].as_string() == "key")) {
    return make_error("dictsort: 'by' must be 'key' or 'value', got '%s'", to_str(p[1]).c_str());
  }
  List items;
  for (const auto& [k, val] : v.as_dict().items) items.push_back(Value::tuple({Value::string(k), val}));
  Status err;
  const bool cs = truthy(p[0]);
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    auto c = compare(ignore_case(x.as_list()[by_value], cs), ignore_case(y.as_list()[by_value], cs));
    if (!c.ok()) err = c.error();
    return c.ok() && c.value() < 0;
  });
  if (!err.ok()) return make_error("dictsort: %s", err.error().message.c_str());
  if (truthy(p[2])) std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Result<Value> f_escape(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("escape", a, {}));
  std::string out;
  for (char c : to_str(v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return str_value(std::move(out));
}

Result<Value> f_first(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("first", a, {}));
  SNIPER_ASSIGN_OR_RETURN(List items, in.iterate(v));
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Result<Value> f_last(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("last", a, {}));
  SNIPER_ASSIGN_OR_RETURN(List items, in.iterate(v));
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

// Python float(str): surrounding whitespace, underscores between digits, inf/nan.
bool parse_py_float(const std::string& text, double* out) {
  const std::string s = py_strip(text, nullptr, true, true);
  if (s.empty()) return false;
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 == s.size() || !std::isdigit(static_cast<unsigned char>(s[i - 1])) ||
          !std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
        return false;
      }
      continue;
    }
    clean += s[i];
  }
  const std::string lower = ascii_lower(clean);
  const std::string body = (lower[0] == '+' || lower[0] == '-') ? lower.substr(1) : lower;
  if (body == "inf" || body == "infinity" || body == "nan") {
    *out = body == "nan" ? NAN : (lower[0] == '-' ? -INFINITY : INFINITY);
    return true;
  }
  if (body.find_first_not_of("0123456789.e+-") != std::string::npos) return false;
  char* end = nullptr;
  *out = std::strtod(clean.c_str(), &end);
  return end == clean.c_str() + clean.size();
}

Result<Value> f_float(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("float", a, {optional("default", Value::number(0.0))}));
  if (v.is_number()) return Value::number(v.as_double());
  double d = 0;
  if (v.is_string() && parse_py_float(v.as_string(), &d)) return Value::number(d);
  return p[0];
}

Result<Value> f_int(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p, bind_args("int", a, {optional("default", Value::integer(0)), optional("base", Value::integer(10))}));
  SNIPER_ASSIGN_OR_RETURN(int64_t base, int_arg("int", "base", p[1]));
  if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
  if (v.kind() == Kind::kFloat) {
    const double d = v.as_double();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18)
      return make_error("int: cannot convert float %s to integer", to_str(v).c_str());
    return Value::integer(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    std::string s = py_strip(v.as_string(), nullptr, true, true);
    s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
    if (!s.empty() && base >= 2 && base <= 36) {
      errno = 0;
      char* end = nullptr;
      const long long i = std::strtoll(s.c_str(), &end, static_cast<int>(base));
      if (errno == 0 && end == s.c_str() + s.size()) return Value::integer(i);
    }
    double d = 0;
    if (parse_py_float(v.as_string(), &d) && std::isfinite(d) && std::fabs(d) < 9.2e18) {
      return Value::integer(static_cast<int64_t>(d));
    }
  }
  return p[0];
}

Result<Value> f_format(Interpreter&, const Value& v, const CallArgs& a) {
  // jinja2 do_format: value % args (or % kwargs, which needs %(name)s and is not supported).
  if (!a.kwargs.empty()) return make_error("format: keyword arguments are not supported");
  return percent_format(to_str(v), Value::tuple(a.args));
}

Result<Value> f_indent(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p,
                          bind_args("indent", a,
                                    {optional("width", Value::integer(4)), optional("first", Value::boolean(false)),
                                     optional("blank", Value::boolean(false))}));
  std::string indention;
  if (p[0].is_string()) {
    indention = p[0].as_string();
  } else {
    SNIPER_ASSIGN_OR_RETURN(int64_t width, int_arg("indent", "width", p[0]));
    SNIPER_TRY(in.check_size(static_cast<size_t>(std::max<int64_t>(0, width))));
    indention.assign(static_cast<size_t>(std::max<int64_t>(0, width)), ' ');
  }
  const std::vector<std::string> lines = py_splitlines(to_str(v) + "\n");
  std::string rv;
  if (truthy(p[2])) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) rv += "\n" + indention;
      rv += lines[i];
    }
  } else {
    rv = lines.empty() ? std::string() : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += "\n";
      if (!lines[i].empty()) rv += indention;
      rv += lines[i];
    }
  }
  if (truthy(p[1])) rv = indention + rv;
  SNIPER_TRY(in.check_size(rv.size()));
  return str_value(std::move(rv));
}

Result<Value> f_items(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("items", a, {}));
  if (v.is_undefined()) return Value::list({});
  if (!v.has_dict()) return make_error("items: can only get item pairs from a mapping, not %s", type_name(v).c_str());
  SNIPER_TRY(in.charge(static_cast<int64_t>(v.as_dict().items.size())));
  List items;
  for (const auto& [k, val] : v.as_dict().items) items.push_back(Value::tuple({Value::string(k), val}));
  return Value::list(std::move(items));
}

Result<Value> f_join(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p, bind_args("join", a, {optional("d", Value::string("")), optional("attribute", Value::none())}));
  SNIPER_ASSIGN_OR_RETURN(List items, in.iterate(v));
  const std::string sep = to_str(p[0]);
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    if (!p[1].is_none()) {
      SNIPER_ASSIGN_OR_RETURN(Value x, get_attribute_path(in, items[i], p[1]));
      out += to_str(x);
    } else {
      out += to_str(items[i]);
    }
    SNIPER_TRY(in.check_size(out.size()));
  }
  return str_value(std::move(out));
}

Result<Value> f_list(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("list", a, {}));
  SNIPER_ASSIGN_OR_RETURN(List items, in.iterate(v));
  return Value::list(std::move(items));
}

Result<Value> f_lower(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("lower", a, {}));
  return str_value(ascii_lower(to_str(v)));
}

Result<Value> f_upper(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("upper", a, {}));
  return str_value(ascii_upper(to_str(v)));
}

Result<Value> f_map(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(List items, in.iterate(v));
  List out;
  if (a.args.empty()) {
    SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("map", a, {required("attribute"), optional("default", Value())}));
    for (const Value& item : items) {
      SNIPER_ASSIGN_OR_RETURN(Value x, get_attribute_path(in, item, p[0]));
      const bool has_default = !p[1].is_undefined() && !p[1].is_none();
      out.push_back(x.is_undefined() && has_default ? p[1] : x);
    }
    return Value::list(std::move(out));
  }
  SNIPER_ASSIGN_OR_RETURN(std::string name, string_arg("map", "filter", a.args[0]));
  if (!is_known_filter(name)) return make_error("map: unknown filter '%s'", name.c_str());
  CallArgs rest = a;
  rest.args.erase(rest.args.begin());
  for (const Value& item : items) {
    SNIPER_ASSIGN_OR_RETURN(Value x, apply_filter(in, name, item, rest));
    out.push_back(std::move(x));
  }
  return Value::list(std::move(out));
}

// select/reject/selectattr/rejectattr.
Result<Value> select_impl(Interpreter& in, const Value& v, const CallArgs& a, bool keep, bool by_attr, const char* fn) {
  SNIPER_ASSIGN_OR_RETURN(List items, in.iterate(v));
  size_t off = 0;
  if (by_attr) {
    if (a.args.empty()) return make_error("%s: missing parameter for attribute name", fn);
    off = 1;
  }
  std::string test;
  CallArgs test_args;
  if (a.args.size() > off) {
    SNIPER_ASSIGN_OR_RETURN(test, string_arg(fn, "test", a.args[off]));
    if (!is_known_test(test)) return make_error("%s: unknown test '%s'", fn, test.c_str());
    test_args.args.assign(a.args.begin() + static_cast<std::ptrdiff_t>(off) + 1, a.args.end());
    test_args.kwargs = a.kwargs;
  }
  List out;
  for (const Value& item : items) {
    Value probe = item;
    if (by_attr) {
      SNIPER_ASSIGN_OR_RETURN(probe, get_attribute_path(in, item, a.args[0]));
    }
    bool pass = false;
    if (test.empty()) {
      pass = truthy(probe);
    } else {
      SNIPER_ASSIGN_OR_RETURN(pass, apply_test(in, test, probe, test_args));
    }
    if (pass == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Result<Value> f_select(Interpreter& in, const Value& v, const CallArgs& a) {
  return select_impl(in, v, a, true, false, "select");
}
Result<Value> f_reject(Interpreter& in, const Value& v, const CallArgs& a) {
  return select_impl(in, v, a, false, false, "reject");
}
Result<Value> f_selectattr(Interpreter& in, const Value& v, const CallArgs& a) {
  return select_impl(in, v, a, true, true, "selectattr");
}
Result<Value> f_rejectattr(Interpreter& in, const Value& v, const CallArgs& a) {
  return select_impl(in, v, a, false, true, "rejectattr");
}

// Sorts items by (attribute of) value; shared by sort, unique, min and max.
Result<List> sorted_items(Interpreter& in, const List& items, bool case_sensitive, const Value& attribute,
                          const char* fn) {
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& item : items) {
    Value key = item;
    if (!attribute.is_none()) {
      SNIPER_ASSIGN_OR_RETURN(key, get_attribute_path(in, item, attribute));
    }
    keyed.emplace_back(ignore_case(key, case_sensitive), item);
  }
  Status err;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    auto c = compare(x.first, y.first);
    if (!c.ok()) err = c.error();
    return c.ok() && c.value() < 0;
  });
  if (!err.ok()) return make_error("%s: %s", fn, err.error().message.c_str());
  List out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return out;
}

Result<Value> f_sort(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p, bind_args("sort", a,
                        {optional("reverse", Value::boolean(false)), optional("case_sensitive", Value::boolean(false)),
                         optional("attribute", Value::none())}));
  SNIPER_ASSIGN_OR_RETURN(List items, in.iterate(v));
  if (truthy(p[0])) std::reverse(items.begin(), items.end());  // keeps Python's stable reverse order
  SNIPER_ASSIGN_OR_RETURN(List sorted, sorted_items(in, items, truthy(p[1]), p[2], "sort"));
  if (truthy(p[0])) std::reverse(sorted.begin(), sorted.end());
  return Value::list(std::move(sorted));
}

Result<Value> min_max(Interpreter& in, const Value& v, const CallArgs& a, bool want_max) {
  const char* fn = want_max ? "max" : "min";
  SNIPER_ASSIGN_OR_RETURN(
      auto p,
      bind_args(fn, a, {optional("case_sensitive", Value::boolean(false)), optional("attribute", Value::none())}));
  SNIPER_ASSIGN_OR_RETURN(List items, in.iterate(v));
  if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
  if (want_max) std::reverse(items.begin(), items.end());  // the first maximal item wins
  SNIPER_ASSIGN_OR_RETURN(List sorted, sorted_items(in, items, truthy(p[0]), p[1], fn));
  return want_max ? sorted.back() : sorted.front();
}

Result<Value> f_max(Interpreter& in, const Value& v, const CallArgs& a) { return min_max(in, v, a, true); }
Result<Value> f_min(Interpreter& in, const Value& v, const CallArgs& a) { return min_max(in, v, a, false); }

Result<Value> f_unique(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p, bind_args("unique", a,
                        {optional("case_sensitive", Value::boolean(false)), optional("attribute", Value::none())}));
  SNIPER_ASSIGN_OR_RETURN(List items, in.iterate(v));
  List out;
  List seen;
  for (const Value& item : items) {
    Value key = item;
    if (!p[1].is_none()) {
      SNIPER_ASSIGN_OR_RETURN(key, get_attribute_path(in, item, p[1]));
    }
    key = ignore_case(key, truthy(p[0]));
    bool dup = false;
    for (const Value& s : seen) dup = dup || equals(s, key);
    SNIPER_TRY(in.charge(static_cast<int64_t>(seen.size())));
    if (dup) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Result<Value> f_replace(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p, bind_args("replace", a, {required("old"), required("new"), optional("count", Value::none())}));
  int64_t count = -1;
  if (!p[2].is_none()) {
    SNIPER_ASSIGN_OR_RETURN(count, int_arg("replace", "count", p[2]));
  }
  std::string out = py_replace(to_str(v), to_str(p[0]), to_str(p[1]), count);
  SNIPER_TRY(in.check_size(out.size()));
  return str_value(std::move(out));
}

Result<Value> f_reverse(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("reverse", a, {}));
  SNIPER_ASSIGN_OR_RETURN(List items, in.iterate(v));
  std::reverse(items.begin(), items.end());
  if (!v.is_string()) return Value::list(std::move(items));
  std::string s;
  for (const Value& c : items) s += c.as_string();
  return str_value(std::move(s));
}

Result<Value> f_round(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p,
      bind_args("round", a, {optional("precision", Value::integer(0)), optional("method", Value::string("common"))}));
  SNIPER_ASSIGN_OR_RETURN(int64_t precision, int_arg("round", "precision", p[0]));
  SNIPER_ASSIGN_OR_RETURN(std::string method, string_arg("round", "method", p[1]));
  if (!v.is_number()) return make_error("round: expected a number, got %s", type_name(v).c_str());
  if (precision < -300 || precision > 300)
    return make_error("round: precision %lld is outside [-300, 300]", static_cast<long long>(precision));
  const double scale = std::pow(10.0, static_cast<double>(precision));
  if (method == "ceil") return Value::number(std::ceil(v.as_double() * scale) / scale);
  if (method == "floor") return Value::number(std::floor(v.as_double() * scale) / scale);
  if (method != "common")
    return make_error("round: method must be 'common', 'ceil' or 'floor', got '%s'", method.c_str());
  if (v.kind() != Kind::kFloat && precision >= 0) return Value::integer(v.as_int());
  if (precision >= 0) {
    // printf rounds the exact binary value half-to-even, as CPython's round() does.
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(precision), v.as_double());
    return Value::number(std::strtod(buf, nullptr));
  }
  const double r = std::nearbyint(v.as_double() * scale) / scale;
  if (v.kind() != Kind::kFloat) return Value::integer(static_cast<int64_t>(r));
  return Value::number(r);
}

Result<Value> f_safe(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("safe", a, {}));
  return v;
}

Result<Value> f_string(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("string", a, {}));
  return str_value(to_str(v));
}

Result<Value> f_sum(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p, bind_args("sum", a, {optional("attribute", Value::none()), optional("start", Value::integer(0))}));
  SNIPER_ASSIGN_OR_RETURN(List items, in.iterate(v));
  Value total = p[1];
  for (const Value& item : items) {
    Value x = item;
    if (!p[0].is_none()) {
      SNIPER_ASSIGN_OR_RETURN(x, get_attribute_path(in, item, p[0]));
    }
    if (!x.is_number() || !total.is_number())
      return make_error("sum: cannot add %s and %s", type_name(total).c_str(), type_name(x).c_str());
    if (x.kind() == Kind::kFloat || total.kind() == Kind::kFloat) {
      total = Value::number(total.as_double() + x.as_double());
    } else {
      int64_t r = 0;
      if (__builtin_add_overflow(total.as_int(), x.as_int(), &r)) return make_error("sum: integer overflow");
      total = Value::integer(r);
    }
  }
  return total;
}

Result<Value> f_title(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("title", a, {}));
  // jinja2 do_title: split on runs of [-\s({[<], capitalize each piece.
  const std::string s = to_str(v);
  std::string out;
  size_t pos = 0;
  bool word_start = true;
  while (pos < s.size()) {
    size_t n = 1;
    const uint32_t cp = utf8_decode(s, pos, &n);
    const bool sep = is_py_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    std::string ch = s.substr(pos, n);
    if (!sep) ch = word_start ? ascii_upper(ch) : ascii_lower(ch);
    out += ch;
    word_start = sep;
    pos += n;
  }
  return str_value(std::move(out));
}

Result<Value> f_tojson(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p, bind_args("tojson", a,
                        {optional("ensure_ascii", Value::boolean(false)), optional("indent", Value::none()),
                         optional("separators", Value::none()), optional("sort_keys", Value::boolean(false))}));
  JsonOptions o;
  o.ensure_ascii = truthy(p[0]);
  o.sort_keys = truthy(p[3]);
  if (!p[1].is_none()) {
    o.has_indent = true;
    if (p[1].is_string()) {
      o.indent = p[1].as_string();
    } else {
      SNIPER_ASSIGN_OR_RETURN(int64_t width, int_arg("tojson", "indent", p[1]));
      if (width > 1024) return make_error("tojson: indent %lld is larger than 1024", static_cast<long long>(width));
      o.indent.assign(static_cast<size_t>(std::max<int64_t>(0, width)), ' ');
    }
    o.item_separator = ",";
  }
  if (!p[2].is_none()) {
    if (!p[2].is_sequence() || p[2].as_list().size() != 2 || !p[2].as_list()[0].is_string() ||
        !p[2].as_list()[1].is_string()) {
      return make_error("tojson: separators must be a pair of strings, got %s", repr(p[2]).c_str());
    }
    o.item_separator = p[2].as_list()[0].as_string();
    o.key_separator = p[2].as_list()[1].as_string();
  }
  std::string out;
  SNIPER_TRY(to_json(out, v, o));
  SNIPER_TRY(in.check_size(out.size()));
  return str_value(std::move(out));
}

Result<Value> f_trim(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("trim", a, {optional("chars", Value::none())}));
  if (p[0].is_none()) return str_value(py_strip(to_str(v), nullptr, true, true));
  SNIPER_ASSIGN_OR_RETURN(std::string chars, string_arg("trim", "chars", p[0]));
  return str_value(py_strip(to_str(v), &chars, true, true));
}

Result<Value> f_wordcount(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("wordcount", a, {}));
  // Counts runs of \w: letters, digits, underscore, and (approximately) any non-ASCII letter.
  const std::string s = to_str(v);
  int64_t count = 0;
  bool in_word = false;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t n = 1;
    const uint32_t cp = utf8_decode(s, pos, &n);
    const bool word =
        (cp < 0x80 && (std::isalnum(static_cast<int>(cp)) || cp == '_')) || (cp >= 0x80 && !is_py_space(cp));
    if (word && !in_word) ++count;
    in_word = word;
    pos += n;
  }
  return Value::integer(count);
}

struct FilterEntry {
  std::string_view name;
  FilterFn fn;
};

constexpr std::array<FilterEntry, 42> kFilters = {{
    {"abs", f_abs},
    {"attr", f_attr},
    {"capitalize", f_capitalize},
    {"center", f_center},
    {"count", f_length},
    {"d", f_default},
    {"default", f_default},
    {"dictsort", f_dictsort},
    {"e", f_escape},
    {"escape", f_escape},
    {"first", f_first},
    {"float", f_float},
    {"format", f_format},
    {"indent", f_indent},
    {"int", f_int},
    {"items", f_items},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"lower", f_lower},
    {"map", f_map},
    {"max", f_max},
    {"min", f_min},
    {"reject", f_reject},
    {"rejectattr", f_rejectattr},
    {"replace", f_replace},
    {"reverse", f_reverse},
    {"round", f_round},
    {"safe", f_safe},
    {"select", f_select},
    {"selectattr", f_selectattr},
    {"sort", f_sort},
    {"string", f_string},
    {"sum", f_sum},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"unique", f_unique},
    {"upper", f_upper},
    {"wordcount", f_wordcount},
    {"forceescape", f_escape},
}};

const FilterEntry* find_filter(std::string_view name) {
  for (const FilterEntry& f : kFilters) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace

bool is_known_filter(std::string_view name) { return find_filter(name) != nullptr; }

Result<Value> apply_filter(Interpreter& in, std::string_view name, const Value& subject, const CallArgs& args) {
  const FilterEntry* f = find_filter(name);
  if (f == nullptr) return make_error("unknown filter '%.*s'", static_cast<int>(name.size()), name.data());
  return f->fn(in, subject, args);
}

}  // namespace sniper::jinja
