// SPDX-License-Identifier: MIT
// Jinja2 filters (jinja2/filters.py semantics, with HuggingFace's tojson) and argument binding.
// Each filter is one function in a constant name -> function table.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_eval.h"
#include "tokenizer/jinja_string.h"

namespace sniper::jinja {

namespace {

using FilterFn = Result<Value> (*)(Interpreter&, const Value&, const CallArgs&);

// jinja2 make_attrgetter: "a.b.0" looked up item-first, part by part.
Result<Value> get_attribute_path(Interpreter& in, const Value& item, const Value& attribute) {
  if (attribute.is_int()) return in.get_item(item, attribute);
  if (!attribute.is_string())
    return make_error("attribute must be a string or an integer, got %s", type_name(attribute).c_str());
  constexpr size_t kMaxPathParts = 256;
  const std::string& path = attribute.as_string();
  SNIPER_TRY(in.budget().bytes(path.size()));
  const std::string dot = ".";
  std::vector<std::string_view> parts;
  if (!py_split(path, &dot, -1, kMaxPathParts, &parts)) {
    return make_error("attribute path %s has more than %zu parts", brief(attribute).c_str(), kMaxPathParts);
  }
  Value cur = item;
  for (std::string_view part : parts) {
    SNIPER_TRY(in.budget().steps(1));
    const bool is_index = !part.empty() && part.size() <= 18 &&
                          std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    SNIPER_ASSIGN_OR_RETURN(cur, in.get_item(cur, is_index ? Value::integer(std::atoll(std::string(part).c_str()))
                                                           : Value::string(std::string(part))));
  }
  return cur;
}

// Sort keys: the items' (attribute) values, lower-cased once when not case-sensitive.
Result<std::vector<Value>> sort_keys(Interpreter& in, const List& items, bool case_sensitive, const Value& attribute,
                                     bool by_value) {
  std::vector<Value> keys;
  keys.reserve(items.size());
  for (const Value& item : items) {
    Value key = item;
    if (!attribute.is_none()) {
      SNIPER_ASSIGN_OR_RETURN(key, get_attribute_path(in, item, attribute));
    } else if (item.kind() == Kind::kTuple && item.as_list().size() == 2) {
      key = item.as_list()[by_value ? 1 : 0];  // dictsort's (key, value) pairs
    }
    if (!case_sensitive && key.is_string()) {
      SNIPER_ASSIGN_OR_RETURN(key, case_mapped(in, key, ascii_lower));
    }
    keys.push_back(std::move(key));
  }
  return keys;
}

// Stable order of `items` by `keys`, every comparison charged; an unorderable pair fails.
Result<List> sort_by_keys(Interpreter& in, const List& items, const std::vector<Value>& keys, const char* fn) {
  SNIPER_TRY(in.charge_items(items.size()));
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  Status err;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if (!err.ok()) return false;  // stop comparing once one failed: every pair equal from here
    auto c = in.cmp(keys[x], keys[y]);
    if (!c.ok()) {
      err = c.error();
      return false;
    }
    return c.value() < 0;
  });
  if (!err.ok()) {
    if (in.budget().failed()) return in.budget().error();
    return make_error("%s: %s", fn, err.error().message.c_str());
  }
  List out;
  out.reserve(items.size());
  for (size_t i : order) out.push_back(items[i]);
  return out;
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
  SNIPER_ASSIGN_OR_RETURN(std::string_view name, string_arg("attr", "name", p[0]));
  return in.get_attr(v, std::string(name));
}

Result<Value> f_capitalize(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("capitalize", a, {}));
  return case_mapped(in, v, py_capitalize);
}

Result<Value> f_center(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("center", a, {optional("width", Value::integer(80))}));
  SNIPER_ASSIGN_OR_RETURN(int64_t width, int_arg("center", "width", p[0]));
  SNIPER_ASSIGN_OR_RETURN(Value sv, in.str(v));
  const std::string& s = sv.as_string();
  SNIPER_TRY(in.budget().bytes(s.size()));
  const auto len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return sv;
  const auto pad = static_cast<uint64_t>(width - len);  // width > len >= 0: no wrap
  SNIPER_ASSIGN_OR_RETURN(uint64_t size, checked_add(s.size(), pad, "center"));
  const uint64_t left = pad / 2 + (pad & static_cast<uint64_t>(width) & 1);  // CPython's pad() split
  return build_string(in.budget(), size, [&] {
    std::string out;
    out.reserve(static_cast<size_t>(size));
    out.append(static_cast<size_t>(left), ' ');
    out += s;
    out.append(static_cast<size_t>(pad - left), ' ');
    return out;
  });
}

Result<Value> f_length(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("length", a, {}));
  switch (v.kind()) {
    case Kind::kUndefined: return Value::integer(0);
    case Kind::kString:
      SNIPER_TRY(in.budget().bytes(v.as_string().size()));
      return Value::integer(static_cast<int64_t>(utf8_length(v.as_string())));
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

Result<Value> f_dictsort(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p, bind_args("dictsort", a,
                        {optional("case_sensitive", Value::boolean(false)), optional("by", Value::string("key")),
                         optional("reverse", Value::boolean(false))}));
  if (!v.has_dict()) return make_error("dictsort: expected a dict, got %s", type_name(v).c_str());
  const bool by_value = p[1].is_string() && p[1].as_string() == "value";
  if (!by_value && !(p[1].is_string() && p[1].as_string() == "key")) {
    return make_error("dictsort: 'by' must be 'key' or 'value', got %s", brief(p[1]).c_str());
  }
  const Dict& d = v.as_dict();
  SNIPER_TRY(in.charge_items(d.items.size() * 3));  // the pairs and their tuples
  List items;
  items.reserve(d.items.size());
  for (const auto& [k, val] : d.items) {
    SNIPER_TRY(in.budget().bytes(k.size()));
    items.push_back(Value::tuple({Value::string(k), val}));
  }
  SNIPER_ASSIGN_OR_RETURN(std::vector<Value> keys, sort_keys(in, items, truthy(p[0]), Value::none(), by_value));
  SNIPER_ASSIGN_OR_RETURN(List sorted, sort_by_keys(in, items, keys, "dictsort"));
  if (truthy(p[2])) std::reverse(sorted.begin(), sorted.end());
  return Value::list(std::move(sorted));
}

Result<Value> f_escape(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("escape", a, {}));
  SNIPER_ASSIGN_OR_RETURN(Value sv, in.str(v));
  const std::string& s = sv.as_string();
  SNIPER_TRY(in.budget().bytes(s.size()));
  uint64_t size = 0;
  for (char c : s) {
    switch (c) {
      case '&': size += 5; break;
      case '<':
      case '>': size += 4; break;
      case '"':
      case '\'': size += 5; break;
      default: size += 1;
    }
  }
  return build_string(in.budget(), size, [&] {
    std::string out;
    out.reserve(static_cast<size_t>(size));
    for (char c : s) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
      }
    }
    return out;
  });
}

Result<Value> f_first(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("first", a, {}));
  if (v.is_sequence()) {
    if (v.as_list().empty()) return Value::undefined("No first item, sequence was empty.");
    return v.as_list().front();
  }
  SNIPER_ASSIGN_OR_RETURN(std::shared_ptr<const List> items_ref, in.iterate(v));
  const List& items = *items_ref;
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Result<Value> f_last(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("last", a, {}));
  if (v.is_sequence()) {
    if (v.as_list().empty()) return Value::undefined("No last item, sequence was empty.");
    return v.as_list().back();
  }
  SNIPER_ASSIGN_OR_RETURN(std::shared_ptr<const List> items_ref, in.iterate(v));
  const List& items = *items_ref;
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

// Python float(str): surrounding whitespace, underscores between digits, inf/nan.
bool parse_py_float(std::string_view text, double* out) {
  const std::string_view s = py_strip_view(text, nullptr, true, true);
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

Result<Value> f_float(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("float", a, {optional("default", Value::number(0.0))}));
  if (v.is_number()) return Value::number(v.as_double());
  double d = 0;
  if (v.is_string()) {
    SNIPER_TRY(in.budget().bytes(v.as_string().size() * 4));  // the copies parse_py_float makes
    if (parse_py_float(v.as_string(), &d)) return Value::number(d);
  }
  return p[0];
}

Result<Value> f_int(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p, bind_args("int", a, {optional("default", Value::integer(0)), optional("base", Value::integer(10))}));
  SNIPER_ASSIGN_OR_RETURN(int64_t base, int_arg("int", "base", p[1]));
  if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
  if (v.kind() == Kind::kFloat) {
    const double d = v.as_double();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18)
      return make_error("int: cannot convert float %s to integer", brief(v).c_str());
    return Value::integer(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    SNIPER_TRY(in.budget().bytes(v.as_string().size() * 6));  // the copies made below
    std::string s(py_strip_view(v.as_string(), nullptr, true, true));
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

Result<Value> f_format(Interpreter& in, const Value& v, const CallArgs& a) {
  // jinja2 do_format: value % args (or % kwargs, which needs %(name)s and is not supported).
  if (!a.kwargs.empty()) return make_error("format: keyword arguments are not supported");
  SNIPER_ASSIGN_OR_RETURN(Value fmt, in.str(v));
  SNIPER_TRY(in.charge_items(a.args.size()));
  return percent_format(in.budget(), fmt.as_string(), Value::tuple(a.args));
}

Result<Value> f_indent(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p,
                          bind_args("indent", a,
                                    {optional("width", Value::integer(4)), optional("first", Value::boolean(false)),
                                     optional("blank", Value::boolean(false))}));
  Budget& budget = in.budget();
  std::string indention;
  if (p[0].is_string()) {
    indention = p[0].as_string();
  } else {
    SNIPER_ASSIGN_OR_RETURN(int64_t width, int_arg("indent", "width", p[0]));
    const auto n = static_cast<uint64_t>(std::max<int64_t>(0, width));
    SNIPER_TRY(budget.string(n));
    indention.assign(static_cast<size_t>(n), ' ');
  }
  SNIPER_ASSIGN_OR_RETURN(Value sv, in.str(v));
  SNIPER_TRY(budget.string(sv.as_string().size() + 1));
  const std::string text = sv.as_string() + "\n";  // jinja2 do_indent: s += "\n" before splitlines
  SNIPER_ASSIGN_OR_RETURN(size_t max_lines, parts_allowed(in));
  size_t n_lines = 0;
  if (!py_splitlines(text, max_lines, nullptr, &n_lines)) return too_many_parts("indent");
  SNIPER_TRY(in.charge_items(n_lines));
  std::vector<std::string_view> lines;
  lines.reserve(n_lines);
  (void)py_splitlines(text, max_lines, &lines);
  // Every piece goes through the sink, which checks the string limit before it copies.
  StringSink rv(budget);
  if (truthy(p[1])) SNIPER_TRY(rv.append(indention));
  if (truthy(p[2])) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) {
        SNIPER_TRY(rv.append('\n'));
        SNIPER_TRY(rv.append(indention));
      }
      SNIPER_TRY(rv.append(lines[i]));
    }
  } else {
    if (!lines.empty()) SNIPER_TRY(rv.append(lines[0]));
    for (size_t i = 1; i < lines.size(); ++i) {
      SNIPER_TRY(rv.append('\n'));
      if (!lines[i].empty()) SNIPER_TRY(rv.append(indention));
      SNIPER_TRY(rv.append(lines[i]));
    }
  }
  return Value::string(rv.take());
}

Result<Value> f_items(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("items", a, {}));
  if (v.is_undefined()) return Value::list({});
  if (!v.has_dict()) return make_error("items: can only get item pairs from a mapping, not %s", type_name(v).c_str());
  return dict_items(in, v);
}

Result<Value> f_join(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p, bind_args("join", a, {optional("d", Value::string("")), optional("attribute", Value::none())}));
  SNIPER_ASSIGN_OR_RETURN(std::shared_ptr<const List> items_ref, in.iterate(v));
  const List& items = *items_ref;
  SNIPER_ASSIGN_OR_RETURN(Value sep, in.str(p[0]));
  StringSink out(in.budget());
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) SNIPER_TRY(out.append(sep.as_string()));
    if (!p[1].is_none()) {
      SNIPER_ASSIGN_OR_RETURN(Value x, get_attribute_path(in, items[i], p[1]));
      SNIPER_TRY(append_str(out, x));
    } else {
      SNIPER_TRY(append_str(out, items[i]));
    }
  }
  return Value::string(out.take());
}

Result<Value> f_list(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("list", a, {}));
  if (v.kind() == Kind::kList) return v;
  SNIPER_ASSIGN_OR_RETURN(std::shared_ptr<const List> items_ref, in.iterate(v));
  if (v.kind() == Kind::kTuple) SNIPER_TRY(in.charge_items(items_ref->size()));  // a copy
  return Value::list(*items_ref);
}

Result<Value> f_lower(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("lower", a, {}));
  return case_mapped(in, v, ascii_lower);
}

Result<Value> f_upper(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("upper", a, {}));
  return case_mapped(in, v, ascii_upper);
}

Result<Value> f_map(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(std::shared_ptr<const List> items_ref, in.iterate(v));
  const List& items = *items_ref;
  List out;
  out.reserve(items.size());
  if (a.args.empty()) {
    SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("map", a, {required("attribute"), optional("default", Value())}));
    for (const Value& item : items) {
      SNIPER_ASSIGN_OR_RETURN(Value x, get_attribute_path(in, item, p[0]));
      const bool has_default = !p[1].is_undefined() && !p[1].is_none();
      out.push_back(x.is_undefined() && has_default ? p[1] : x);
    }
    return Value::list(std::move(out));
  }
  SNIPER_ASSIGN_OR_RETURN(std::string_view name, string_arg("map", "filter", a.args[0]));
  if (!is_known_filter(name)) return make_error("map: unknown filter %s", brief(a.args[0]).c_str());
  CallArgs rest = a;
  rest.args.erase(rest.args.begin());
  for (const Value& item : items) {
    SNIPER_TRY(in.budget().steps(1));
    SNIPER_ASSIGN_OR_RETURN(Value x, apply_filter(in, name, item, rest));
    out.push_back(std::move(x));
  }
  return Value::list(std::move(out));
}

// select/reject/selectattr/rejectattr.
Result<Value> select_impl(Interpreter& in, const Value& v, const CallArgs& a, bool keep, bool by_attr, const char* fn) {
  SNIPER_ASSIGN_OR_RETURN(std::shared_ptr<const List> items_ref, in.iterate(v));
  const List& items = *items_ref;
  size_t off = 0;
  if (by_attr) {
    if (a.args.empty()) return make_error("%s: missing parameter for attribute name", fn);
    off = 1;
  }
  std::string test;
  CallArgs test_args;
  if (a.args.size() > off) {
    SNIPER_ASSIGN_OR_RETURN(std::string_view t, string_arg(fn, "test", a.args[off]));
    if (!is_known_test(t)) return make_error("%s: unknown test %s", fn, brief(a.args[off]).c_str());
    test = std::string(t);
    test_args.args.assign(a.args.begin() + static_cast<std::ptrdiff_t>(off) + 1, a.args.end());
    test_args.kwargs = a.kwargs;
  }
  List out;
  for (const Value& item : items) {
    SNIPER_TRY(in.budget().steps(1));
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

Result<Value> f_sort(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p, bind_args("sort", a,
                        {optional("reverse", Value::boolean(false)), optional("case_sensitive", Value::boolean(false)),
                         optional("attribute", Value::none())}));
  SNIPER_ASSIGN_OR_RETURN(std::shared_ptr<const List> items_ref, in.iterate(v));
  SNIPER_TRY(in.charge_items(items_ref->size()));
  List items = *items_ref;
  if (truthy(p[0])) std::reverse(items.begin(), items.end());  // keeps Python's stable reverse order
  SNIPER_ASSIGN_OR_RETURN(std::vector<Value> keys, sort_keys(in, items, truthy(p[1]), p[2], false));
  SNIPER_ASSIGN_OR_RETURN(List sorted, sort_by_keys(in, items, keys, "sort"));
  if (truthy(p[0])) std::reverse(sorted.begin(), sorted.end());
  return Value::list(std::move(sorted));
}

Result<Value> min_max(Interpreter& in, const Value& v, const CallArgs& a, bool want_max) {
  const char* fn = want_max ? "max" : "min";
  SNIPER_ASSIGN_OR_RETURN(
      auto p,
      bind_args(fn, a, {optional("case_sensitive", Value::boolean(false)), optional("attribute", Value::none())}));
  SNIPER_ASSIGN_OR_RETURN(std::shared_ptr<const List> items_ref, in.iterate(v));
  if (items_ref->empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
  SNIPER_TRY(in.charge_items(items_ref->size()));
  List items = *items_ref;
  if (want_max) std::reverse(items.begin(), items.end());  // the first maximal item wins
  SNIPER_ASSIGN_OR_RETURN(std::vector<Value> keys, sort_keys(in, items, truthy(p[0]), p[1], false));
  SNIPER_ASSIGN_OR_RETURN(List sorted, sort_by_keys(in, items, keys, fn));
  return want_max ? sorted.back() : sorted.front();
}

Result<Value> f_max(Interpreter& in, const Value& v, const CallArgs& a) { return min_max(in, v, a, true); }
Result<Value> f_min(Interpreter& in, const Value& v, const CallArgs& a) { return min_max(in, v, a, false); }

Result<Value> f_unique(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p, bind_args("unique", a,
                        {optional("case_sensitive", Value::boolean(false)), optional("attribute", Value::none())}));
  SNIPER_ASSIGN_OR_RETURN(std::shared_ptr<const List> items_ref, in.iterate(v));
  const List& items = *items_ref;
  SNIPER_ASSIGN_OR_RETURN(std::vector<Value> keys, sort_keys(in, items, truthy(p[0]), p[1], false));
  List out;
  std::vector<Value> seen;
  for (size_t i = 0; i < items.size(); ++i) {
    bool dup = false;
    for (const Value& s : seen) {
      SNIPER_ASSIGN_OR_RETURN(dup, in.eq(s, keys[i]));
      if (dup) break;
    }
    if (dup) continue;
    seen.push_back(keys[i]);
    out.push_back(items[i]);
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
  SNIPER_ASSIGN_OR_RETURN(Value s, in.str(v));
  SNIPER_ASSIGN_OR_RETURN(Value old_s, in.str(p[0]));
  SNIPER_ASSIGN_OR_RETURN(Value new_s, in.str(p[1]));
  return replace_in(in, s.as_string(), old_s.as_string(), new_s.as_string(), count);
}

Result<Value> f_reverse(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("reverse", a, {}));
  SNIPER_ASSIGN_OR_RETURN(std::shared_ptr<const List> items_ref, in.iterate(v));
  SNIPER_TRY(in.charge_items(items_ref->size()));
  List items = *items_ref;
  std::reverse(items.begin(), items.end());
  if (!v.is_string()) return Value::list(std::move(items));
  StringSink s(in.budget());
  for (const Value& c : items) SNIPER_TRY(s.append(c.as_string()));
  return Value::string(s.take());
}

Result<Value> f_round(Interpreter&, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p,
      bind_args("round", a, {optional("precision", Value::integer(0)), optional("method", Value::string("common"))}));
  SNIPER_ASSIGN_OR_RETURN(int64_t precision, int_arg("round", "precision", p[0]));
  SNIPER_ASSIGN_OR_RETURN(std::string_view method, string_arg("round", "method", p[1]));
  if (!v.is_number()) return make_error("round: expected a number, got %s", type_name(v).c_str());
  if (precision < -300 || precision > 300)
    return make_error("round: precision %lld is outside [-300, 300]", static_cast<long long>(precision));
  const double scale = std::pow(10.0, static_cast<double>(precision));
  if (method == "ceil") return Value::number(std::ceil(v.as_double() * scale) / scale);
  if (method == "floor") return Value::number(std::floor(v.as_double() * scale) / scale);
  if (method != "common")
    return make_error("round: method must be 'common', 'ceil' or 'floor', got %s", brief(p[1]).c_str());
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

Result<Value> f_string(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("string", a, {}));
  return in.str(v);
}

Result<Value> f_sum(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p, bind_args("sum", a, {optional("attribute", Value::none()), optional("start", Value::integer(0))}));
  SNIPER_ASSIGN_OR_RETURN(std::shared_ptr<const List> items_ref, in.iterate(v));
  const List& items = *items_ref;
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

std::string title_case(std::string_view s) {
  // jinja2 do_title: split on runs of [-\s({[<], capitalize each piece.
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  bool word_start = true;
  while (pos < s.size()) {
    size_t n = 1;
    const uint32_t cp = utf8_decode(s, pos, &n);
    const bool sep = is_py_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    std::string_view ch = s.substr(pos, n);
    if (!sep) out += word_start ? ascii_upper(ch) : ascii_lower(ch);
    else out += ch;
    word_start = sep;
    pos += n;
  }
  return out;
}

Result<Value> f_title(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("title", a, {}));
  return case_mapped(in, v, title_case);
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
      return make_error("tojson: separators must be a pair of strings, got %s", brief(p[2]).c_str());
    }
    o.item_separator = p[2].as_list()[0].as_string();
    o.key_separator = p[2].as_list()[1].as_string();
  }
  StringSink out(in.budget());
  SNIPER_TRY(to_json(out, v, o));
  return Value::string(out.take());
}

Result<Value> f_trim(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("trim", a, {optional("chars", Value::none())}));
  return strip_text(in, v, p[0], "trim", true, true);
}

Result<Value> f_wordcount(Interpreter& in, const Value& v, const CallArgs& a) {
  SNIPER_TRY(bind_args("wordcount", a, {}));
  // Counts runs of \w: letters, digits, underscore, and (approximately) any non-ASCII letter.
  SNIPER_ASSIGN_OR_RETURN(Value sv, in.str(v));
  const std::string& s = sv.as_string();
  SNIPER_TRY(in.budget().bytes(s.size()));
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
