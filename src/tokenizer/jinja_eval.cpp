// SPDX-License-Identifier: MIT
// Statement execution and expression evaluation (see jinja_eval.h); the operators are in
// jinja_operators.cpp.
#include "tokenizer/jinja_eval.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_string.h"

namespace sniper::jinja {

namespace {

Error undefined_error(const Value& v) {
  const std::string& hint = v.undefined_hint();
  return make_error("%s", hint.empty() ? "value is undefined" : hint.c_str());
}

constexpr int64_t kCallCost = 10;  // a call builds a scope and binds arguments: more than one item

// Approximate memory of a scope with its variables (a for iteration's holds the loop dict), or
// of a namespace: charged when one is kept alive to the end of the render (a macro's closure, a
// namespace), not for the scopes that come and go with loop iterations and calls (their work is
// charged per item and per call, and their memory is freed).
constexpr uint64_t kScopeBytes = 16 * kItemBytes;

}  // namespace

Interpreter::~Interpreter() {
  // Macros capture their defining scope and namespaces may hold anything: clear them all while
  // every one of them is still held here, so the shared_ptr cycles they can form are released
  // and no destruction recurses from one into the next.
  for (const ScopePtr& s : closure_scopes_) s->vars.clear();
  for (const std::shared_ptr<Dict>& d : namespaces_) d->clear();
  if (root_) root_->vars.clear();
}

Error Interpreter::at_line(const Error& e, int line) const {
  if (raised_ || e.message.rfind("template line ", 0) == 0) return e;
  return make_error("template line %d: %s", line, e.message.c_str());
}

Status Interpreter::charge_items(uint64_t n) {
  if (n > static_cast<uint64_t>(INT64_MAX)) return budget_.work(-1);
  SNIPER_TRY(budget_.work(static_cast<int64_t>(n)));
  SNIPER_ASSIGN_OR_RETURN(uint64_t bytes, checked_mul(n, kItemBytes, "item memory"));
  return budget_.bytes(bytes);
}

Status Interpreter::track_namespace(const Value& ns) {
  SNIPER_TRY(budget_.bytes(kScopeBytes));
  namespaces_.push_back(ns.namespace_dict());
  return ok_status();
}

Result<std::string> Interpreter::render(const Body& body, const Dict& context) {
  root_ = std::make_shared<Scope>();
  for (const auto& [k, v] : context.items) root_->vars[k] = v;
  StringSink out(budget_);
  SNIPER_TRY(exec_body(body, root_, out));
  return out.take();
}

Value Interpreter::lookup(const std::string& name, const ScopePtr& scope) const {
  for (const Scope* s = scope.get(); s != nullptr; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return it->second;
  }
  if (const Value* g = find_global(name)) return *g;
  return Value::undefined("'" + name + "' is undefined");
}

// ---- statements ----

Result<Interpreter::Flow> Interpreter::exec_body(const Body& body, const ScopePtr& scope, StringSink& out) {
  for (const StmtPtr& s : body) {
    SNIPER_ASSIGN_OR_RETURN(Flow flow, exec(*s, scope, out));
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Result<std::string> Interpreter::render_capture(const Body& body, const ScopePtr& scope) {
  StringSink buf(budget_);
  SNIPER_TRY(exec_body(body, scope, buf));
  return buf.take();
}

Result<Value> Interpreter::apply_filters(const std::vector<Link>& filters, Value value, const ScopePtr& scope) {
  for (const Link& f : filters) {
    SNIPER_ASSIGN_OR_RETURN(value, apply_link(f, value, scope));
  }
  return value;
}

Result<Interpreter::Flow> Interpreter::exec(const Stmt& s, const ScopePtr& scope, StringSink& out) {
  Nest nest(budget_);
  if (!nest.ok()) return at_line(nest.status().error(), s.line);
  if (auto st = budget_.steps(1); !st.ok()) return at_line(st.error(), s.line);
  auto r = exec_stmt(s, scope, out);
  if (!r.ok()) return at_line(r.error(), s.line);
  return r;
}

Result<Interpreter::Flow> Interpreter::exec_stmt(const Stmt& s, const ScopePtr& scope, StringSink& out) {
  switch (s.kind) {
    case StmtKind::kText: SNIPER_TRY(out.append(s.text)); break;
    case StmtKind::kOutput: {
      SNIPER_ASSIGN_OR_RETURN(Value v, eval(*s.expr, scope));
      SNIPER_TRY(append_str(out, v));
      break;
    }
    case StmtKind::kIf:
      for (const auto& [cond, body] : s.branches) {
        if (cond != nullptr) {
          SNIPER_ASSIGN_OR_RETURN(Value c, eval(*cond, scope));
          if (!truthy(c)) continue;
        }
        return exec_body(body, scope, out);
      }
      break;
    case StmtKind::kFor: return exec_for(s, scope, out);
    case StmtKind::kSet: {
      SNIPER_ASSIGN_OR_RETURN(Value v, eval(*s.expr, scope));
      SNIPER_TRY(assign(s.target, std::move(v), scope, s.line));
      break;
    }
    case StmtKind::kSetBlock: {
      SNIPER_ASSIGN_OR_RETURN(std::string text, render_capture(s.body, scope));
      SNIPER_ASSIGN_OR_RETURN(Value v, apply_filters(s.filters, Value::string(std::move(text)), scope));
      SNIPER_TRY(assign(s.target, std::move(v), scope, s.line));
      break;
    }
    case StmtKind::kMacro:
      SNIPER_TRY(budget_.bytes(kScopeBytes));  // the closure keeps the scope alive to the end
      scope->vars[s.name] = make_macro(s, scope, false);
      break;
    case StmtKind::kCallBlock: {
      const Expr& e = *s.expr;  // a chain whose last link is the call (checked by the parser)
      SNIPER_ASSIGN_OR_RETURN(Value callee, eval_chain(e, scope, e.links.size() - 1));
      const Link& call_link = e.links.back();
      SNIPER_ASSIGN_OR_RETURN(CallArgs args, eval_args(call_link.call, scope, call_link.line));
      SNIPER_TRY(budget_.bytes(kScopeBytes));  // the closure keeps the scope alive to the end
      args.kwargs.emplace_back("caller", make_macro(s, scope, true));
      SNIPER_ASSIGN_OR_RETURN(Value r, this->call(callee, args));
      SNIPER_TRY(append_str(out, r));
      break;
    }
    case StmtKind::kFilterBlock: {
      SNIPER_ASSIGN_OR_RETURN(std::string text, render_capture(s.body, scope));
      SNIPER_ASSIGN_OR_RETURN(Value v, apply_filters(s.filters, Value::string(std::move(text)), scope));
      SNIPER_TRY(append_str(out, v));
      break;
    }
    case StmtKind::kWith: {
      auto inner = std::make_shared<Scope>();
      inner->parent = scope;
      for (const auto& [name, expr] : s.params) {
        SNIPER_ASSIGN_OR_RETURN(Value v, eval(*expr, inner));
        inner->vars[name] = std::move(v);
      }
      return exec_body(s.body, inner, out);
    }
    case StmtKind::kBreak: return Flow::kBreak;
    case StmtKind::kContinue: return Flow::kContinue;
    case StmtKind::kScope: return exec_body(s.body, scope, out);
  }
  return Flow::kNormal;
}

Status Interpreter::assign(const Target& target, Value value, const ScopePtr& scope, int line) {
  if (!target.ns_attr.empty()) {
    const Value ns = lookup(target.names[0], scope);
    if (ns.kind() != Kind::kNamespace) {
      return make_error("template line %d: cannot assign attribute '%s' on '%s', which is a %s and not a namespace",
                        line, target.ns_attr.c_str(), target.names[0].c_str(), type_name(ns).c_str());
    }
    ns.namespace_dict()->set(target.ns_attr, std::move(value));
    return ok_status();
  }
  if (!target.is_tuple) {
    scope->vars[target.names[0]] = std::move(value);
    return ok_status();
  }
  if (!value.is_sequence() && !value.is_string() && value.kind() != Kind::kDict) {
    return make_error("template line %d: cannot unpack a non-iterable %s", line, type_name(value).c_str());
  }
  SNIPER_ASSIGN_OR_RETURN(std::shared_ptr<const List> items, iterate(value));
  if (items->size() != target.names.size()) {
    return make_error("template line %d: cannot unpack %zu values into %zu names", line, items->size(),
                      target.names.size());
  }
  for (size_t i = 0; i < items->size(); ++i) scope->vars[target.names[i]] = (*items)[i];
  return ok_status();
}

Result<Interpreter::Flow> Interpreter::exec_for(const Stmt& s, const ScopePtr& scope, StringSink& out) {
  SNIPER_ASSIGN_OR_RETURN(Value seq, eval(*s.expr, scope));
  auto items_r = iterate(seq);
  if (!items_r.ok()) return at_line(items_r.error(), s.line);
  std::shared_ptr<const List> shared = std::move(items_r).value();
  if (s.cond != nullptr) {  // `for x in xs if cond`: filter first, loop.* sees the result
    SNIPER_TRY(charge_items(shared->size()));
    List kept;
    for (const Value& item : *shared) {
      SNIPER_TRY(budget_.steps(1));  // each iteration is a step: the clock and cancel flag are polled
      auto probe = std::make_shared<Scope>();
      probe->parent = scope;
      SNIPER_TRY(assign(s.target, item, probe, s.line));
      SNIPER_ASSIGN_OR_RETURN(Value c, eval(*s.cond, probe));
      if (truthy(c)) kept.push_back(item);
    }
    shared = std::make_shared<const List>(std::move(kept));
  }
  const List& items = *shared;
  if (items.empty()) {
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    SNIPER_TRY(exec_body(s.else_body, inner, out));
    return Flow::kNormal;
  }
  const auto n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    SNIPER_TRY(budget_.steps(1));  // an empty body still polls the clock and the cancel flag
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    SNIPER_TRY(assign(s.target, items[static_cast<size_t>(i)], inner, s.line));
    Dict loop;
    loop.items.reserve(12);
    loop.items.emplace_back("index", Value::integer(i + 1));
    loop.items.emplace_back("index0", Value::integer(i));
    loop.items.emplace_back("revindex", Value::integer(n - i));
    loop.items.emplace_back("revindex0", Value::integer(n - i - 1));
    loop.items.emplace_back("first", Value::boolean(i == 0));
    loop.items.emplace_back("last", Value::boolean(i == n - 1));
    loop.items.emplace_back("length", Value::integer(n));
    loop.items.emplace_back("depth", Value::integer(1));
    loop.items.emplace_back("depth0", Value::integer(0));
    loop.items.emplace_back("previtem",
                            i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item"));
    loop.items.emplace_back("nextitem",
                            i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item"));
    loop.items.emplace_back("cycle",
                            Value::callable("loop.cycle", [i](Interpreter&, const CallArgs& a) -> Result<Value> {
                              if (a.args.empty()) return make_error("loop.cycle needs at least one argument");
                              return a.args[static_cast<size_t>(i) % a.args.size()];
                            }));
    inner->vars["loop"] = Value::dict(std::move(loop));
    SNIPER_ASSIGN_OR_RETURN(Flow flow, exec_body(s.body, inner, out));
    if (flow == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

Value Interpreter::make_macro(const Stmt& s, const ScopePtr& scope, bool is_caller) {
  closure_scopes_.push_back(scope);
  const Stmt* stmt = &s;
  ScopePtr closure = scope;
  const std::string name = is_caller ? std::string("caller") : s.name;
  return Value::callable(name, [this, stmt, closure, name](Interpreter&, const CallArgs& args) -> Result<Value> {
    auto local = std::make_shared<Scope>();
    local->parent = closure;
    const size_t n_params = stmt->params.size();
    for (size_t i = 0; i < n_params; ++i) {
      const auto& [pname, def] = stmt->params[i];
      const Value* given = i < args.args.size() ? &args.args[i] : nullptr;
      for (const auto& [k, v] : args.kwargs) {
        if (k == pname) given = &v;
      }
      if (given != nullptr) {
        local->vars[pname] = *given;
      } else if (def != nullptr) {
        SNIPER_ASSIGN_OR_RETURN(Value v, eval(*def, local));
        local->vars[pname] = std::move(v);
      } else {
        local->vars[pname] = Value::undefined("parameter '" + pname + "' was not provided");
      }
    }
    List varargs;
    for (size_t i = n_params; i < args.args.size(); ++i) varargs.push_back(args.args[i]);
    Dict kwargs;
    for (const auto& [k, v] : args.kwargs) {
      bool is_param = false;
      for (const auto& p : stmt->params) is_param = is_param || p.first == k;
      if (k == "caller") local->vars["caller"] = v;
      else if (!is_param) kwargs.set(k, v);
    }
    local->vars["varargs"] = Value::list(std::move(varargs));
    local->vars["kwargs"] = Value::dict(std::move(kwargs));
    SNIPER_ASSIGN_OR_RETURN(std::string text, render_capture(stmt->body, local));
    return Value::string(std::move(text));
  });
}

Result<Value> Interpreter::call(const Value& callee, const CallArgs& args) {
  if (callee.is_undefined()) return undefined_error(callee);
  if (callee.kind() != Kind::kCallable) return make_error("'%s' object is not callable", type_name(callee).c_str());
  if (call_depth_ >= limits().max_call_depth) {
    return make_error("calls are nested deeper than the limit of %d (runaway recursion?)", limits().max_call_depth);
  }
  SNIPER_TRY(budget_.work(kCallCost));
  Nest nest(budget_);
  if (!nest.ok()) return nest.status().error();
  ++call_depth_;
  Result<Value> r = callee.as_callable().fn(*this, args);
  --call_depth_;
  return r;
}

// ---- attribute and item access ----

Result<Value> Interpreter::get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (std::optional<Value> m = find_method(obj, name)) return *m;
  if (obj.has_dict()) {
    if (const Value* v = obj.as_dict().find(name)) return *v;
  }
  // Built by appending: GCC 12 -O3 reports a false -Wrestrict for "lit" + std::string.
  std::string hint = "'";
  hint += object_type_repr(obj);
  hint += "' has no attribute '";
  hint += name;
  hint += "'";
  return Value::undefined(std::move(hint));
}

Result<Value> Interpreter::get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return undefined_error(obj);
  if ((obj.is_sequence() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (obj.is_sequence()) {
      const auto n = static_cast<int64_t>(obj.as_list().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.as_list()[static_cast<size_t>(i)];
    } else {
      const std::string& s = obj.as_string();
      if (i < 0) {
        SNIPER_TRY(budget_.bytes(s.size()));
        i += static_cast<int64_t>(utf8_length(s));
      }
      if (i >= 0) {
        SNIPER_TRY(budget_.bytes(s.size()));
        size_t begin = 0;
        size_t len = 0;
        if (utf8_at(s, static_cast<uint64_t>(i), &begin, &len)) return Value::string(s.substr(begin, len));
      }
    }
    return Value::undefined(object_type_repr(obj) + " has no element " + std::to_string(key.as_int()));
  }
  if (obj.kind() == Kind::kDict && key.is_string()) {
    if (const Value* v = obj.as_dict().find(key.as_string())) return *v;
  }
  if (key.is_string()) return get_attr(obj, key.as_string());
  return Value::undefined(object_type_repr(obj) + " has no element " + brief(key));
}

Result<std::shared_ptr<const List>> Interpreter::iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return std::make_shared<const List>();
    case Kind::kList:
    case Kind::kTuple: SNIPER_TRY(budget_.work(static_cast<int64_t>(v.as_list().size()))); return v.shared_list();
    case Kind::kDict: {
      const Dict& d = v.as_dict();
      SNIPER_TRY(charge_items(d.items.size()));
      List items;
      items.reserve(d.items.size());
      for (const auto& kv : d.items) {
        SNIPER_TRY(budget_.bytes(kv.first.size()));
        items.push_back(Value::string(kv.first));
      }
      return std::make_shared<const List>(std::move(items));
    }
    case Kind::kString: {
      const std::string& s = v.as_string();
      SNIPER_TRY(budget_.bytes(s.size()));
      const size_t n = utf8_length(s);
      SNIPER_TRY(charge_items(n));
      SNIPER_TRY(budget_.bytes(s.size()));
      List items;
      items.reserve(n);
      size_t pos = 0;
      while (pos < s.size()) {
        size_t len = 1;
        (void)utf8_decode(s, pos, &len);
        items.push_back(Value::string(s.substr(pos, len)));
        pos += len;
      }
      return std::make_shared<const List>(std::move(items));
    }
    default: return make_error("'%s' object is not iterable", type_name(v).c_str());
  }
}

Result<bool> Interpreter::contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::kString: {
      if (!item.is_string()) {
        return make_error("'in <string>' requires string as left operand, not %s", type_name(item).c_str());
      }
      const std::string& hay = container.as_string();
      const std::string& needle = item.as_string();
      SNIPER_TRY(budget_.bytes(hay.size() + needle.size()));
      return find_bytes(hay, needle, 0) != std::string::npos;
    }
    case Kind::kList:
    case Kind::kTuple:
      for (const Value& v : container.as_list()) {
        SNIPER_ASSIGN_OR_RETURN(bool eq, equals(budget_, v, item));
        if (eq) return true;
      }
      return false;
    case Kind::kDict: return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    case Kind::kUndefined: return false;
    default: return make_error("argument of type '%s' is not iterable", type_name(container).c_str());
  }
}

// ---- expressions ----

Result<CallArgs> Interpreter::eval_args(const ArgExprs& a, const ScopePtr& scope, int line) {
  CallArgs out;
  out.line = line;
  for (const ExprPtr& e : a.args) {
    SNIPER_ASSIGN_OR_RETURN(Value v, eval(*e, scope));
    out.args.push_back(std::move(v));
  }
  for (const auto& [k, e] : a.kwargs) {
    SNIPER_ASSIGN_OR_RETURN(Value v, eval(*e, scope));
    out.kwargs.emplace_back(k, std::move(v));
  }
  return out;
}

Result<Value> Interpreter::eval(const Expr& e, const ScopePtr& scope) {
  Nest nest(budget_);
  if (!nest.ok()) return at_line(nest.status().error(), e.line);
  if (auto st = budget_.steps(1); !st.ok()) return at_line(st.error(), e.line);
  auto r = eval_inner(e, scope);
  if (!r.ok()) return at_line(r.error(), e.line);
  if (r.value().depth() > kMaxValueDepth) {
    return at_line(make_error("a value is nested deeper than the limit of %u levels", kMaxValueDepth), e.line);
  }
  return r;
}

Result<Value> Interpreter::eval_chain(const Expr& e, const ScopePtr& scope, size_t n_links) {
  SNIPER_ASSIGN_OR_RETURN(Value v, eval(*e.children[0], scope));
  for (size_t i = 0; i < n_links; ++i) {
    const Link& link = e.links[i];
    if (auto st = budget_.steps(1); !st.ok()) return at_line(st.error(), link.line);
    auto r = apply_link(link, v, scope);
    if (!r.ok()) return at_line(r.error(), link.line);
    if (r.value().depth() > kMaxValueDepth) {
      return at_line(make_error("a value is nested deeper than the limit of %u levels", kMaxValueDepth), link.line);
    }
    v = std::move(r).value();
  }
  return v;
}

Result<Value> Interpreter::apply_link(const Link& link, const Value& v, const ScopePtr& scope) {
  switch (link.kind) {
    case LinkKind::kAttr: return get_attr(v, link.name);
    case LinkKind::kItem: {
      SNIPER_ASSIGN_OR_RETURN(Value key, eval(*link.exprs[0], scope));
      return get_item(v, key);
    }
    case LinkKind::kSlice: {
      Value parts[3] = {Value::none(), Value::none(), Value::none()};
      for (size_t i = 0; i < 3; ++i) {
        if (link.exprs[i] != nullptr) {
          SNIPER_ASSIGN_OR_RETURN(parts[i], eval(*link.exprs[i], scope));
        }
      }
      return eval_slice(v, parts[0], parts[1], parts[2]);
    }
    case LinkKind::kCall: {
      SNIPER_ASSIGN_OR_RETURN(CallArgs args, eval_args(link.call, scope, link.line));
      return call(v, args);
    }
    case LinkKind::kFilter: {
      SNIPER_ASSIGN_OR_RETURN(CallArgs args, eval_args(link.call, scope, link.line));
      return apply_filter(*this, link.name, v, args);
    }
    case LinkKind::kTest: {
      SNIPER_ASSIGN_OR_RETURN(CallArgs args, eval_args(link.call, scope, link.line));
      SNIPER_ASSIGN_OR_RETURN(bool b, apply_test(*this, link.name, v, args));
      return Value::boolean(link.negated ? !b : b);
    }
  }
  return make_error("unknown link");
}

Result<Value> Interpreter::eval_inner(const Expr& e, const ScopePtr& scope) {
  switch (e.kind) {
    case ExprKind::kConst: return e.value;
    case ExprKind::kName: return lookup(e.name, scope);
    case ExprKind::kChain: return eval_chain(e, scope, e.links.size());
    case ExprKind::kNot: {
      SNIPER_ASSIGN_OR_RETURN(Value v, eval(*e.children[0], scope));
      return Value::boolean(!truthy(v));
    }
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      SNIPER_ASSIGN_OR_RETURN(Value v, eval(*e.children[0], scope));
      if (v.is_undefined()) return undefined_error(v);
      if (!v.is_number()) {
        return make_error("bad operand type for unary %s: '%s'", e.kind == ExprKind::kNeg ? "-" : "+",
                          type_name(v).c_str());
      }
      if (e.kind == ExprKind::kPos) return v.is_bool() ? Value::integer(v.as_int()) : v;
      if (v.kind() == Kind::kFloat) return Value::number(-v.as_double());
      if (v.as_int() == INT64_MIN) return make_error("integer overflow in unary -");
      return Value::integer(-v.as_int());
    }
    case ExprKind::kBinary: return eval_binary_chain(e, scope);
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      const bool is_or = e.kind == ExprKind::kOr;
      for (size_t i = 0; i + 1 < e.children.size(); ++i) {
        SNIPER_ASSIGN_OR_RETURN(Value v, eval(*e.children[i], scope));
        if (truthy(v) == is_or) return v;
      }
      return eval(*e.children.back(), scope);
    }
    case ExprKind::kCompare: return eval_compare(e, scope);
    case ExprKind::kCond: {
      SNIPER_ASSIGN_OR_RETURN(Value c, eval(*e.children[1], scope));
      if (truthy(c)) return eval(*e.children[0], scope);
      if (e.children[2] == nullptr) return Value::undefined("the conditional expression had no else branch");
      return eval(*e.children[2], scope);
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      SNIPER_TRY(charge_items(e.children.size()));
      List items;
      items.reserve(e.children.size());
      for (const ExprPtr& c : e.children) {
        SNIPER_ASSIGN_OR_RETURN(Value v, eval(*c, scope));
        items.push_back(std::move(v));
      }
      return e.kind == ExprKind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case ExprKind::kDict: {
      SNIPER_TRY(charge_items(e.children.size() / 2));
      Dict d;
      for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
        SNIPER_ASSIGN_OR_RETURN(Value k, eval(*e.children[i], scope));
        SNIPER_ASSIGN_OR_RETURN(Value v, eval(*e.children[i + 1], scope));
        if (!k.is_string()) return make_error("dict keys must be strings, got %s", type_name(k).c_str());
        SNIPER_TRY(budget_.bytes(k.as_string().size()));
        d.set(k.as_string(), std::move(v));
      }
      return Value::dict(std::move(d));
    }
  }
  return make_error("unknown expression");
}

Result<Value> Interpreter::eval_binary_chain(const Expr& e, const ScopePtr& scope) {
  SNIPER_ASSIGN_OR_RETURN(Value acc, eval(*e.children[0], scope));
  size_t i = 0;
  while (i < e.ops.size()) {
    if (e.ops[i] == "~") {
      // A run of ~ builds one string left to right: linear in its length, however many parts.
      StringSink sink(budget_);
      SNIPER_TRY(append_str(sink, acc));
      for (; i < e.ops.size() && e.ops[i] == "~"; ++i) {
        SNIPER_ASSIGN_OR_RETURN(Value b, eval(*e.children[i + 1], scope));
        SNIPER_TRY(append_str(sink, b));
      }
      acc = Value::string(sink.take());
      continue;
    }
    SNIPER_ASSIGN_OR_RETURN(Value b, eval(*e.children[i + 1], scope));
    SNIPER_ASSIGN_OR_RETURN(acc, eval_binary(e.ops[i], acc, b));
    ++i;
  }
  return acc;
}

Result<Value> Interpreter::eval_compare(const Expr& e, const ScopePtr& scope) {
  SNIPER_ASSIGN_OR_RETURN(Value left, eval(*e.children[0], scope));
  for (size_t i = 0; i < e.ops.size(); ++i) {
    SNIPER_ASSIGN_OR_RETURN(Value right, eval(*e.children[i + 1], scope));
    const std::string& op = e.ops[i];
    bool result = false;
    if (op == "==" || op == "!=") {
      SNIPER_ASSIGN_OR_RETURN(bool eq, equals(budget_, left, right));
      result = op == "==" ? eq : !eq;
    } else if (op == "in" || op == "not in") {
      SNIPER_ASSIGN_OR_RETURN(bool c, contains(right, left));
      result = op == "in" ? c : !c;
    } else {
      if (left.is_undefined()) return undefined_error(left);
      if (right.is_undefined()) return undefined_error(right);
      if (budget_.failed()) return budget_.error();
      auto c = compare(budget_, left, right);
      if (!c.ok()) {
        if (budget_.failed()) return budget_.error();
        return make_error("'%s' not supported: %s", op.c_str(), c.error().message.c_str());
      }
      const int v = c.value();
      result = op == "<" ? v < 0 : op == "<=" ? v <= 0 : op == ">" ? v > 0 : v >= 0;
    }
    if (!result) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

}  // namespace sniper::jinja
