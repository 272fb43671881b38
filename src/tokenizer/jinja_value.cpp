// SPDX-License-Identifier: MIT
// Value construction, Python-style conversion, comparison and JSON (see jinja_value.h).
#include "tokenizer/jinja_value.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "tokenizer/jinja_string.h"

namespace sniper::jinja {

namespace {
// Nesting depth past which repr/equality/json stop (only reachable through a namespace that
// contains itself, or absurdly deep input).
constexpr int kMaxNesting = 256;
}  // namespace

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::set(const std::string& key, Value value) {
  for (auto& [k, v] : items) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(key, std::move(value));
}

Value Value::undefined(std::string hint) {
  Value v;
  v.s_ = std::move(hint);
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
  v.s_ = std::move(s);
  return v;
}

Value Value::list(List items) {
  Value v;
  v.kind_ = Kind::kList;
  v.list_ = std::make_shared<const List>(std::move(items));
  return v;
}

Value Value::tuple(List items) {
  Value v;
  v.kind_ = Kind::kTuple;
  v.list_ = std::make_shared<const List>(std::move(items));
  return v;
}

Value Value::dict(Dict d) {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}

Value Value::make_namespace(Dict d) {
  Value v;
  v.kind_ = Kind::kNamespace;
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
  return s_;
}

const std::string& Value::undefined_hint() const {
  CHECK(kind_ == Kind::kUndefined);
  return s_;
}

const List& Value::as_list() const {
  CHECK(is_sequence());
  return *list_;
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

void append_repr(std::string& out, const Value& v, int depth);

void append_items(std::string& out, const List& items, int depth) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    append_repr(out, items[i], depth + 1);
  }
}

void append_dict(std::string& out, const Dict& d, int depth) {
  out += '{';
  for (size_t i = 0; i < d.items.size(); ++i) {
    if (i > 0) out += ", ";
    out += py_repr_string(d.items[i].first);
    out += ": ";
    append_repr(out, d.items[i].second, depth + 1);
  }
  out += '}';
}

void append_repr(std::string& out, const Value& v, int depth) {
  if (depth > kMaxNesting) {
    out += "...";
    return;
  }
  switch (v.kind()) {
    case Kind::kString: out += py_repr_string(v.as_string()); return;
    case Kind::kUndefined: return;  // Jinja2's Undefined has an empty repr inside str()
    case Kind::kList:
      out += '[';
      append_items(out, v.as_list(), depth);
      out += ']';
      return;
    case Kind::kTuple:
      out += '(';
      append_items(out, v.as_list(), depth);
      if (v.as_list().size() == 1) out += ',';
      out += ')';
      return;
    case Kind::kDict: append_dict(out, v.as_dict(), depth); return;
    case Kind::kNamespace:
      out += "<Namespace ";
      append_dict(out, v.as_dict(), depth);
      out += '>';
      return;
    default: out += to_str(v); return;
  }
}

}  // namespace

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return v.as_bool() ? "True" : "False";
    case Kind::kInt: return std::to_string(v.as_int());
    case Kind::kFloat: return py_float_repr(v.as_double());
    case Kind::kString: return v.as_string();
    case Kind::kCallable: return "<function " + v.as_callable().name + ">";
    default: {
      std::string out;
      append_repr(out, v, 0);
      return out;
    }
  }
}

std::string repr(const Value& v) {
  std::string out;
  append_repr(out, v, 0);
  return out;
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

bool equals_at(const Value& a, const Value& b, int depth) {
  if (depth > kMaxNesting) return false;
  if (a.is_number() && b.is_number()) {
    if (a.kind() == Kind::kFloat || b.kind() == Kind::kFloat) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return a.as_string() == b.as_string();
    case Kind::kList:
    case Kind::kTuple: {
      const List& x = a.as_list();
      const List& y = b.as_list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!equals_at(x[i], y[i], depth + 1)) return false;
      }
      return true;
    }
    case Kind::kDict: {
      const Dict& x = a.as_dict();
      const Dict& y = b.as_dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* other = y.find(k);
        if (other == nullptr || !equals_at(v, *other, depth + 1)) return false;
      }
      return true;
    }
    default: return a.identity() == b.identity();
  }
}

Result<int> compare_at(const Value& a, const Value& b, int depth) {
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
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.kind() == b.kind() && a.is_sequence() && depth <= kMaxNesting) {
    const List& x = a.as_list();
    const List& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals_at(x[i], y[i], depth + 1)) continue;
      return compare_at(x[i], y[i], depth + 1);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  return make_error("cannot compare instances of '%s' and '%s'", type_name(a).c_str(), type_name(b).c_str());
}

void append_newline_indent(std::string& out, const JsonOptions& o, int level) {
  out += '\n';
  for (int i = 0; i < level; ++i) out += o.indent;
}

Status to_json_at(std::string& out, const Value& v, const JsonOptions& o, int level) {
  if (level > kMaxNesting) return make_error("tojson: value is nested deeper than %d levels", kMaxNesting);
  switch (v.kind()) {
    case Kind::kNone: out += "null"; return ok_status();
    case Kind::kBool: out += v.as_bool() ? "true" : "false"; return ok_status();
    case Kind::kInt: out += std::to_string(v.as_int()); return ok_status();
    case Kind::kFloat: {
      const double f = v.as_double();
      if (std::isnan(f)) out += "NaN";
      else if (std::isinf(f)) out += f < 0 ? "-Infinity" : "Infinity";
      else out += py_float_repr(f);
      return ok_status();
    }
    case Kind::kString: json_escape_string(out, v.as_string(), o.ensure_ascii); return ok_status();
    case Kind::kList:
    case Kind::kTuple: {
      const List& items = v.as_list();
      if (items.empty()) {
        out += "[]";
        return ok_status();
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += o.item_separator;
        if (o.has_indent) append_newline_indent(out, o, level + 1);
        SNIPER_TRY(to_json_at(out, items[i], o, level + 1));
      }
      if (o.has_indent) append_newline_indent(out, o, level);
      out += ']';
      return ok_status();
    }
    case Kind::kDict: {
      const Dict& d = v.as_dict();
      if (d.items.empty()) {
        out += "{}";
        return ok_status();
      }
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& kv : d.items) entries.push_back(&kv);
      if (o.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto* x, const auto* y) { return x->first < y->first; });
      }
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) out += o.item_separator;
        if (o.has_indent) append_newline_indent(out, o, level + 1);
        json_escape_string(out, entries[i]->first, o.ensure_ascii);
        out += o.key_separator;
        SNIPER_TRY(to_json_at(out, entries[i]->second, o, level + 1));
      }
      if (o.has_indent) append_newline_indent(out, o, level);
      out += '}';
      return ok_status();
    }
    case Kind::kUndefined:
      return make_error("tojson: Object of type Undefined is not JSON serializable (%s)", v.undefined_hint().c_str());
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

bool equals(const Value& a, const Value& b) { return equals_at(a, b, 0); }

Result<int> compare(const Value& a, const Value& b) { return compare_at(a, b, 0); }

Status to_json(std::string& out, const Value& v, const JsonOptions& options) { return to_json_at(out, v, options, 0); }

Result<Value> from_json(const nlohmann::json& j) { return from_json_at(j, 0); }
Result<Value> from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

}  // namespace sniper::jinja
