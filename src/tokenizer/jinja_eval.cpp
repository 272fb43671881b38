// SPDX-License-Identifier: MIT
// Statement execution and expression evaluation (see jinja_eval.h).
#include "tokenizer/jinja_eval.h"

#include <cmath>
#include <utility>

#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_string.h"

namespace sniper::jinja {

namespace {

Error undefined_error(const Value& v) {
  const std::string& hint = v.undefined_hint();
  return make_error("%s", hint.empty() ? "value is undefined" : hint.c_str());
}

Error type_error(const char* op, const Value& a, const Value& b) {
  return make_error("unsupported operand type(s) for %s: '%s' and '%s'", op, type_name(a).c_str(),
                    type_name(b).c_str());
}

// Python floor division and modulo for integers (b != 0).
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Python `container in`-test.
Result<bool> contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::kString:
      if (!item.is_string()) {
        return make_error("'in <string>' requires string as left operand, not %s", type_name(item).c_str());
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Kind::kList:
    case Kind::kTuple:
      for (const Value& v : container.as_list()) {
        if (equals(v, item)) return true;
      }
      return false;
    case Kind::kDict: return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    case Kind::kUndefined: return false;
    default: return make_error("argument of type '%s' is not iterable", type_name(container).c_str());
  }
}

}  // namespace

Interpreter::~Interpreter() {
  // Macros capture their defining scope and namespaces may hold anything: clear both so the
  // shared_ptr cycles they can form are released.
  for (auto& weak : closure_scopes_) {
    if (auto s = weak.lock()) s->vars.clear();
  }
  for (auto& weak : namespaces_) {
    if (auto d = weak.lock()) d->items.clear();
  }
  if (root_) root_->vars.clear();
}

Error Interpreter::at_line(const Error& e, int line) const {
  if (raised_ || e.message.rfind("template line ", 0) == 0) return e;
  return make_error("template line %d: %s", line, e.message.c_str());
}

Status Interpreter::charge(int64_t n) {
  iterations_ += n;
  if (iterations_ > limits_.max_iterations) {
    return make_error("the template exceeded its work limit of %lld loop iterations and calls",
                      static_cast<long long>(limits_.max_iterations));
  }
  return ok_status();
}

Status Interpreter::check_size(size_t n_bytes) const {
  if (n_bytes > limits_.max_string_bytes) {
    return make_error("a string of %zu bytes exceeds the template limit of %zu bytes", n_bytes,
                      limits_.max_string_bytes);
  }
  return ok_status();
}

void Interpreter::track_namespace(const Value& ns) { namespaces_.push_back(ns.namespace_dict()); }

Result<std::string> Interpreter::render(const Body& body, const Dict& context) {
  root_ = std::make_shared<Scope>();
  for (const auto& [k, v] : context.items) root_->vars[k] = v;
  std::string out;
  SNIPER_TRY(exec_body(body, root_, out));
  return out;
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

Result<Interpreter::Flow> Interpreter::exec_body(const Body& body, const ScopePtr& scope, std::string& out) {
  for (const StmtPtr& s : body) {
    SNIPER_ASSIGN_OR_RETURN(Flow flow, exec(*s, scope, out));
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Result<std::string> Interpreter::render_capture(const Body& body, const ScopePtr& scope) {
  std::string buf;
  SNIPER_TRY(exec_body(body, scope, buf));
  return buf;
}

Result<Value> Interpreter::apply_filters(const std::vector<ExprPtr>& filters, Value value, const ScopePtr& scope) {
  for (const ExprPtr& f : filters) {
    SNIPER_ASSIGN_OR_RETURN(CallArgs args, eval_args(f->call, scope, f->line));
    auto r = apply_filter(*this, f->name, value, args);
    if (!r.ok()) return at_line(r.error(), f->line);
    value = std::move(r).value();
  }
  return value;
}

Result<Interpreter::Flow> Interpreter::exec(const Stmt& s, const ScopePtr& scope, std::string& out) {
  switch (s.kind) {
    case StmtKind::kText: out += s.text; break;
    case StmtKind::kOutput: {
      SNIPER_ASSIGN_OR_RETURN(Value v, eval(*s.expr, scope));
      out += to_str(v);
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
    case StmtKind::kMacro: scope->vars[s.name] = make_macro(s, scope, false); break;
    case StmtKind::kCallBlock: {
      const Expr& call = *s.expr;
      SNIPER_ASSIGN_OR_RETURN(Value callee, eval(*call.children[0], scope));
      SNIPER_ASSIGN_OR_RETURN(CallArgs args, eval_args(call.call, scope, call.line));
      args.kwargs.emplace_back("caller", make_macro(s, scope, true));
      auto r = this->call(callee, args);
      if (!r.ok()) return at_line(r.error(), s.line);
      out += to_str(r.value());
      break;
    }
    case StmtKind::kFilterBlock: {
      SNIPER_ASSIGN_OR_RETURN(std::string text, render_capture(s.body, scope));
      SNIPER_ASSIGN_OR_RETURN(Value v, apply_filters(s.filters, Value::string(std::move(text)), scope));
      out += to_str(v);
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
  if (auto st = check_size(out.size()); !st.ok()) return at_line(st.error(), s.line);
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
  List items;
  if (value.is_sequence() || value.is_string() || value.kind() == Kind::kDict) {
    SNIPER_ASSIGN_OR_RETURN(items, iterate(value));
  } else {
    return make_error("template line %d: cannot unpack a non-iterable %s", line, type_name(value).c_str());
  }
  if (items.size() != target.names.size()) {
    return make_error("template line %d: cannot unpack %zu values into %zu names", line, items.size(),
                      target.names.size());
  }
  for (size_t i = 0; i < items.size(); ++i) scope->vars[target.names[i]] = std::move(items[i]);
  return ok_status();
}

Result<Interpreter::Flow> Interpreter::exec_for(const Stmt& s, const ScopePtr& scope, std::string& out) {
  SNIPER_ASSIGN_OR_RETURN(Value seq, eval(*s.expr, scope));
  auto items_r = iterate(seq);
  if (!items_r.ok()) return at_line(items_r.error(), s.line);
  List items = std::move(items_r).value();
  if (s.cond != nullptr) {  // `for x in xs if cond`: filter first, loop.* sees the result
    List kept;
    for (Value& item : items) {
      auto probe = std::make_shared<Scope>();
      probe->parent = scope;
      SNIPER_TRY(assign(s.target, item, probe, s.line));
      SNIPER_ASSIGN_OR_RETURN(Value c, eval(*s.cond, probe));
      if (truthy(c)) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    SNIPER_TRY(exec_body(s.else_body, inner, out));
    return Flow::kNormal;
  }
  const auto n = static_cast<int64_t>(items.size());
  const auto shared_items = std::make_shared<const List>(items);
  for (int64_t i = 0; i < n; ++i) {
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
  if (call_depth_ >= limits_.max_call_depth) {
    return make_error("calls are nested deeper than the limit of %d (runaway recursion?)", limits_.max_call_depth);
  }
  // A call costs more than one loop item: it builds a scope and binds arguments.
  constexpr int64_t kCallCost = 10;
  SNIPER_TRY(charge(kCallCost));
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
      const std::vector<size_t> off = utf8_offsets(obj.as_string());
      const auto n = static_cast<int64_t>(off.size()) - 1;
      if (i < 0) i += n;
      if (i >= 0 && i < n) {
        const auto u = static_cast<size_t>(i);
        return Value::string(obj.as_string().substr(off[u], off[u + 1] - off[u]));
      }
    }
    return Value::undefined(object_type_repr(obj) + " has no element " + std::to_string(key.as_int()));
  }
  if (obj.kind() == Kind::kDict && key.is_string()) {
    if (const Value* v = obj.as_dict().find(key.as_string())) return *v;
  }
  if (key.is_string()) return get_attr(obj, key.as_string());
  return Value::undefined(object_type_repr(obj) + " has no element " + repr(key));
}

Result<List> Interpreter::iterate(const Value& v) {
  List items;
  switch (v.kind()) {
    case Kind::kUndefined: return items;
    case Kind::kList:
    case Kind::kTuple: items = v.as_list(); break;
    case Kind::kDict:
      items.reserve(v.as_dict().items.size());
      for (const auto& kv : v.as_dict().items) items.push_back(Value::string(kv.first));
      break;
    case Kind::kString: {
      const std::string& s = v.as_string();
      const std::vector<size_t> off = utf8_offsets(s);
      items.reserve(off.size());
      for (size_t i = 0; i + 1 < off.size(); ++i) items.push_back(Value::string(s.substr(off[i], off[i + 1] - off[i])));
      break;
    }
    default: return make_error("'%s' object is not iterable", type_name(v).c_str());
  }
  SNIPER_TRY(charge(static_cast<int64_t>(items.size())));
  return items;
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
  auto r = eval_inner(e, scope);
  if (!r.ok()) return at_line(r.error(), e.line);
  return r;
}

Result<Value> Interpreter::eval_inner(const Expr& e, const ScopePtr& scope) {
  switch (e.kind) {
    case ExprKind::kConst: return e.value;
    case ExprKind::kName: return lookup(e.name, scope);
    case ExprKind::kGetAttr: {
      SNIPER_ASSIGN_OR_RETURN(Value obj, eval(*e.children[0], scope));
      return get_attr(obj, e.name);
    }
    case ExprKind::kGetItem: {
      SNIPER_ASSIGN_OR_RETURN(Value obj, eval(*e.children[0], scope));
      SNIPER_ASSIGN_OR_RETURN(Value key, eval(*e.children[1], scope));
      return get_item(obj, key);
    }
    case ExprKind::kSlice: {
      SNIPER_ASSIGN_OR_RETURN(Value obj, eval(*e.children[0], scope));
      Value parts[3] = {Value::none(), Value::none(), Value::none()};
      for (int i = 0; i < 3; ++i) {
        if (e.children[static_cast<size_t>(i) + 1] != nullptr) {
          SNIPER_ASSIGN_OR_RETURN(parts[i], eval(*e.children[static_cast<size_t>(i) + 1], scope));
        }
      }
      return eval_slice(obj, parts[0], parts[1], parts[2]);
    }
    case ExprKind::kCall: {
      SNIPER_ASSIGN_OR_RETURN(Value callee, eval(*e.children[0], scope));
      SNIPER_ASSIGN_OR_RETURN(CallArgs args, eval_args(e.call, scope, e.line));
      return call(callee, args);
    }
    case ExprKind::kFilter: {
      SNIPER_ASSIGN_OR_RETURN(Value subject, eval(*e.children[0], scope));
      SNIPER_ASSIGN_OR_RETURN(CallArgs args, eval_args(e.call, scope, e.line));
      return apply_filter(*this, e.name, subject, args);
    }
    case ExprKind::kTest: {
      SNIPER_ASSIGN_OR_RETURN(Value subject, eval(*e.children[0], scope));
      SNIPER_ASSIGN_OR_RETURN(CallArgs args, eval_args(e.call, scope, e.line));
      SNIPER_ASSIGN_OR_RETURN(bool b, apply_test(*this, e.name, subject, args));
      return Value::boolean(b);
    }
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
    case ExprKind::kBinary: {
      SNIPER_ASSIGN_OR_RETURN(Value a, eval(*e.children[0], scope));
      SNIPER_ASSIGN_OR_RETURN(Value b, eval(*e.children[1], scope));
      return eval_binary(e.name, a, b);
    }
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      SNIPER_ASSIGN_OR_RETURN(Value a, eval(*e.children[0], scope));
      if (truthy(a) == (e.kind == ExprKind::kOr)) return a;
      return eval(*e.children[1], scope);
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
      List items;
      for (const ExprPtr& c : e.children) {
        SNIPER_ASSIGN_OR_RETURN(Value v, eval(*c, scope));
        items.push_back(std::move(v));
      }
      return e.kind == ExprKind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case ExprKind::kDict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
        SNIPER_ASSIGN_OR_RETURN(Value k, eval(*e.children[i], scope));
        SNIPER_ASSIGN_OR_RETURN(Value v, eval(*e.children[i + 1], scope));
        if (!k.is_string()) return make_error("dict keys must be strings, got %s", type_name(k).c_str());
        d.set(k.as_string(), std::move(v));
      }
      return Value::dict(std::move(d));
    }
  }
  return make_error("unknown expression");
}

Result<Value> Interpreter::eval_compare(const Expr& e, const ScopePtr& scope) {
  SNIPER_ASSIGN_OR_RETURN(Value left, eval(*e.children[0], scope));
  for (size_t i = 0; i < e.ops.size(); ++i) {
    SNIPER_ASSIGN_OR_RETURN(Value right, eval(*e.children[i + 1], scope));
    const std::string& op = e.ops[i];
    bool result = false;
    if (op == "==") {
      result = equals(left, right);
    } else if (op == "!=") {
      result = !equals(left, right);
    } else if (op == "in" || op == "not in") {
      SNIPER_ASSIGN_OR_RETURN(bool c, contains(right, left));
      result = op == "in" ? c : !c;
    } else {
      if (left.is_undefined()) return undefined_error(left);
      if (right.is_undefined()) return undefined_error(right);
      auto c = compare(left, right);
      if (!c.ok()) return make_error("'%s' not supported: %s", op.c_str(), c.error().message.c_str());
      const int v = c.value();
      result = op == "<" ? v < 0 : op == "<=" ? v <= 0 : op == ">" ? v > 0 : v >= 0;
    }
    if (!result) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Result<Value> Interpreter::eval_binary(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string s = to_str(a) + to_str(b);
    SNIPER_TRY(check_size(s.size()));
    return Value::string(std::move(s));
  }
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  const bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
  const bool nums = a.is_number() && b.is_number();
  if (op == "+") {
    if (ints) {
      int64_t r = 0;
      if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) return make_error("integer overflow in +");
      return Value::integer(r);
    }
    if (nums) return Value::number(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) {
      SNIPER_TRY(check_size(a.as_string().size() + b.as_string().size()));
      return Value::string(a.as_string() + b.as_string());
    }
    if (a.is_sequence() && a.kind() == b.kind()) {
      List items = a.as_list();
      items.insert(items.end(), b.as_list().begin(), b.as_list().end());
      SNIPER_TRY(charge(static_cast<int64_t>(items.size())));
      return a.kind() == Kind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    return type_error("+", a, b);
  }
  if (op == "-") {
    if (ints) {
      int64_t r = 0;
      if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) return make_error("integer overflow in -");
      return Value::integer(r);
    }
    if (nums) return Value::number(a.as_double() - b.as_double());
    return type_error("-", a, b);
  }
  if (op == "*") {
    if (ints) {
      int64_t r = 0;
      if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) return make_error("integer overflow in *");
      return Value::integer(r);
    }
    if (nums) return Value::number(a.as_double() * b.as_double());
    const Value& seq = (b.is_int() || b.is_bool()) ? a : b;
    const Value& count = (b.is_int() || b.is_bool()) ? b : a;
    if ((count.is_int() || count.is_bool()) && (seq.is_string() || seq.is_sequence())) {
      const int64_t n = std::max<int64_t>(0, count.as_int());
      if (seq.is_string()) {
        const size_t unit = seq.as_string().size();
        if (unit != 0 && static_cast<uint64_t>(n) > limits_.max_string_bytes / unit)
          return check_size(SIZE_MAX).error();
        std::string s;
        s.reserve(unit * static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) s += seq.as_string();
        return Value::string(std::move(s));
      }
      SNIPER_TRY(charge(n * static_cast<int64_t>(seq.as_list().size())));
      List items;
      for (int64_t i = 0; i < n; ++i) items.insert(items.end(), seq.as_list().begin(), seq.as_list().end());
      return seq.kind() == Kind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    return type_error("*", a, b);
  }
  if (op == "%" && a.is_string()) return percent_format(a.as_string(), b);
  if (!nums) return type_error(op.c_str(), a, b);
  if (op == "/") {
    if (b.as_double() == 0) return make_error("division by zero");
    return Value::number(a.as_double() / b.as_double());
  }
  if (op == "//" || op == "%") {
    if (b.as_double() == 0) return make_error("integer division or modulo by zero");
    if (ints) {
      if (a.as_int() == INT64_MIN && b.as_int() == -1) return make_error("integer overflow in %s", op.c_str());
      return Value::integer(op == "//" ? floor_div(a.as_int(), b.as_int()) : floor_mod(a.as_int(), b.as_int()));
    }
    // CPython's float_divmod.
    const double x = a.as_double();
    const double y = b.as_double();
    double mod = std::fmod(x, y);
    double div = (x - mod) / y;
    if (mod != 0) {
      if ((y < 0) != (mod < 0)) {
        mod += y;
        div -= 1.0;
      }
    } else {
      mod = std::copysign(0.0, y);
    }
    if (op == "%") return Value::number(mod);
    double floordiv = std::copysign(0.0, x / y);
    if (div != 0) {
      floordiv = std::floor(div);
      if (div - floordiv > 0.5) floordiv += 1.0;
    }
    return Value::number(floordiv);
  }
  if (op == "**") {
    if (ints && b.as_int() >= 0) {
      int64_t r = 1;
      for (int64_t i = 0; i < b.as_int(); ++i) {
        if (__builtin_mul_overflow(r, a.as_int(), &r)) return make_error("integer overflow in **");
        if (r == 0 || r == 1) break;
      }
      return Value::integer(r);
    }
    return Value::number(std::pow(a.as_double(), b.as_double()));
  }
  return make_error("unknown operator '%s'", op.c_str());
}

Result<Value> Interpreter::eval_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (!obj.is_sequence() && !obj.is_string())
    return make_error("'%s' object is not subscriptable", type_name(obj).c_str());
  auto opt_int = [](const Value& v, const char* what) -> Result<std::optional<int64_t>> {
    if (v.is_none()) return std::optional<int64_t>();
    if (!v.is_int() && !v.is_bool())
      return make_error("slice %s must be an integer or None, got %s", what, type_name(v).c_str());
    return std::optional<int64_t>(v.as_int());
  };
  SNIPER_ASSIGN_OR_RETURN(std::optional<int64_t> o_start, opt_int(start, "start"));
  SNIPER_ASSIGN_OR_RETURN(std::optional<int64_t> o_stop, opt_int(stop, "stop"));
  SNIPER_ASSIGN_OR_RETURN(std::optional<int64_t> o_step, opt_int(step, "step"));
  const int64_t st = o_step.value_or(1);
  if (st == 0) return make_error("slice step cannot be zero");
  std::vector<size_t> off;
  int64_t n = 0;
  if (obj.is_string()) {
    off = utf8_offsets(obj.as_string());
    n = static_cast<int64_t>(off.size()) - 1;
  } else {
    n = static_cast<int64_t>(obj.as_list().size());
  }
  // PySlice_AdjustIndices.
  auto adjust = [n, st](std::optional<int64_t> v, bool is_start) {
    if (!v) return st > 0 ? (is_start ? int64_t{0} : n) : (is_start ? n - 1 : int64_t{-1});
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = st < 0 ? -1 : 0;
    } else if (x >= n) {
      x = st < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t lo = adjust(o_start, true);
  const int64_t hi = adjust(o_stop, false);
  std::vector<int64_t> idx;
  if (st > 0) {
    for (int64_t i = lo; i < hi; i += st) idx.push_back(i);
  } else {
    for (int64_t i = lo; i > hi; i += st) idx.push_back(i);
  }
  SNIPER_TRY(charge(static_cast<int64_t>(idx.size())));
  if (obj.is_string()) {
    std::string s;
    for (int64_t i : idx) {
      const auto u = static_cast<size_t>(i);
      s += obj.as_string().substr(off[u], off[u + 1] - off[u]);
    }
    return Value::string(std::move(s));
  }
  List items;
  items.reserve(idx.size());
  for (int64_t i : idx) items.push_back(obj.as_list()[static_cast<size_t>(i)]);
  return obj.kind() == Kind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
}

}  // namespace sniper::jinja
