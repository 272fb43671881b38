// SPDX-License-Identifier: MIT
// The dynamic value of the Jinja interpreter, modelled on the Python objects Jinja2 works with:
// Undefined, None, bool, int, float, str, list, tuple, dict, Namespace and callables.
// Invariants: lists, tuples and dicts are immutable once built and shared by reference (as in
// Jinja2's immutable sandbox); only Namespace attributes change after construction. Dicts keep
// insertion order and have string keys. Strings are UTF-8. Nothing here throws.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace sniper::jinja {

class Interpreter;
class Value;

// Arguments of a call: positional, then keyword, plus the template line for error messages.
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
  int line = 0;
};

// A function the template can call (macro, bound method, global).
using NativeFn = std::function<Result<Value>(Interpreter&, const CallArgs&)>;

struct Callable {
  std::string name;
  NativeFn fn;
};

using List = std::vector<Value>;

// An insertion-ordered mapping with string keys (Python dict semantics for str keys).
struct Dict {
  std::vector<std::pair<std::string, Value>> items;

  // Returns the value for `key`, or nullptr.
  [[nodiscard]] const Value* find(std::string_view key) const;
  // Inserts or overwrites `key`, keeping the first insertion position.
  void set(const std::string& key, Value value);
};

enum class Kind : uint8_t {
  kUndefined,
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kList,
  kTuple,
  kDict,
  kNamespace,
  kCallable
};

class Value {
 public:
  // An Undefined; `hint` is the message a use of it reports ("'x' is undefined").
  Value() = default;
  [[nodiscard]] static Value undefined(std::string hint);
  [[nodiscard]] static Value none();
  [[nodiscard]] static Value boolean(bool b);
  [[nodiscard]] static Value integer(int64_t i);
  [[nodiscard]] static Value number(double f);
  [[nodiscard]] static Value string(std::string s);
  [[nodiscard]] static Value list(List items);
  [[nodiscard]] static Value tuple(List items);
  [[nodiscard]] static Value dict(Dict d);
  [[nodiscard]] static Value make_namespace(Dict d);
  [[nodiscard]] static Value callable(std::string name, NativeFn fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  // bool, int or float (Python numbers.Number; bool is an int subclass).
  bool is_number() const { return kind_ == Kind::kBool || kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  // list or tuple.
  bool is_sequence() const { return kind_ == Kind::kList || kind_ == Kind::kTuple; }
  // dict or namespace (both carry a Dict).
  bool has_dict() const { return kind_ == Kind::kDict || kind_ == Kind::kNamespace; }

  // Accessors; each requires the matching kind (CHECKed).
  bool as_bool() const;
  int64_t as_int() const;    // bool or int
  double as_double() const;  // bool, int or float
  const std::string& as_string() const;
  const std::string& undefined_hint() const;
  const List& as_list() const;
  const Dict& as_dict() const;
  const Callable& as_callable() const;
  // The shared Dict behind a namespace, for attribute assignment.
  const std::shared_ptr<Dict>& namespace_dict() const;
  // Identity for the `sameas` test and namespace bookkeeping: the shared object, or nullptr.
  const void* identity() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;  // string value, or the Undefined hint
  std::shared_ptr<const List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<const Callable> fn_;
};

// Python truthiness (Undefined is falsy, empty containers are falsy).
[[nodiscard]] bool truthy(const Value& v);

// Python str(): what {{ v }} prints. Undefined prints as "".
[[nodiscard]] std::string to_str(const Value& v);

// Python repr(), used for items inside printed lists and dicts.
[[nodiscard]] std::string repr(const Value& v);

// Python type name ("str", "int", "NoneType", ...) for error messages.
[[nodiscard]] std::string type_name(const Value& v);

// Jinja2's object_type_repr: "dict object", "None", ... for undefined hints.
[[nodiscard]] std::string object_type_repr(const Value& v);

// Python ==. Numbers compare across bool/int/float; list != tuple; two Undefined are equal.
[[nodiscard]] bool equals(const Value& a, const Value& b);

// Python ordering: returns <0, 0 or >0, or an Error naming both types when unorderable.
[[nodiscard]] Result<int> compare(const Value& a, const Value& b);

// Options of json.dumps as HuggingFace's tojson passes them.
struct JsonOptions {
  bool ensure_ascii = false;
  bool sort_keys = false;
  bool has_indent = false;
  std::string indent;  // the indent unit when has_indent
  std::string item_separator = ", ";
  std::string key_separator = ": ";
};

// Appends json.dumps(v) to out; Undefined, callables and namespaces are errors.
[[nodiscard]] Status to_json(std::string& out, const Value& v, const JsonOptions& options);

// Converts JSON into a Value: objects become dicts (in the json's own key order). Fails for
// nesting deeper than kMaxJsonDepth and for binary values.
inline constexpr int kMaxJsonDepth = 256;
[[nodiscard]] Result<Value> from_json(const nlohmann::json& j);
[[nodiscard]] Result<Value> from_json(const nlohmann::ordered_json& j);

}  // namespace sniper::jinja
