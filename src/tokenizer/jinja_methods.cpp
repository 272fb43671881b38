// SPDX-License-Identifier: MIT
// Methods of str, dict and list values as the sandbox exposes them (bound to their object when
// looked up), %-formatting, and the global functions HuggingFace chat templates may call.
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>

#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_eval.h"
#include "tokenizer/jinja_string.h"

namespace sniper::jinja {

// Python %-formatting for `str % args`: %s %r %d %i %f %% (with optional precision for %f).
Result<Value> percent_format(Budget& budget, const std::string& fmt, const Value& args) {
  SNIPER_TRY(budget.bytes(fmt.size()));
  const List single = args.kind() == Kind::kTuple ? List() : List{args};
  const List& items = args.kind() == Kind::kTuple ? args.as_list() : single;
  const Value fmt_value = Value::string(fmt.size() <= 120 ? fmt : fmt.substr(0, 120));
  StringSink out(budget);
  size_t next = 0;
  size_t run = 0;  // start of the literal text not yet copied
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') continue;
    SNIPER_TRY(out.append(std::string_view(fmt).substr(run, i - run)));
    if (i + 1 < fmt.size() && fmt[i + 1] == '%') {
      SNIPER_TRY(out.append('%'));
      ++i;
      run = i + 1;
      continue;
    }
    size_t j = i + 1;
    int precision = -1;
    if (j < fmt.size() && fmt[j] == '.') {
      precision = 0;
      for (++j; j < fmt.size() && fmt[j] >= '0' && fmt[j] <= '9'; ++j) {
        precision = precision * 10 + (fmt[j] - '0');
        if (precision > 100) return make_error("format precision is larger than 100 in %s", brief(fmt_value).c_str());
      }
    }
    if (j >= fmt.size()) return make_error("incomplete format in %s", brief(fmt_value).c_str());
    if (next >= items.size()) return make_error("not enough arguments for format string %s", brief(fmt_value).c_str());
    const Value& v = items[next++];
    const char conv = fmt[j];
    if (conv == 's') {
      SNIPER_TRY(append_str(out, v));
    } else if (conv == 'r') {
      SNIPER_TRY(append_repr(out, v));
    } else if ((conv == 'd' || conv == 'i' || conv == 'f') && v.is_number()) {
      if (conv == 'f') {
        char buf[512];
        std::snprintf(buf, sizeof(buf), "%.*f", precision < 0 ? 6 : precision, v.as_double());
        SNIPER_TRY(out.append(buf));
      } else {
        const double d = v.as_double();
        if (v.kind() == Kind::kFloat && !(std::fabs(d) < 9.2e18)) {
          return make_error("format: %%%c of %s is out of the integer range", conv, brief(v).c_str());
        }
        SNIPER_TRY(out.append(std::to_string(v.kind() == Kind::kFloat ? static_cast<int64_t>(d) : v.as_int())));
      }
    } else {
      return make_error("unsupported format '%%%c' for a %s in %s", conv, type_name(v).c_str(),
                        brief(fmt_value).c_str());
    }
    i = j;
    run = j + 1;
  }
  if (run < fmt.size()) SNIPER_TRY(out.append(std::string_view(fmt).substr(run)));
  if (next < items.size()) return make_error("not all arguments converted during string formatting");
  return Value::string(out.take());
}

namespace {

using MethodFn = Result<Value> (*)(Interpreter&, const Value& self, const CallArgs&);

// Optional "chars" argument of strip/lstrip/rstrip.
Result<Value> strip_impl(Interpreter& in, const Value& self, const CallArgs& a, bool left, bool right, const char* fn) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args(fn, a, {optional("chars", Value::none())}));
  return strip_text(in, self, p[0], fn, left, right);
}

Result<Value> m_strip(Interpreter& in, const Value& s, const CallArgs& a) {
  return strip_impl(in, s, a, true, true, "str.strip");
}
Result<Value> m_lstrip(Interpreter& in, const Value& s, const CallArgs& a) {
  return strip_impl(in, s, a, true, false, "str.lstrip");
}
Result<Value> m_rstrip(Interpreter& in, const Value& s, const CallArgs& a) {
  return strip_impl(in, s, a, false, true, "str.rstrip");
}

Result<Value> affix_impl(Interpreter& in, const Value& self, const CallArgs& a, bool prefix) {
  const char* fn = prefix ? "str.startswith" : "str.endswith";
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args(fn, a, {required("affix")}));
  const List single = p[0].kind() == Kind::kTuple ? List() : List{p[0]};
  const List& options = p[0].kind() == Kind::kTuple ? p[0].as_list() : single;
  const std::string& s = self.as_string();
  for (const Value& o : options) {
    SNIPER_ASSIGN_OR_RETURN(std::string_view x, string_arg(fn, "affix", o));
    SNIPER_TRY(in.budget().bytes(x.size()));
    if (x.size() <= s.size() &&
        (prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0)) {
      return Value::boolean(true);
    }
  }
  return Value::boolean(false);
}

Result<Value> m_startswith(Interpreter& in, const Value& s, const CallArgs& a) { return affix_impl(in, s, a, true); }
Result<Value> m_endswith(Interpreter& in, const Value& s, const CallArgs& a) { return affix_impl(in, s, a, false); }

Result<Value> split_impl(Interpreter& in, const Value& self, const CallArgs& a, bool reverse) {
  const char* fn = reverse ? "str.rsplit" : "str.split";
  SNIPER_ASSIGN_OR_RETURN(auto p,
                          bind_args(fn, a, {optional("sep", Value::none()), optional("maxsplit", Value::integer(-1))}));
  SNIPER_ASSIGN_OR_RETURN(int64_t maxsplit, int_arg(fn, "maxsplit", p[1]));
  std::string sep;
  if (!p[0].is_none()) {
    SNIPER_ASSIGN_OR_RETURN(std::string_view s, string_arg(fn, "sep", p[0]));
    if (s.empty()) return make_error("%s: empty separator", fn);
    sep = std::string(s);
  }
  const std::string& text = self.as_string();
  // The scan, and for rsplit the reversed copies of the text and the separator.
  SNIPER_TRY(in.budget().bytes((text.size() + sep.size()) * (reverse ? 3 : 1)));
  SNIPER_ASSIGN_OR_RETURN(size_t max_parts, parts_allowed(in));
  const std::string* sep_ptr = p[0].is_none() ? nullptr : &sep;
  // Counted first, charged, then collected: nothing is built past the limits.
  auto split = [&](std::vector<std::string_view>* parts, size_t* n) {
    return reverse ? py_rsplit(text, sep_ptr, maxsplit, max_parts, parts, n)
                   : py_split(text, sep_ptr, maxsplit, max_parts, parts, n);
  };
  size_t n = 0;
  if (!split(nullptr, &n)) return too_many_parts(fn);
  SNIPER_TRY(in.budget().bytes(n * sizeof(std::string_view)));
  std::vector<std::string_view> parts;
  parts.reserve(n);
  (void)split(&parts, nullptr);
  return parts_to_list(in, parts);
}

Result<Value> m_split(Interpreter& in, const Value& s, const CallArgs& a) { return split_impl(in, s, a, false); }
Result<Value> m_rsplit(Interpreter& in, const Value& s, const CallArgs& a) { return split_impl(in, s, a, true); }

Result<Value> m_splitlines(Interpreter& in, const Value& s, const CallArgs& a) {
  SNIPER_TRY(bind_args("str.splitlines", a, {}));
  SNIPER_TRY(in.budget().bytes(s.as_string().size()));
  SNIPER_ASSIGN_OR_RETURN(size_t max_parts, parts_allowed(in));
  size_t n = 0;
  if (!py_splitlines(s.as_string(), max_parts, nullptr, &n)) return too_many_parts("str.splitlines");
  SNIPER_TRY(in.budget().bytes(n * sizeof(std::string_view)));
  std::vector<std::string_view> lines;
  lines.reserve(n);
  (void)py_splitlines(s.as_string(), max_parts, &lines);
  return parts_to_list(in, lines);
}

Result<Value> m_replace(Interpreter& in, const Value& s, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p, bind_args("str.replace", a, {required("old"), required("new"), optional("count", Value::integer(-1))}));
  SNIPER_ASSIGN_OR_RETURN(std::string_view old_s, string_arg("str.replace", "old", p[0]));
  SNIPER_ASSIGN_OR_RETURN(std::string_view new_s, string_arg("str.replace", "new", p[1]));
  SNIPER_ASSIGN_OR_RETURN(int64_t count, int_arg("str.replace", "count", p[2]));
  return replace_in(in, s.as_string(), old_s, new_s, count);
}

Result<Value> m_upper(Interpreter& in, const Value& s, const CallArgs& a) {
  SNIPER_TRY(bind_args("str.upper", a, {}));
  return case_mapped(in, s, ascii_upper);
}
Result<Value> m_lower(Interpreter& in, const Value& s, const CallArgs& a) {
  SNIPER_TRY(bind_args("str.lower", a, {}));
  return case_mapped(in, s, ascii_lower);
}
Result<Value> m_title(Interpreter& in, const Value& s, const CallArgs& a) {
  SNIPER_TRY(bind_args("str.title", a, {}));
  return case_mapped(in, s, py_title);
}
Result<Value> m_capitalize(Interpreter& in, const Value& s, const CallArgs& a) {
  SNIPER_TRY(bind_args("str.capitalize", a, {}));
  return case_mapped(in, s, py_capitalize);
}

Result<Value> find_impl(Interpreter& in, const Value& s, const CallArgs& a, const char* fn, int mode) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args(fn, a, {required("sub")}));
  SNIPER_ASSIGN_OR_RETURN(std::string_view sub, string_arg(fn, "sub", p[0]));
  // The scans, and for rfind the reversed copies of both.
  SNIPER_TRY(in.budget().bytes((s.as_string().size() + sub.size()) * 3));
  if (mode == 2) return Value::integer(py_count(s.as_string(), sub));
  return Value::integer(py_find(s.as_string(), sub, mode == 1));
}
Result<Value> m_find(Interpreter& in, const Value& s, const CallArgs& a) { return find_impl(in, s, a, "str.find", 0); }
Result<Value> m_rfind(Interpreter& in, const Value& s, const CallArgs& a) {
  return find_impl(in, s, a, "str.rfind", 1);
}
Result<Value> m_count(Interpreter& in, const Value& s, const CallArgs& a) {
  return find_impl(in, s, a, "str.count", 2);
}

Result<Value> m_join(Interpreter& in, const Value& s, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("str.join", a, {required("iterable")}));
  SNIPER_ASSIGN_OR_RETURN(std::shared_ptr<const List> items_ref, in.iterate(p[0]));
  const List& items = *items_ref;
  StringSink out(in.budget());
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string()) {
      return make_error("str.join: sequence item %zu: expected str instance, %s found", i, type_name(items[i]).c_str());
    }
    if (i > 0) SNIPER_TRY(out.append(s.as_string()));
    SNIPER_TRY(out.append(items[i].as_string()));
  }
  return Value::string(out.take());
}

// isdigit/isalpha/isalnum/isspace/isupper/islower over ASCII classes.
Result<Value> class_impl(Interpreter& in, const Value& s, const CallArgs& a, const char* fn, int (*pred)(int)) {
  SNIPER_TRY(bind_args(fn, a, {}));
  const std::string& str = s.as_string();
  SNIPER_TRY(in.budget().bytes(str.size()));
  if (str.empty()) return Value::boolean(false);
  for (char c : str) {
    if (!pred(static_cast<unsigned char>(c))) return Value::boolean(false);
  }
  return Value::boolean(true);
}
Result<Value> m_isdigit(Interpreter& in, const Value& s, const CallArgs& a) {
  return class_impl(in, s, a, "str.isdigit", [](int c) { return c >= '0' && c <= '9' ? 1 : 0; });
}
Result<Value> m_isalpha(Interpreter& in, const Value& s, const CallArgs& a) {
  return class_impl(in, s, a, "str.isalpha", [](int c) { return std::isalpha(c); });
}
Result<Value> m_isalnum(Interpreter& in, const Value& s, const CallArgs& a) {
  return class_impl(in, s, a, "str.isalnum", [](int c) { return std::isalnum(c); });
}

Result<Value> m_isspace(Interpreter& in, const Value& s, const CallArgs& a) {
  SNIPER_TRY(bind_args("str.isspace", a, {}));
  const std::string& str = s.as_string();
  SNIPER_TRY(in.budget().bytes(str.size()));
  return Value::boolean(!str.empty() && py_strip_view(str, nullptr, true, false).empty());
}

Result<Value> case_test(Interpreter& in, const Value& s, const CallArgs& a, const char* fn, bool upper) {
  SNIPER_TRY(bind_args(fn, a, {}));
  SNIPER_TRY(in.budget().bytes(s.as_string().size()));
  bool cased = false;
  for (char c : s.as_string()) {
    if ((upper && c >= 'a' && c <= 'z') || (!upper && c >= 'A' && c <= 'Z')) return Value::boolean(false);
    cased = cased || std::isalpha(static_cast<unsigned char>(c));
  }
  return Value::boolean(cased);
}
Result<Value> m_isupper(Interpreter& in, const Value& s, const CallArgs& a) {
  return case_test(in, s, a, "str.isupper", true);
}
Result<Value> m_islower(Interpreter& in, const Value& s, const CallArgs& a) {
  return case_test(in, s, a, "str.islower", false);
}

Result<Value> affix_remove(Interpreter& in, const Value& s, const CallArgs& a, bool prefix) {
  const char* fn = prefix ? "str.removeprefix" : "str.removesuffix";
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args(fn, a, {required("affix")}));
  SNIPER_ASSIGN_OR_RETURN(std::string_view x, string_arg(fn, "affix", p[0]));
  const std::string& str = s.as_string();
  SNIPER_TRY(in.budget().bytes(x.size()));
  if (!x.empty() && x.size() <= str.size()) {
    const size_t keep = str.size() - x.size();
    if (prefix && str.compare(0, x.size(), x) == 0) {
      return build_string(in.budget(), keep, [&] { return str.substr(x.size()); });
    }
    if (!prefix && str.compare(keep, x.size(), x) == 0) {
      return build_string(in.budget(), keep, [&] { return str.substr(0, keep); });
    }
  }
  return s;
}
Result<Value> m_removeprefix(Interpreter& in, const Value& s, const CallArgs& a) {
  return affix_remove(in, s, a, true);
}
Result<Value> m_removesuffix(Interpreter& in, const Value& s, const CallArgs& a) {
  return affix_remove(in, s, a, false);
}

// str.format with {} / {0} / {name} fields and {{ }} escapes; format specs are not supported.
Result<Value> m_format(Interpreter& in, const Value& s, const CallArgs& a) {
  const std::string& fmt = s.as_string();
  SNIPER_TRY(in.budget().bytes(fmt.size()));
  StringSink out(in.budget());
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if ((c == '{' || c == '}') && i + 1 < fmt.size() && fmt[i + 1] == c) {
      SNIPER_TRY(out.append(c));
      ++i;
      continue;
    }
    if (c == '}') return make_error("str.format: single '}' encountered in format string");
    if (c != '{') {
      SNIPER_TRY(out.append(c));
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) return make_error("str.format: single '{' encountered in format string");
    const std::string field = fmt.substr(i + 1, close - i - 1);
    const Value shown = Value::string(field.substr(0, 60));
    if (field.find_first_of(":!.[") != std::string::npos) {
      return make_error("str.format: field %s uses a conversion or spec, which is not supported", brief(shown).c_str());
    }
    const Value* v = nullptr;
    if (field.empty() || std::isdigit(static_cast<unsigned char>(field[0]))) {
      const size_t idx =
          field.empty() ? auto_index++ : (field.size() > 9 ? SIZE_MAX : static_cast<size_t>(std::atoll(field.c_str())));
      if (idx >= a.args.size())
        return make_error("str.format: replacement index %s out of range", brief(shown).c_str());
      v = &a.args[idx];
    } else {
      for (const auto& [k, val] : a.kwargs) {
        if (k == field) v = &val;
      }
      if (v == nullptr) return make_error("str.format: no keyword argument %s", brief(shown).c_str());
    }
    SNIPER_TRY(append_str(out, *v));
    i = close;
  }
  return Value::string(out.take());
}

Result<Value> m_items(Interpreter& in, const Value& d, const CallArgs& a) {
  SNIPER_TRY(bind_args("dict.items", a, {}));
  return dict_items(in, d);
}
Result<Value> m_keys(Interpreter& in, const Value& d, const CallArgs& a) {
  SNIPER_TRY(bind_args("dict.keys", a, {}));
  SNIPER_TRY(in.charge_items(d.as_dict().items.size()));
  List out;
  for (const auto& kv : d.as_dict().items) {
    SNIPER_TRY(in.budget().bytes(kv.first.size()));
    out.push_back(Value::string(kv.first));
  }
  return Value::list(std::move(out));
}
Result<Value> m_values(Interpreter& in, const Value& d, const CallArgs& a) {
  SNIPER_TRY(bind_args("dict.values", a, {}));
  SNIPER_TRY(in.charge_items(d.as_dict().items.size()));
  List out;
  for (const auto& kv : d.as_dict().items) out.push_back(kv.second);
  return Value::list(std::move(out));
}
Result<Value> m_get(Interpreter&, const Value& d, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("dict.get", a, {required("key"), optional("default", Value::none())}));
  if (p[0].is_string()) {
    if (const Value* v = d.as_dict().find(p[0].as_string())) return *v;
  }
  return p[1];
}

Result<Value> m_list_index(Interpreter& in, const Value& l, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("list.index", a, {required("value")}));
  const List& items = l.as_list();
  for (size_t i = 0; i < items.size(); ++i) {
    SNIPER_ASSIGN_OR_RETURN(bool eq, in.eq(items[i], p[0]));
    if (eq) return Value::integer(static_cast<int64_t>(i));
  }
  return make_error("list.index: %s is not in list", brief(p[0]).c_str());
}
Result<Value> m_list_count(Interpreter& in, const Value& l, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("list.count", a, {required("value")}));
  int64_t n = 0;
  for (const Value& v : l.as_list()) {
    SNIPER_ASSIGN_OR_RETURN(bool eq, in.eq(v, p[0]));
    n += eq ? 1 : 0;
  }
  return Value::integer(n);
}

struct MethodEntry {
  Kind kind;  // kString, kDict or kList (kList also serves tuples)
  std::string_view name;
  MethodFn fn;  // nullptr: exists but is unsafe (mutating) in the immutable sandbox
};

constexpr MethodEntry kMethods[] = {
    {Kind::kString, "strip", m_strip},
    {Kind::kString, "lstrip", m_lstrip},
    {Kind::kString, "rstrip", m_rstrip},
    {Kind::kString, "startswith", m_startswith},
    {Kind::kString, "endswith", m_endswith},
    {Kind::kString, "split", m_split},
    {Kind::kString, "rsplit", m_rsplit},
    {Kind::kString, "splitlines", m_splitlines},
    {Kind::kString, "replace", m_replace},
    {Kind::kString, "upper", m_upper},
    {Kind::kString, "lower", m_lower},
    {Kind::kString, "title", m_title},
    {Kind::kString, "capitalize", m_capitalize},
    {Kind::kString, "find", m_find},
    {Kind::kString, "rfind", m_rfind},
    {Kind::kString, "count", m_count},
    {Kind::kString, "join", m_join},
    {Kind::kString, "isdigit", m_isdigit},
    {Kind::kString, "isalpha", m_isalpha},
    {Kind::kString, "isalnum", m_isalnum},
    {Kind::kString, "isspace", m_isspace},
    {Kind::kString, "isupper", m_isupper},
    {Kind::kString, "islower", m_islower},
    {Kind::kString, "removeprefix", m_removeprefix},
    {Kind::kString, "removesuffix", m_removesuffix},
    {Kind::kString, "format", m_format},
    {Kind::kDict, "items", m_items},
    {Kind::kDict, "keys", m_keys},
    {Kind::kDict, "values", m_values},
    {Kind::kDict, "get", m_get},
    {Kind::kDict, "pop", nullptr},
    {Kind::kDict, "popitem", nullptr},
    {Kind::kDict, "setdefault", nullptr},
    {Kind::kDict, "update", nullptr},
    {Kind::kDict, "clear", nullptr},
    {Kind::kList, "index", m_list_index},
    {Kind::kList, "count", m_list_count},
    {Kind::kList, "append", nullptr},
    {Kind::kList, "extend", nullptr},
    {Kind::kList, "insert", nullptr},
    {Kind::kList, "pop", nullptr},
    {Kind::kList, "remove", nullptr},
    {Kind::kList, "clear", nullptr},
    {Kind::kList, "sort", nullptr},
    {Kind::kList, "reverse", nullptr},
};

// ---- globals ----

// Number of items of range(start, stop, step) (step != 0), without overflow: the span of two
// int64 values fits in a uint64.
uint64_t range_length(int64_t start, int64_t stop, int64_t step) {
  if (step > 0) {
    if (stop <= start) return 0;
    const uint64_t span = static_cast<uint64_t>(stop) - static_cast<uint64_t>(start);
    return (span - 1) / static_cast<uint64_t>(step) + 1;
  }
  if (start <= stop) return 0;
  const uint64_t span = static_cast<uint64_t>(start) - static_cast<uint64_t>(stop);
  const uint64_t step_abs = static_cast<uint64_t>(-(step + 1)) + 1;
  return (span - 1) / step_abs + 1;
}

Result<Value> g_range(Interpreter& in, const CallArgs& a) {
  if (!a.kwargs.empty() || a.args.empty() || a.args.size() > 3) {
    return make_error("range expects 1 to 3 positional integer arguments, got %zu", a.args.size());
  }
  int64_t v[3] = {0, 0, 1};
  for (size_t i = 0; i < a.args.size(); ++i) {
    SNIPER_ASSIGN_OR_RETURN(v[i], int_arg("range", "arg", a.args[i]));
  }
  int64_t start = 0, stop = v[0], step = 1;
  if (a.args.size() >= 2) {
    start = v[0];
    stop = v[1];
    step = v[2];
  }
  if (step == 0) return make_error("range: step must not be zero");
  const uint64_t n = range_length(start, stop, step);
  constexpr uint64_t kMaxRange = 100000;  // jinja2.sandbox.MAX_RANGE
  if (n > kMaxRange)
    return make_error("range: %llu items exceed the sandbox limit of %llu", static_cast<unsigned long long>(n),
                      static_cast<unsigned long long>(kMaxRange));
  SNIPER_TRY(in.charge_items(n));
  List out;
  out.reserve(static_cast<size_t>(n));
  // start + i * step stays between start and stop (i < n), so it cannot overflow.
  for (uint64_t i = 0; i < n; ++i) out.push_back(Value::integer(start + static_cast<int64_t>(i) * step));
  return Value::list(std::move(out));
}

Result<Dict> dict_from_args(Interpreter& in, const char* fn, const CallArgs& a) {
  Dict d;
  if (a.args.size() > 1) return make_error("%s expects at most 1 positional argument, got %zu", fn, a.args.size());
  if (a.args.size() == 1) {
    if (a.args[0].kind() != Kind::kDict)
      return make_error("%s: positional argument must be a dict, got %s", fn, type_name(a.args[0]).c_str());
    SNIPER_TRY(in.charge_items(a.args[0].as_dict().items.size()));
    d.items = a.args[0].as_dict().items;
  }
  SNIPER_TRY(in.charge_items(a.kwargs.size()));
  for (const auto& [k, v] : a.kwargs) d.set(k, v);
  return d;
}

Result<Value> g_namespace(Interpreter& in, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(Dict d, dict_from_args(in, "namespace", a));
  Value ns = Value::make_namespace(std::move(d));
  SNIPER_TRY(in.track_namespace(ns));
  return ns;
}

Result<Value> g_dict(Interpreter& in, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(Dict d, dict_from_args(in, "dict", a));
  return Value::dict(std::move(d));
}

Result<Value> g_raise_exception(Interpreter& in, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("raise_exception", a, {required("message")}));
  SNIPER_ASSIGN_OR_RETURN(Value message, in.str(p[0]));
  in.mark_raised();
  // The template's own words, cut to a size an error response can carry.
  constexpr size_t kMaxMessageBytes = 4096;
  const std::string& m = message.as_string();
  if (m.size() <= kMaxMessageBytes) return Error{m};
  return Error{m.substr(0, kMaxMessageBytes) + "... (" + std::to_string(m.size()) + " bytes)"};
}

Result<Value> g_strftime_now(Interpreter&, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("strftime_now", a, {required("format")}));
  SNIPER_ASSIGN_OR_RETURN(std::string_view fmt_view, string_arg("strftime_now", "format", p[0]));
  if (fmt_view.size() > 256) return make_error("strftime_now: format is %zu bytes, more than 256", fmt_view.size());
  const std::string fmt(fmt_view);
  const std::time_t now = std::time(nullptr);
  std::tm tm_now{};
  localtime_r(&now, &tm_now);
  char buf[512];
  const size_t n = std::strftime(buf, sizeof(buf), fmt.c_str(), &tm_now);
  if (n == 0 && !fmt.empty())
    return make_error("strftime_now: format %s is empty after formatting or too long", brief(p[0]).c_str());
  return Value::string(std::string(buf, n));
}

Result<Value> g_joiner(Interpreter& in, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("joiner", a, {optional("sep", Value::string(", "))}));
  auto used = std::make_shared<bool>(false);
  SNIPER_ASSIGN_OR_RETURN(Value sep, in.str(p[0]));
  return Value::callable("joiner", [used, sep](Interpreter&, const CallArgs&) -> Result<Value> {
    if (!*used) {
      *used = true;
      return Value::string("");
    }
    return sep;
  });
}

}  // namespace

std::optional<Value> find_method(const Value& obj, const std::string& name) {
  Kind kind = obj.kind();
  if (kind == Kind::kTuple) kind = Kind::kList;
  if (kind != Kind::kString && kind != Kind::kDict && kind != Kind::kList) return std::nullopt;
  for (const MethodEntry& m : kMethods) {
    if (m.kind != kind || m.name != name) continue;
    if (m.fn == nullptr) {
      return Value::undefined("access to attribute '" + name + "' of '" + type_name(obj) + "' object is unsafe");
    }
    const MethodFn fn = m.fn;
    return Value::callable(type_name(obj) + "." + name,
                           [obj, fn](Interpreter& in, const CallArgs& args) { return fn(in, obj, args); });
  }
  return std::nullopt;
}

const Value* find_global(std::string_view name) {
  static const std::vector<std::pair<std::string_view, Value>> kGlobals = {
      {"range", Value::callable("range", g_range)},
      {"namespace", Value::callable("namespace", g_namespace)},
      {"dict", Value::callable("dict", g_dict)},
      {"raise_exception", Value::callable("raise_exception", g_raise_exception)},
      {"strftime_now", Value::callable("strftime_now", g_strftime_now)},
      {"joiner", Value::callable("joiner", g_joiner)},
  };
  for (const auto& [n, v] : kGlobals) {
    if (n == name) return &v;
  }
  return nullptr;
}

}  // namespace sniper::jinja
