// SPDX-License-Identifier: MIT
// Built-ins of the Jinja subset: filters and tests (jinja_filters.cpp), methods of str/dict/list
// values and global functions (jinja_methods.cpp), plus keyword/positional argument binding.
// Invariants: every built-in reports bad arguments as an Error naming the built-in, the
// argument and the offending value (shortened by brief()); none of them throws. Every built-in
// that builds a string, list or dict charges the interpreter's Budget for it before building
// (sizes computed with overflow checks), and every one that scans or compares charges that too.
// Errors carry no line number: the interpreter prefixes the line of the call site.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "tokenizer/jinja_value.h"

namespace sniper::jinja {

// True if `name` is a filter (or test) this interpreter implements.
[[nodiscard]] bool is_known_filter(std::string_view name);
[[nodiscard]] bool is_known_test(std::string_view name);

// Applies filter `name` to `subject` with the call's extra arguments.
[[nodiscard]] Result<Value> apply_filter(Interpreter& in, std::string_view name, const Value& subject,
                                         const CallArgs& args);

// Evaluates test `name` (`subject is name(args)`).
[[nodiscard]] Result<bool> apply_test(Interpreter& in, std::string_view name, const Value& subject,
                                      const CallArgs& args);

// The bound method `obj.name` for str, dict and list values, or nullopt when there is none.
// Methods that would mutate (list.append, dict.update, ...) yield an Undefined whose use reports
// that the access is unsafe, as Jinja2's ImmutableSandboxedEnvironment does.
[[nodiscard]] std::optional<Value> find_method(const Value& obj, const std::string& name);

// The global function `name` (range, namespace, dict, raise_exception, strftime_now, joiner,
// cycler), or nullptr.
[[nodiscard]] const Value* find_global(std::string_view name);

// One formal parameter: a name, and a default unless required.
struct Param {
  std::string_view name;
  Value def;
  bool required = false;
};
[[nodiscard]] inline Param required(std::string_view name) { return Param{name, Value(), true}; }
[[nodiscard]] inline Param optional(std::string_view name, Value def) { return Param{name, std::move(def), false}; }

// Binds positional and keyword arguments to `params` (Python rules). Errors name `fn` and the
// argument: too many positionals, unknown or duplicated keywords, missing required ones.
[[nodiscard]] Result<std::vector<Value>> bind_args(std::string_view fn, const CallArgs& call,
                                                   std::initializer_list<Param> params);

// Python `fmt % args` string formatting for %s %r %d %i %f %% (args: a tuple or one value),
// built within `budget`.
[[nodiscard]] Result<Value> percent_format(Budget& budget, const std::string& fmt, const Value& args);

// Python int() of a value for an argument that must be an integer (bool and int accepted).
[[nodiscard]] Result<int64_t> int_arg(std::string_view fn, std::string_view param, const Value& v);

// An argument that must be a str: a view of v's string (valid while v lives).
[[nodiscard]] Result<std::string_view> string_arg(std::string_view fn, std::string_view param, const Value& v);

// ---- building results within the budget (jinja_builtin_util.cpp) ----

// Charges a string of `size` bytes (checked against the string limit), then calls build().
[[nodiscard]] Result<Value> build_string(Budget& budget, uint64_t size, const std::function<std::string()>& build);
// str(v) mapped through a function that keeps its length (case mapping), charged first.
[[nodiscard]] Result<Value> case_mapped(Interpreter& in, const Value& v, std::string (*map)(std::string_view));
// Python s.replace(old, repl, count), its size computed (checked) and charged before it is built.
[[nodiscard]] Result<Value> replace_in(Interpreter& in, const std::string& s, std::string_view old,
                                       std::string_view repl, int64_t count);
// str(v) stripped (Python strip/lstrip/rstrip; chars_arg None or a str naming the built-in fn).
[[nodiscard]] Result<Value> strip_text(Interpreter& in, const Value& v, const Value& chars_arg, const char* fn,
                                       bool left, bool right);
// How many parts a split may make before the work budget runs out.
[[nodiscard]] Result<size_t> parts_allowed(Interpreter& in);
// A list of string Values from views, charged first.
[[nodiscard]] Result<Value> parts_to_list(Interpreter& in, const std::vector<std::string_view>& parts);
// The error of a split that would make more parts than parts_allowed().
[[nodiscard]] Error too_many_parts(const char* fn);
// dict.items() / |items: a list of (key, value) tuples, charged first.
[[nodiscard]] Result<Value> dict_items(Interpreter& in, const Value& dict);

}  // namespace sniper::jinja
