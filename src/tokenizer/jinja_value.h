// SPDX-License-Identifier: MIT
// The dynamic value of the Jinja interpreter, modelled on the Python objects Jinja2 works with:
// Undefined, None, bool, int, float, str, list, tuple, dict, Namespace and callables.
// Invariants: strings, lists, tuples and dicts are immutable once built and shared by reference
// (as in Jinja2's immutable sandbox), so copying a Value costs O(1) whatever it holds; only
// Namespace attributes change after construction. Dicts keep insertion order and have string
// keys. Strings are UTF-8. Every container records its nesting depth (depth()), which the
// interpreter bounds (kMaxValueDepth) so that printing, comparing and destroying a value cannot
// recurse without bound; a namespace counts as depth 1 whatever it holds (its contents change,
// and the interpreter keeps every namespace alive until the render ends, so destruction never
// recurses through one). The walkers that print, compare or serialise values charge a Budget
// (steps per node, bytes per byte) and stop at kMaxWalkDepth. Nothing here throws.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "tokenizer/jinja_budget.h"

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

// An insertion-ordered mapping with string keys (Python dict semantics for str keys). Lookups
// are O(1) once a dict holds more than a few keys (a hash index built on the first find()).
// `items` may be filled directly while the dict is built; after the first find() use set().
struct Dict {
  std::vector<std::pair<std::string, Value>> items;

  // Returns the value for `key`, or nullptr.
  [[nodiscard]] const Value* find(std::string_view key) const;
  // Inserts or overwrites `key`, keeping the first insertion position.
  void set(const std::string& key, Value value);
  // Removes every item.
  void clear();

 private:
  static constexpr size_t kIndexFrom = 16;  // below this many keys a linear scan is as fast
  void index_items() const;
  mutable std::unordered_map<std::string_view, size_t> index_;  // key -> position in items
  mutable size_t indexed_ = 0;                                  // items covered by index_
};

// Deepest nesting of lists, tuples and dicts a value may have (JSON context values are at most
// kMaxJsonDepth deep; templates may nest a little further).
inline constexpr uint32_t kMaxValueDepth = 512;
// Recursion bound of the walkers (repr, equality, ordering, JSON): past it repr prints "...",
// equality and ordering fail and tojson fails. Only namespaces that hold themselves reach it.
inline constexpr int kMaxWalkDepth = 600;

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
  // The shared items of a list or tuple (CHECKed).
  const std::shared_ptr<const List>& shared_list() const;
  const Dict& as_dict() const;
  const Callable& as_callable() const;
  // The shared Dict behind a namespace, for attribute assignment.
  const std::shared_ptr<Dict>& namespace_dict() const;
  // Identity for the `sameas` test and namespace bookkeeping: the shared object, or nullptr.
  const void* identity() const;
  // Nesting depth: 0 for scalars, 1 for a namespace, 1 + the deepest item for lists, tuples
  // and dicts.
  uint32_t depth() const { return depth_; }

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  uint32_t depth_ = 0;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<const std::string> s_;  // string value, or the Undefined hint (null: "")
  std::shared_ptr<const List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<const Callable> fn_;
};

// Python truthiness (Undefined is falsy, empty containers are falsy).
[[nodiscard]] bool truthy(const Value& v);

// Appends Python str(v) (what {{ v }} prints; Undefined prints as "") to out, within its budget.
[[nodiscard]] Status append_str(StringSink& out, const Value& v);

// Appends Python repr(v) (how items print inside lists and dicts) to out, within its budget.
[[nodiscard]] Status append_repr(StringSink& out, const Value& v);

// str(v) as a string Value: v itself when it is a string (no copy), else built within budget.
[[nodiscard]] Result<Value> str_value(Budget& budget, const Value& v);

// A short repr of v for error messages: at most about max_bytes bytes, "..." when cut, and
// bounded work whatever v holds.
[[nodiscard]] std::string brief(const Value& v, size_t max_bytes = 120);

// Python type name ("str", "int", "NoneType", ...) for error messages.
[[nodiscard]] std::string type_name(const Value& v);

// Jinja2's object_type_repr: "dict object", "None", ... for undefined hints.
[[nodiscard]] std::string object_type_repr(const Value& v);

// Python ==. Numbers compare across bool/int/float; list != tuple; two Undefined are equal.
// Charges a step per node and the bytes of compared strings; fails only when the budget does.
[[nodiscard]] Result<bool> equals(Budget& budget, const Value& a, const Value& b);

// Python ordering: returns <0, 0 or >0, or an Error naming both types when unorderable.
[[nodiscard]] Result<int> compare(Budget& budget, const Value& a, const Value& b);

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
[[nodiscard]] Status to_json(StringSink& out, const Value& v, const JsonOptions& options);

// Converts JSON into a Value: objects become dicts (in the json's own key order). Fails for
// nesting deeper than kMaxJsonDepth and for binary values.
inline constexpr int kMaxJsonDepth = 256;
[[nodiscard]] Result<Value> from_json(const nlohmann::json& j);
[[nodiscard]] Result<Value> from_json(const nlohmann::ordered_json& j);

}  // namespace sniper::jinja
