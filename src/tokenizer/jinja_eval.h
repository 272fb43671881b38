// SPDX-License-Identifier: MIT
// Tree-walking interpreter for the Jinja subset, with Jinja2's semantics: scopes (a for-loop
// iteration, macro call and `with` open a scope; `if` does not), Undefined for missing names
// and attributes, Python operators, and the ImmutableSandboxedEnvironment's attribute rules.
// Invariants: all work is bounded by Limits (items iterated, call depth, bytes of any string),
// so a hostile template ends with an Error instead of hanging or exhausting memory. An
// Interpreter renders one template once; it is not thread-safe, and nothing here throws.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "tokenizer/jinja_ast.h"
#include "tokenizer/jinja_value.h"

namespace sniper::jinja {

struct Limits {
  int64_t max_iterations = 1'000'000;   // items iterated by loops and filters, in total
  int max_call_depth = 64;              // nested macro/function calls
  size_t max_string_bytes = 64u << 20;  // output and any string built while rendering
};

// A variable scope; `parent` is the enclosing scope (nullptr for the root).
struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
};
using ScopePtr = std::shared_ptr<Scope>;

class Interpreter {
 public:
  explicit Interpreter(Limits limits) : limits_(limits) {}
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders `body` with the top-level variables of `context`. `body` must outlive this object.
  [[nodiscard]] Result<std::string> render(const Body& body, const Dict& context);

  // Calls a callable value (macro, method, global). Errors for Undefined and non-callables.
  [[nodiscard]] Result<Value> call(const Value& callee, const CallArgs& args);

  // Jinja2 attribute access obj.name and subscript obj[key]; missing ones are Undefined.
  [[nodiscard]] Result<Value> get_attr(const Value& obj, const std::string& name);
  [[nodiscard]] Result<Value> get_item(const Value& obj, const Value& key);

  // The items a for loop over `v` visits (dict keys, str code points; Undefined is empty),
  // charged to the iteration budget.
  [[nodiscard]] Result<List> iterate(const Value& v);

  // Charges n units to the iteration budget; fails once it is exhausted.
  [[nodiscard]] Status charge(int64_t n);

  // Fails if a string of n_bytes would exceed the string limit.
  [[nodiscard]] Status check_size(size_t n_bytes) const;

  // Records a namespace so the interpreter can break reference cycles through it at the end.
  void track_namespace(const Value& ns);

  // Marks the pending error as raised by the template (raise_exception): no line prefix.
  void mark_raised() { raised_ = true; }

  const Limits& limits() const { return limits_; }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Result<Flow> exec_body(const Body& body, const ScopePtr& scope, std::string& out);
  Result<Flow> exec(const Stmt& s, const ScopePtr& scope, std::string& out);
  Result<Flow> exec_for(const Stmt& s, const ScopePtr& scope, std::string& out);
  Status assign(const Target& target, Value value, const ScopePtr& scope, int line);
  Result<std::string> render_capture(const Body& body, const ScopePtr& scope);
  Result<Value> apply_filters(const std::vector<ExprPtr>& filters, Value value, const ScopePtr& scope);
  Value make_macro(const Stmt& s, const ScopePtr& scope, bool is_caller);

  Result<Value> eval(const Expr& e, const ScopePtr& scope);
  Result<Value> eval_inner(const Expr& e, const ScopePtr& scope);
  Result<CallArgs> eval_args(const ArgExprs& a, const ScopePtr& scope, int line);
  Result<Value> eval_binary(const std::string& op, const Value& a, const Value& b);
  Result<Value> eval_compare(const Expr& e, const ScopePtr& scope);
  Result<Value> eval_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
  Value lookup(const std::string& name, const ScopePtr& scope) const;

  // Prefixes "template line N: " to errors that do not carry a line yet.
  Error at_line(const Error& e, int line) const;

  Limits limits_;
  int64_t iterations_ = 0;
  int call_depth_ = 0;
  bool raised_ = false;
  ScopePtr root_;
  std::vector<std::weak_ptr<Scope>> closure_scopes_;
  std::vector<std::weak_ptr<Dict>> namespaces_;
};

}  // namespace sniper::jinja
