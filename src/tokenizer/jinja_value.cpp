// SPDX-License-Identifier: MIT
// Value construction, Python-style conversion, comparison and JSON (see jinja_value.h).
#include "tokenizer/jinja_value.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "tokenizer/jinja_string.h"

namespace sniper::jinja {

namespace {

const std::string& empty_string() {
  static const std::string kEmpty;
  return kEmpty;
}

uint32_t depth_of(const List& items) {
  uint32_t d = 0;
  for (const Value& v : items) d = std::max(d, v.depth());
  return d + 1;
}

uint32_t depth_of(const Dict& dict) {
  uint32_t d = 0;
  for (const auto& kv : dict.items) d = std::max(d, kv.second.depth());
  return d + 1;
}

}  // namespace

void Dict::index_items() const {
  if (index_.empty()) index_.reserve(items.size());
  for (; indexed_ < items.size(); ++indexed_) index_.emplace(items[indexed_].first, indexed_);
}

const Value* Dict::find(std::string_view key) const {
  if (items.size() < kIndexFrom) {
    for (const auto& [k, v] : items) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  index_items();
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &items[it->second].second;
}

void Dict::set(const std::string& key, Value value) {
  if (items.size() >= kIndexFrom) {
    index_items();
    auto it = index_.find(key);
    if (it != index_.end()) {
      items[it->second].second = std::move(value);
      return;
    }
    // The new key's string_view must point into `items`, whose strings may move when the vector
    // grows: rebuild the index on the next find.
    items.emplace_back(key, std::move(value));
    index_.clear();
    indexed_ = 0;
    return;
  }
  for (auto& [k, v] : items) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(key, std::move(value));
}

void Dict::clear() {
  index_.clear();
  indexed_ = 0;
  items.clear();
}

Value Value::undefined(std::string hint) {
  Value v;
  if (!hint.empty()) v.s_ = std::make_shared<const std::string>(std::move(hint));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}

Value Value::number(double f) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.f_ = f;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  if (!s.empty()) v.s_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::list(List items) {
  Value v;
  v.kind_ = Kind::kList;
  v.depth_ = depth_of(items);
  v.list_ = std::make_shared<const List>(std::move(items));
  return v;
}

Value Value::tuple(List items) {
  Value v;
  v.kind_ = Kind::kTuple;
  v.depth_ = depth_of(items);
  v.list_ = std::make_shared<const List>(std::move(items));
  return v;
}

Value Value::dict(Dict d) {
  Value v;
  v.kind_ = Kind::kDict;
  v.depth_ = depth_of(d);
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}

Value Value::make_namespace(Dict d) {
  Value v;
  v.kind_ = Kind::kNamespace;
  v.depth_ = 1;
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}

Value Value::callable(std::string name, NativeFn fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.fn_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

bool Value::as_bool() const {
  CHECK(kind_ == Kind::kBool);
  return b_;
}

int64_t Value::as_int() const {
  CHECK(kind_ == Kind::kInt || kind_ == Kind::kBool);
  return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_;
}

double Value::as_double() const {
  CHECK(is_number());
  if (kind_ == Kind::kFloat) return f_;
  return static_cast<double>(as_int());
}

const std::string& Value::as_string() const {
  CHECK(kind_ == Kind::kString);
  return s_ ? *s_ : empty_string();
}

const std::string& Value::undefined_hint() const {
  CHECK(kind_ == Kind::kUndefined);
  return s_ ? *s_ : empty_string();
}

const List& Value::as_list() const {
  CHECK(is_sequence());
  return *list_;
}

const std::shared_ptr<const List>& Value::shared_list() const {
  CHECK(is_sequence());
  return list_;
}

const Dict& Value::as_dict() const {
  CHECK(has_dict());
  return *dict_;
}

const Callable& Value::as_callable() const {
  CHECK(kind_ == Kind::kCallable);
  return *fn_;
}

const std::shared_ptr<Dict>& Value::namespace_dict() const {
  CHECK(kind_ == Kind::kNamespace);
  return dict_;
}

const void* Value::identity() const {
  if (list_) return list_.get();
  if (dict_) return dict_.get();
  if (fn_) return fn_.get();
  return nullptr;
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return v.as_bool();
    case Kind::kInt: return v.as_int() != 0;
    case Kind::kFloat: return v.as_double() != 0.0;
    case Kind::kString: return !v.as_string().empty();
    case Kind::kList:
    case Kind::kTuple: return !v.as_list().empty();
    case Kind::kDict: return !v.as_dict().items.empty();
    case Kind::kNamespace:
    case Kind::kCallable: return true;
  }
  return false;
}

namespace {

// str() of a scalar (not a string, list, tuple, dict or namespace).
std::string scalar_str(const Value& v) {
  switch (v.kind()) {
    case Kind::kNone: return "None";
    case Kind::kBool: return v.as_bool() ? "True" : "False";
    case Kind::kInt: return std::to_string(v.as_int());
    case Kind::kFloat: return py_float_repr(v.as_double());
    case Kind::kCallable: return "<function " + v.as_callable().name + ">";
    default: return "";
  }
}

// Appends repr(s) (json = false) or json.dumps(s) to out. The escaping grows a temporary by at
// most the room left under max_string_bytes (an escape is a few bytes per input byte), and the
// scan and the result are charged.
Status append_escaped(StringSink& out, std::string_view s, bool json, bool ensure_ascii) {
  Budget& budget = out.budget();
  SNIPER_TRY(budget.bytes(s.size()));
  const uint64_t max = budget.limits().max_string_bytes;
  const uint64_t room = max > out.size() ? max - out.size() : 0;
  std::string escaped;
  const bool fits =
      json ? json_escape_string(escaped, s, ensure_ascii, room) : py_repr_string(escaped, s, static_cast<size_t>(room));
  if (!fits) {
    return make_error("a string of more than %llu bytes exceeds the template limit of %llu bytes",
                      static_cast<unsigned long long>(max), static_cast<unsigned long long>(max));
  }
  return out.append(escaped);
}

Status repr_at(StringSink& out, const Value& v, int depth);

Status repr_dict(StringSink& out, const Dict& d, int depth) {
  SNIPER_TRY(out.append('{'));
  for (size_t i = 0; i < d.items.size(); ++i) {
    if (i > 0) SNIPER_TRY(out.append(", "));
    SNIPER_TRY(append_escaped(out, d.items[i].first, false, false));
    SNIPER_TRY(out.append(": "));
    SNIPER_TRY(repr_at(out, d.items[i].second, depth + 1));
  }
  return out.append('}');
}

Status repr_at(StringSink& out, const Value& v, int depth) {
  if (depth > kMaxWalkDepth) return out.append("...");
  SNIPER_TRY(out.budget().steps(1));
  SNIPER_TRY(out.budget().check_stack());
  switch (v.kind()) {
    case Kind::kString: return append_escaped(out, v.as_string(), false, false);
    case Kind::kUndefined: return ok_status();  // Jinja2's Undefined has an empty repr inside str()
    case Kind::kList:
    case Kind::kTuple: {
      const bool is_list = v.kind() == Kind::kList;
      SNIPER_TRY(out.append(is_list ? '[' : '('));
      const List& items = v.as_list();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) SNIPER_TRY(out.append(", "));
        SNIPER_TRY(repr_at(out, items[i], depth + 1));
      }
      if (!is_list && items.size() == 1) SNIPER_TRY(out.append(','));
      return out.append(is_list ? ']' : ')');
    }
    case Kind::kDict: return repr_dict(out, v.as_dict(), depth);
    case Kind::kNamespace:
      SNIPER_TRY(out.append("<Namespace "));
      SNIPER_TRY(repr_dict(out, v.as_dict(), depth));
      return out.append('>');
    default: return out.append(scalar_str(v));
  }
}

}  // namespace

Status append_str(StringSink& out, const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return ok_status();
    case Kind::kString: return out.append(v.as_string());
    case Kind::kList:
    case Kind::kTuple:
    case Kind::kDict:
    case Kind::kNamespace: return repr_at(out, v, 0);
    default: return out.append(scalar_str(v));
  }
}

Status append_repr(StringSink& out, const Value& v) { return repr_at(out, v, 0); }

Result<Value> str_value(Budget& budget, const Value& v) {
  if (v.is_string()) return v;
  StringSink out(budget);
  SNIPER_TRY(append_str(out, v));
  return Value::string(out.take());
}

std::string brief(const Value& v, size_t max_bytes) {
  // A private budget: the walk stops once the text is long enough, whatever v holds.
  Limits limits;
  limits.max_string_bytes = max_bytes;
  limits.max_total_bytes = max_bytes * 8 + 64;
  limits.max_steps = 256;
  limits.max_time_ms = 1000;
  Budget budget(limits);
  StringSink out(budget);
  if (v.is_string()) {
    const std::string& s = v.as_string();
    const bool cut = s.size() > max_bytes;
    std::string text;
    (void)py_repr_string(text, std::string_view(s).substr(0, max_bytes), max_bytes * 4 + 2);
    if (cut) text += "...";
    return text;
  }
  const bool done = repr_at(out, v, 0).ok();
  std::string text = out.take();
  if (!done) text += "...";
  return text;
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return "list";
    case Kind::kTuple: return "tuple";
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "Namespace";
    case Kind::kCallable: return "function";
  }
  return "object";
}

std::string object_type_repr(const Value& v) {
  if (v.is_none()) return "None";
  if (v.kind() == Kind::kNamespace) return "jinja2.utils.Namespace object";
  return type_name(v) + " object";
}

namespace {

Error too_deep(const char* what) {
  return make_error("%s: the values are nested deeper than %d levels", what, kMaxWalkDepth);
}

Result<bool> equals_at(Budget& budget, const Value& a, const Value& b, int depth) {
  if (depth > kMaxWalkDepth) return too_deep("==");
  SNIPER_TRY(budget.steps(1));
  SNIPER_TRY(budget.check_stack());
  if (a.is_number() && b.is_number()) {
    if (a.kind() == Kind::kFloat || b.kind() == Kind::kFloat) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  if (a.identity() != nullptr && a.identity() == b.identity()) return true;  // the same list or dict
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: {
      const std::string& x = a.as_string();
      const std::string& y = b.as_string();
      if (x.size() != y.size()) return false;
      SNIPER_TRY(budget.bytes(x.size()));
      return x == y;
    }
    case Kind::kList:
    case Kind::kTuple: {
      const List& x = a.as_list();
      const List& y = b.as_list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        SNIPER_ASSIGN_OR_RETURN(bool eq, equals_at(budget, x[i], y[i], depth + 1));
        if (!eq) return false;
      }
      return true;
    }
    case Kind::kDict: {
      const Dict& x = a.as_dict();
      const Dict& y = b.as_dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        SNIPER_TRY(budget.bytes(k.size()));
        const Value* other = y.find(k);
        if (other == nullptr) return false;
        SNIPER_ASSIGN_OR_RETURN(bool eq, equals_at(budget, v, *other, depth + 1));
        if (!eq) return false;
      }
      return true;
    }
    default: return a.identity() == b.identity();
  }
}

Result<int> compare_at(Budget& budget, const Value& a, const Value& b, int depth) {
  if (depth > kMaxWalkDepth) return too_deep("ordering");
  SNIPER_TRY(budget.steps(1));
  SNIPER_TRY(budget.check_stack());
  if (a.is_number() && b.is_number()) {
    if (a.kind() == Kind::kFloat || b.kind() == Kind::kFloat) {
      const double x = a.as_double();
      const double y = b.as_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    const int64_t x = a.as_int();
    const int64_t y = b.as_int();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    SNIPER_TRY(budget.bytes(std::min(a.as_string().size(), b.as_string().size())));
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.kind() == b.kind() && a.is_sequence()) {
    const List& x = a.as_list();
    const List& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      SNIPER_ASSIGN_OR_RETURN(bool eq, equals_at(budget, x[i], y[i], depth + 1));
      if (eq) continue;
      return compare_at(budget, x[i], y[i], depth + 1);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  return make_error("cannot compare instances of '%s' and '%s'", type_name(a).c_str(), type_name(b).c_str());
}

Status newline_indent(StringSink& out, const JsonOptions& o, int level) {
  SNIPER_TRY(out.append('\n'));
  for (int i = 0; i < level; ++i) SNIPER_TRY(out.append(o.indent));
  return ok_status();
}

Status json_string(StringSink& out, const std::string& s, bool ensure_ascii) {
  return append_escaped(out, s, true, ensure_ascii);
}

Status to_json_at(StringSink& out, const Value& v, const JsonOptions& o, int level) {
  if (level > kMaxWalkDepth) return make_error("tojson: value is nested deeper than %d levels", kMaxWalkDepth);
  SNIPER_TRY(out.budget().steps(1));
  SNIPER_TRY(out.budget().check_stack());
  switch (v.kind()) {
    case Kind::kNone: return out.append("null");
    case Kind::kBool: return out.append(v.as_bool() ? "true" : "false");
    case Kind::kInt: return out.append(std::to_string(v.as_int()));
    case Kind::kFloat: {
      const double f = v.as_double();
      if (std::isnan(f)) return out.append("NaN");
      if (std::isinf(f)) return out.append(f < 0 ? "-Infinity" : "Infinity");
      return out.append(py_float_repr(f));
    }
    case Kind::kString: return json_string(out, v.as_string(), o.ensure_ascii);
    case Kind::kList:
    case Kind::kTuple: {
      const List& items = v.as_list();
      if (items.empty()) return out.append("[]");
      SNIPER_TRY(out.append('['));
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) SNIPER_TRY(out.append(o.item_separator));
        if (o.has_indent) SNIPER_TRY(newline_indent(out, o, level + 1));
        SNIPER_TRY(to_json_at(out, items[i], o, level + 1));
      }
      if (o.has_indent) SNIPER_TRY(newline_indent(out, o, level));
      return out.append(']');
    }
    case Kind::kDict: {
      const Dict& d = v.as_dict();
      if (d.items.empty()) return out.append("{}");
      std::vector<const std::pair<std::string, Value>*> entries;
      entries.reserve(d.items.size());
      for (const auto& kv : d.items) entries.push_back(&kv);
      if (o.sort_keys) {
        // n log n key comparisons: charged as steps before sorting.
        const auto n = static_cast<int64_t>(entries.size());
        int64_t log_n = 1;
        while ((int64_t{1} << log_n) < n) ++log_n;
        SNIPER_TRY(out.budget().steps(n * log_n));
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto* x, const auto* y) { return x->first < y->first; });
      }
      SNIPER_TRY(out.append('{'));
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) SNIPER_TRY(out.append(o.item_separator));
        if (o.has_indent) SNIPER_TRY(newline_indent(out, o, level + 1));
        SNIPER_TRY(json_string(out, entries[i]->first, o.ensure_ascii));
        SNIPER_TRY(out.append(o.key_separator));
        SNIPER_TRY(to_json_at(out, entries[i]->second, o, level + 1));
      }
      if (o.has_indent) SNIPER_TRY(newline_indent(out, o, level));
      return out.append('}');
    }
    case Kind::kUndefined:
      return make_error("tojson: Object of type Undefined is not JSON serializable (%s)",
                        v.undefined_hint().substr(0, 200).c_str());
    default: return make_error("tojson: Object of type %s is not JSON serializable", type_name(v).c_str());
  }
}

template <typename Json>
Result<Value> from_json_at(const Json& j, int depth) {
  if (depth > kMaxJsonDepth) return make_error("context JSON is nested deeper than %d levels", kMaxJsonDepth);
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::integer(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const uint64_t u = j.template get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float: return Value::number(j.template get<double>());
    case nlohmann::json::value_t::string: return Value::string(j.template get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      List items;
      items.reserve(j.size());
      for (const auto& item : j) {
        SNIPER_ASSIGN_OR_RETURN(Value v, from_json_at(item, depth + 1));
        items.push_back(std::move(v));
      }
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Dict d;
      d.items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        SNIPER_ASSIGN_OR_RETURN(Value v, from_json_at(it.value(), depth + 1));
        d.items.emplace_back(it.key(), std::move(v));
      }
      return Value::dict(std::move(d));
    }
    case nlohmann::json::value_t::discarded: return Value::undefined("discarded JSON value");
    default: return make_error("context JSON holds a binary value, which templates cannot use");
  }
}

}  // namespace

Result<bool> equals(Budget& budget, const Value& a, const Value& b) { return equals_at(budget, a, b, 0); }

Result<int> compare(Budget& budget, const Value& a, const Value& b) { return compare_at(budget, a, b, 0); }

Status to_json(StringSink& out, const Value& v, const JsonOptions& options) { return to_json_at(out, v, options, 0); }

Result<Value> from_json(const nlohmann::json& j) { return from_json_at(j, 0); }
Result<Value> from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

}  // namespace sniper::jinja
