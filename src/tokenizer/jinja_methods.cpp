// SPDX-License-Identifier: MIT
// Methods of str, dict and list values as the sandbox exposes them (bound to their object when
// looked up), %-formatting, and the global functions HuggingFace chat templates may call.
#include <cstdio>
#include <ctime>
#include <memory>

#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_eval.h"
#include "tokenizer/jinja_string.h"

namespace sniper::jinja {

// Python %-formatting for `str % args`: %s %r %d %i %f %% (with optional precision for %f).
Result<Value> percent_format(const std::string& fmt, const Value& args) {
  List items;
  if (args.kind() == Kind::kTuple) items = args.as_list();
  else items.push_back(args);
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '%') {
      out += '%';
      ++i;
      continue;
    }
    size_t j = i + 1;
    int precision = -1;
    if (j < fmt.size() && fmt[j] == '.') {
      precision = 0;
      for (++j; j < fmt.size() && fmt[j] >= '0' && fmt[j] <= '9'; ++j) precision = precision * 10 + (fmt[j] - '0');
    }
    if (j >= fmt.size()) return make_error("incomplete format in '%s'", fmt.c_str());
    if (next >= items.size()) return make_error("not enough arguments for format string '%s'", fmt.c_str());
    const Value& v = items[next++];
    const char conv = fmt[j];
    if (conv == 's') {
      out += to_str(v);
    } else if (conv == 'r') {
      out += repr(v);
    } else if ((conv == 'd' || conv == 'i' || conv == 'f') && v.is_number()) {
      if (conv == 'f') {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%.*f", precision < 0 ? 6 : precision, v.as_double());
        out += buf;
      } else {
        out += std::to_string(v.kind() == Kind::kFloat ? static_cast<int64_t>(v.as_double()) : v.as_int());
      }
    } else {
      return make_error("unsupported format '%%%c' for a %s in '%s'", conv, type_name(v).c_str(), fmt.c_str());
    }
    i = j;
  }
  if (next < items.size()) return make_error("not all arguments converted during string formatting");
  return Value::string(std::move(out));
}

namespace {

using MethodFn = Result<Value> (*)(Interpreter&, const Value& self, const CallArgs&);

Value str_value(std::string s) { return Value::string(std::move(s)); }

// Optional "chars" argument of strip/lstrip/rstrip.
Result<Value> strip_impl(const Value& self, const CallArgs& a, bool left, bool right, const char* fn) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args(fn, a, {optional("chars", Value::none())}));
  if (p[0].is_none()) return str_value(py_strip(self.as_string(), nullptr, left, right));
  SNIPER_ASSIGN_OR_RETURN(std::string chars, string_arg(fn, "chars", p[0]));
  return str_value(py_strip(self.as_string(), &chars, left, right));
}

Result<Value> m_strip(Interpreter&, const Value& s, const CallArgs& a) {
  return strip_impl(s, a, true, true, "str.strip");
}
Result<Value> m_lstrip(Interpreter&, const Value& s, const CallArgs& a) {
  return strip_impl(s, a, true, false, "str.lstrip");
}
Result<Value> m_rstrip(Interpreter&, const Value& s, const CallArgs& a) {
  return strip_impl(s, a, false, true, "str.rstrip");
}

Result<Value> affix_impl(const Value& self, const CallArgs& a, bool prefix) {
  const char* fn = prefix ? "str.startswith" : "str.endswith";
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args(fn, a, {required("affix")}));
  List options;
  if (p[0].kind() == Kind::kTuple) options = p[0].as_list();
  else options.push_back(p[0]);
  const std::string& s = self.as_string();
  for (const Value& o : options) {
    SNIPER_ASSIGN_OR_RETURN(std::string x, string_arg(fn, "affix", o));
    if (x.size() <= s.size() &&
        (prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0)) {
      return Value::boolean(true);
    }
  }
  return Value::boolean(false);
}

Result<Value> m_startswith(Interpreter&, const Value& s, const CallArgs& a) { return affix_impl(s, a, true); }
Result<Value> m_endswith(Interpreter&, const Value& s, const CallArgs& a) { return affix_impl(s, a, false); }

Result<Value> split_impl(Interpreter& in, const Value& self, const CallArgs& a, bool reverse) {
  const char* fn = reverse ? "str.rsplit" : "str.split";
  SNIPER_ASSIGN_OR_RETURN(auto p,
                          bind_args(fn, a, {optional("sep", Value::none()), optional("maxsplit", Value::integer(-1))}));
  SNIPER_ASSIGN_OR_RETURN(int64_t maxsplit, int_arg(fn, "maxsplit", p[1]));
  std::string sep;
  if (!p[0].is_none()) {
    SNIPER_ASSIGN_OR_RETURN(sep, string_arg(fn, "sep", p[0]));
    if (sep.empty()) return make_error("%s: empty separator", fn);
  }
  const std::string* sep_ptr = p[0].is_none() ? nullptr : &sep;
  const std::vector<std::string> parts =
      reverse ? py_rsplit(self.as_string(), sep_ptr, maxsplit) : py_split(self.as_string(), sep_ptr, maxsplit);
  SNIPER_TRY(in.charge(static_cast<int64_t>(parts.size())));
  List out;
  for (const std::string& part : parts) out.push_back(Value::string(part));
  return Value::list(std::move(out));
}

Result<Value> m_split(Interpreter& in, const Value& s, const CallArgs& a) { return split_impl(in, s, a, false); }
Result<Value> m_rsplit(Interpreter& in, const Value& s, const CallArgs& a) { return split_impl(in, s, a, true); }

Result<Value> m_splitlines(Interpreter& in, const Value& s, const CallArgs& a) {
  SNIPER_TRY(bind_args("str.splitlines", a, {}));
  const std::vector<std::string> lines = py_splitlines(s.as_string());
  SNIPER_TRY(in.charge(static_cast<int64_t>(lines.size())));
  List out;
  for (const std::string& line : lines) out.push_back(Value::string(line));
  return Value::list(std::move(out));
}

Result<Value> m_replace(Interpreter& in, const Value& s, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(
      auto p, bind_args("str.replace", a, {required("old"), required("new"), optional("count", Value::integer(-1))}));
  SNIPER_ASSIGN_OR_RETURN(std::string old_s, string_arg("str.replace", "old", p[0]));
  SNIPER_ASSIGN_OR_RETURN(std::string new_s, string_arg("str.replace", "new", p[1]));
  SNIPER_ASSIGN_OR_RETURN(int64_t count, int_arg("str.replace", "count", p[2]));
  std::string out = py_replace(s.as_string(), old_s, new_s, count);
  SNIPER_TRY(in.check_size(out.size()));
  return str_value(std::move(out));
}

Result<Value> m_upper(Interpreter&, const Value& s, const CallArgs& a) {
  SNIPER_TRY(bind_args("str.upper", a, {}));
  return str_value(ascii_upper(s.as_string()));
}
Result<Value> m_lower(Interpreter&, const Value& s, const CallArgs& a) {
  SNIPER_TRY(bind_args("str.lower", a, {}));
  return str_value(ascii_lower(s.as_string()));
}
Result<Value> m_title(Interpreter&, const Value& s, const CallArgs& a) {
  SNIPER_TRY(bind_args("str.title", a, {}));
  return str_value(py_title(s.as_string()));
}
Result<Value> m_capitalize(Interpreter&, const Value& s, const CallArgs& a) {
  SNIPER_TRY(bind_args("str.capitalize", a, {}));
  return str_value(py_capitalize(s.as_string()));
}

Result<Value> find_impl(const Value& s, const CallArgs& a, const char* fn, int mode) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args(fn, a, {required("sub")}));
  SNIPER_ASSIGN_OR_RETURN(std::string sub, string_arg(fn, "sub", p[0]));
  if (mode == 2) return Value::integer(py_count(s.as_string(), sub));
  return Value::integer(py_find(s.as_string(), sub, mode == 1));
}
Result<Value> m_find(Interpreter&, const Value& s, const CallArgs& a) { return find_impl(s, a, "str.find", 0); }
Result<Value> m_rfind(Interpreter&, const Value& s, const CallArgs& a) { return find_impl(s, a, "str.rfind", 1); }
Result<Value> m_count(Interpreter&, const Value& s, const CallArgs& a) { return find_impl(s, a, "str.count", 2); }

Result<Value> m_join(Interpreter& in, const Value& s, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("str.join", a, {required("iterable")}));
  SNIPER_ASSIGN_OR_RETURN(List items, in.iterate(p[0]));
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string()) {
      return make_error("str.join: sequence item %zu: expected str instance, %s found", i, type_name(items[i]).c_str());
    }
    if (i > 0) out += s.as_string();
    out += items[i].as_string();
    SNIPER_TRY(in.check_size(out.size()));
  }
  return str_value(std::move(out));
}

// isdigit/isalpha/isalnum/isspace/isupper/islower over ASCII classes.
Result<Value> class_impl(const Value& s, const CallArgs& a, const char* fn, int (*pred)(int)) {
  SNIPER_TRY(bind_args(fn, a, {}));
  const std::string& str = s.as_string();
  if (str.empty()) return Value::boolean(false);
  for (char c : str) {
    if (!pred(static_cast<unsigned char>(c))) return Value::boolean(false);
  }
  return Value::boolean(true);
}
Result<Value> m_isdigit(Interpreter&, const Value& s, const CallArgs& a) {
  return class_impl(s, a, "str.isdigit", [](int c) { return c >= '0' && c <= '9' ? 1 : 0; });
}
Result<Value> m_isalpha(Interpreter&, const Value& s, const CallArgs& a) {
  return class_impl(s, a, "str.isalpha", [](int c) { return std::isalpha(c); });
}
Result<Value> m_isalnum(Interpreter&, const Value& s, const CallArgs& a) {
  return class_impl(s, a, "str.isalnum", [](int c) { return std::isalnum(c); });
}

Result<Value> m_isspace(Interpreter&, const Value& s, const CallArgs& a) {
  SNIPER_TRY(bind_args("str.isspace", a, {}));
  const std::string& str = s.as_string();
  return Value::boolean(!str.empty() && py_strip(str, nullptr, true, false).empty());
}

Result<Value> case_test(const Value& s, const CallArgs& a, const char* fn, bool upper) {
  SNIPER_TRY(bind_args(fn, a, {}));
  bool cased = false;
  for (char c : s.as_string()) {
    if ((upper && c >= 'a' && c <= 'z') || (!upper && c >= 'A' && c <= 'Z')) return Value::boolean(false);
    cased = cased || std::isalpha(static_cast<unsigned char>(c));
  }
  return Value::boolean(cased);
}
Result<Value> m_isupper(Interpreter&, const Value& s, const CallArgs& a) {
  return case_test(s, a, "str.isupper", true);
}
Result<Value> m_islower(Interpreter&, const Value& s, const CallArgs& a) {
  return case_test(s, a, "str.islower", false);
}

Result<Value> affix_remove(const Value& s, const CallArgs& a, bool prefix) {
  const char* fn = prefix ? "str.removeprefix" : "str.removesuffix";
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args(fn, a, {required("affix")}));
  SNIPER_ASSIGN_OR_RETURN(std::string x, string_arg(fn, "affix", p[0]));
  const std::string& str = s.as_string();
  if (x.size() <= str.size()) {
    if (prefix && str.compare(0, x.size(), x) == 0) return str_value(str.substr(x.size()));
    if (!prefix && str.compare(str.size() - x.size(), x.size(), x) == 0)
      return str_value(str.substr(0, str.size() - x.size()));
  }
  return s;
}
Result<Value> m_removeprefix(Interpreter&, const Value& s, const CallArgs& a) { return affix_remove(s, a, true); }
Result<Value> m_removesuffix(Interpreter&, const Value& s, const CallArgs& a) { return affix_remove(s, a, false); }

// str.format with {} / {0} / {name} fields and {{ }} escapes; format specs are not supported.
Result<Value> m_format(Interpreter& in, const Value& s, const CallArgs& a) {
  const std::string& fmt = s.as_string();
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if ((c == '{' || c == '}') && i + 1 < fmt.size() && fmt[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '}') return make_error("str.format: single '}' encountered in format string");
    if (c != '{') {
      out += c;
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) return make_error("str.format: single '{' encountered in format string");
    const std::string field = fmt.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!.[") != std::string::npos) {
      return make_error("str.format: field '{%s}' uses a conversion or spec, which is not supported", field.c_str());
    }
    const Value* v = nullptr;
    if (field.empty() || std::isdigit(static_cast<unsigned char>(field[0]))) {
      const size_t idx = field.empty() ? auto_index++ : static_cast<size_t>(std::atoll(field.c_str()));
      if (idx >= a.args.size()) return make_error("str.format: replacement index %zu out of range", idx);
      v = &a.args[idx];
    } else {
      for (const auto& [k, val] : a.kwargs) {
        if (k == field) v = &val;
      }
      if (v == nullptr) return make_error("str.format: no keyword argument '%s'", field.c_str());
    }
    out += to_str(*v);
    SNIPER_TRY(in.check_size(out.size()));
    i = close;
  }
  return str_value(std::move(out));
}

Result<Value> m_items(Interpreter& in, const Value& d, const CallArgs& a) {
  SNIPER_TRY(bind_args("dict.items", a, {}));
  SNIPER_TRY(in.charge(static_cast<int64_t>(d.as_dict().items.size())));
  List out;
  for (const auto& [k, v] : d.as_dict().items) out.push_back(Value::tuple({Value::string(k), v}));
  return Value::list(std::move(out));
}
Result<Value> m_keys(Interpreter& in, const Value& d, const CallArgs& a) {
  SNIPER_TRY(bind_args("dict.keys", a, {}));
  SNIPER_TRY(in.charge(static_cast<int64_t>(d.as_dict().items.size())));
  List out;
  for (const auto& kv : d.as_dict().items) out.push_back(Value::string(kv.first));
  return Value::list(std::move(out));
}
Result<Value> m_values(Interpreter& in, const Value& d, const CallArgs& a) {
  SNIPER_TRY(bind_args("dict.values", a, {}));
  SNIPER_TRY(in.charge(static_cast<int64_t>(d.as_dict().items.size())));
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

Result<Value> m_list_index(Interpreter&, const Value& l, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("list.index", a, {required("value")}));
  const List& items = l.as_list();
  for (size_t i = 0; i < items.size(); ++i) {
    if (equals(items[i], p[0])) return Value::integer(static_cast<int64_t>(i));
  }
  return make_error("list.index: %s is not in list", repr(p[0]).c_str());
}
Result<Value> m_list_count(Interpreter&, const Value& l, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("list.count", a, {required("value")}));
  int64_t n = 0;
  for (const Value& v : l.as_list()) n += equals(v, p[0]);
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
  const int64_t n = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                             : (start > stop ? (start - stop - step - 1) / -step : 0);
  constexpr int64_t kMaxRange = 100000;  // jinja2.sandbox.MAX_RANGE
  if (n > kMaxRange)
    return make_error("range: %lld items exceed the sandbox limit of %lld", static_cast<long long>(n),
                      static_cast<long long>(kMaxRange));
  SNIPER_TRY(in.charge(n));
  List out;
  for (int64_t i = 0; i < n; ++i) out.push_back(Value::integer(start + i * step));
  return Value::list(std::move(out));
}

Result<Dict> dict_from_args(const char* fn, const CallArgs& a) {
  Dict d;
  if (a.args.size() > 1) return make_error("%s expects at most 1 positional argument, got %zu", fn, a.args.size());
  if (a.args.size() == 1) {
    if (a.args[0].kind() != Kind::kDict)
      return make_error("%s: positional argument must be a dict, got %s", fn, type_name(a.args[0]).c_str());
    d = a.args[0].as_dict();
  }
  for (const auto& [k, v] : a.kwargs) d.set(k, v);
  return d;
}

Result<Value> g_namespace(Interpreter& in, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(Dict d, dict_from_args("namespace", a));
  Value ns = Value::make_namespace(std::move(d));
  in.track_namespace(ns);
  return ns;
}

Result<Value> g_dict(Interpreter&, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(Dict d, dict_from_args("dict", a));
  return Value::dict(std::move(d));
}

Result<Value> g_raise_exception(Interpreter& in, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("raise_exception", a, {required("message")}));
  in.mark_raised();
  return Error{to_str(p[0])};
}

Result<Value> g_strftime_now(Interpreter&, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("strftime_now", a, {required("format")}));
  SNIPER_ASSIGN_OR_RETURN(std::string fmt, string_arg("strftime_now", "format", p[0]));
  const std::time_t now = std::time(nullptr);
  std::tm tm_now{};
  localtime_r(&now, &tm_now);
  char buf[512];
  const size_t n = std::strftime(buf, sizeof(buf), fmt.c_str(), &tm_now);
  if (n == 0 && !fmt.empty())
    return make_error("strftime_now: format '%s' is empty after formatting or too long", fmt.c_str());
  return str_value(std::string(buf, n));
}

Result<Value> g_joiner(Interpreter&, const CallArgs& a) {
  SNIPER_ASSIGN_OR_RETURN(auto p, bind_args("joiner", a, {optional("sep", Value::string(", "))}));
  auto used = std::make_shared<bool>(false);
  const std::string sep = to_str(p[0]);
  return Value::callable("joiner", [used, sep](Interpreter&, const CallArgs&) -> Result<Value> {
    if (!*used) {
      *used = true;
      return Value::string("");
    }
    return Value::string(sep);
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
