// SPDX-License-Identifier: MIT
// Tree-walking interpreter for the Jinja subset, with Jinja2's semantics: scopes (a for-loop
// iteration, macro call and `with` open a scope; `if` does not), Undefined for missing names
// and attributes, Python operators, and the ImmutableSandboxedEnvironment's attribute rules.
// Invariants: all work is charged to a Budget (jinja_budget.h) before it is done: loop and list
// items, statements and expressions, bytes built, copied or scanned, the size of any string,
// call depth, evaluation nesting (which bounds the stack), wall time and a cancel flag; so a
// hostile template ends with an Error naming the limit instead of crashing, hanging or
// exhausting memory. Values never nest deeper than kMaxValueDepth. An Interpreter renders one
// template once; it is not thread-safe (the cancel flag may be set from any thread), and nothing
// here throws.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "tokenizer/jinja_ast.h"
#include "tokenizer/jinja_budget.h"
#include "tokenizer/jinja_value.h"

namespace sniper::jinja {

// A variable scope; `parent` is the enclosing scope (nullptr for the root).
struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
};
using ScopePtr = std::shared_ptr<Scope>;

class Interpreter {
 public:
  explicit Interpreter(const Limits& limits) : budget_(limits) {}
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

  // The items a for loop over `v` visits (dict keys, str code points; Undefined is empty): a
  // list's or tuple's own items (shared, not copied), else a list built for them. Charged to the
  // work budget (and what is built, to the byte budget) first.
  [[nodiscard]] Result<std::shared_ptr<const List>> iterate(const Value& v);

  // Charges n loop or list items (work, and their memory to the byte budget) before they are
  // built; fails once a limit is exhausted.
  [[nodiscard]] Status charge_items(uint64_t n);

  // Python ==, ordering and `in` within the budget.
  [[nodiscard]] Result<bool> eq(const Value& a, const Value& b) { return equals(budget_, a, b); }
  [[nodiscard]] Result<int> cmp(const Value& a, const Value& b) { return compare(budget_, a, b); }
  [[nodiscard]] Result<bool> contains(const Value& container, const Value& item);
  // str(v) as a string Value (v itself when it is a string), within the budget.
  [[nodiscard]] Result<Value> str(const Value& v) { return str_value(budget_, v); }

  // Keeps a namespace alive until the render ends, when the interpreter clears it: breaks the
  // reference cycles namespaces can form, and keeps their destruction from recursing.
  // Charged as memory kept to the end.
  [[nodiscard]] Status track_namespace(const Value& ns);

  // Marks the pending error as raised by the template (raise_exception): no line prefix.
  void mark_raised() { raised_ = true; }

  Budget& budget() { return budget_; }
  const Limits& limits() const { return budget_.limits(); }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Result<Flow> exec_body(const Body& body, const ScopePtr& scope, StringSink& out);
  Result<Flow> exec(const Stmt& s, const ScopePtr& scope, StringSink& out);
  Result<Flow> exec_stmt(const Stmt& s, const ScopePtr& scope, StringSink& out);
  Result<Flow> exec_for(const Stmt& s, const ScopePtr& scope, StringSink& out);
  Status assign(const Target& target, Value value, const ScopePtr& scope, int line);
  Result<std::string> render_capture(const Body& body, const ScopePtr& scope);
  Result<Value> apply_filters(const std::vector<Link>& filters, Value value, const ScopePtr& scope);
  Value make_macro(const Stmt& s, const ScopePtr& scope, bool is_caller);

  Result<Value> eval(const Expr& e, const ScopePtr& scope);
  Result<Value> eval_inner(const Expr& e, const ScopePtr& scope);
  // The chain's base with its first n_links links applied.
  Result<Value> eval_chain(const Expr& e, const ScopePtr& scope, size_t n_links);
  Result<Value> apply_link(const Link& link, const Value& v, const ScopePtr& scope);
  Result<Value> eval_binary_chain(const Expr& e, const ScopePtr& scope);
  Result<CallArgs> eval_args(const ArgExprs& a, const ScopePtr& scope, int line);
  Result<Value> eval_binary(const std::string& op, const Value& a, const Value& b);
  Result<Value> repeat(const Value& seq, int64_t count);
  Result<Value> eval_compare(const Expr& e, const ScopePtr& scope);
  Result<Value> eval_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
  Value lookup(const std::string& name, const ScopePtr& scope) const;

  // Prefixes "template line N: " to errors that do not carry a line yet.
  Error at_line(const Error& e, int line) const;

  Budget budget_;
  int call_depth_ = 0;
  bool raised_ = false;
  ScopePtr root_;
  // Every scope a macro closes over and every namespace, alive until the destructor clears
  // them all (so clearing one never destroys another: no recursion, no cycle left).
  std::vector<ScopePtr> closure_scopes_;
  std::vector<std::shared_ptr<Dict>> namespaces_;
};

}  // namespace sniper::jinja
