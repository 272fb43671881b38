// SPDX-License-Identifier: MIT
// Syntax tree of the Jinja subset: expressions (Expr) and statements (Stmt).
// Invariants: the parser builds a tree and never shares nodes; every node records the template
// line it came from, and `children` holds exactly the operands its kind documents.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja_value.h"

namespace sniper::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Arguments written at a call, filter or test site.
struct ArgExprs {
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

enum class ExprKind : uint8_t {
  kConst,    // value
  kName,     // name
  kGetAttr,  // children[0].name
  kGetItem,  // children[0][children[1]]
  kSlice,    // children[0][children[1]:children[2]:children[3]] (absent parts are null)
  kCall,     // children[0](call)
  kFilter,   // children[0] | name(call); children[0] is null in filter blocks and {% set %} blocks
  kTest,     // children[0] is name(call)
  kNot,      // not children[0]
  kNeg,      // -children[0]
  kPos,      // +children[0]
  kBinary,   // children[0] <name> children[1] for + - * / // % ** ~ in
  kAnd,      // children[0] and children[1]
  kOr,       // children[0] or children[1]
  kCompare,  // children[0] ops[0] children[1] ops[1] children[2] ... (chained)
  kCond,     // children[0] if children[1] else children[2] (children[2] may be null)
  kList,     // [children...]
  kTuple,    // (children...)
  kDict,     // {children[0]: children[1], children[2]: children[3], ...}
};

struct Expr {
  ExprKind kind = ExprKind::kConst;
  int line = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> children;
  std::vector<std::string> ops;
  ArgExprs call;
};

// An assignment target: one name, a tuple of names, or a namespace attribute (ns.attr).
struct Target {
  std::vector<std::string> names;
  bool is_tuple = false;
  std::string ns_attr;  // non-empty: assigns names[0].ns_attr
};

enum class StmtKind : uint8_t {
  kText,         // text
  kOutput,       // {{ expr }}
  kIf,           // branches (a null condition is the else branch)
  kFor,          // for target in expr [if cond] body [else else_body]
  kSet,          // set target = expr
  kSetBlock,     // set target [| filters] body endset
  kMacro,        // macro name(params) body
  kCallBlock,    // call(params) expr body
  kFilterBlock,  // filter filters body
  kWith,         // with params body
  kBreak,
  kContinue,
  kScope,  // a body rendered in place ({% generation %})
};

struct Stmt {
  StmtKind kind = StmtKind::kText;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr cond;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Target target;
  Body body;
  Body else_body;
  std::string name;
  std::vector<std::pair<std::string, ExprPtr>> params;  // a null default means required
  std::vector<ExprPtr> filters;
};

}  // namespace sniper::jinja
