// SPDX-License-Identifier: MIT
// Syntax tree of the Jinja subset: expressions (Expr) and statements (Stmt).
// Invariants: the parser builds a tree and never shares nodes; every node records the template
// line it came from, and `children` holds exactly the operands its kind documents. Chains
// (a ~ b ~ c, x or y or z, obj.a[0].b(), v|f|g is t) are one node with a list of operands or
// links, never a nested spine, so the height of the tree grows only with the nesting the parser
// bounds (parentheses, brackets, unary operators, blocks: kMaxParseDepth), however long a chain.
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

// One step of a postfix/filter chain, applied to the value the chain has so far.
enum class LinkKind : uint8_t {
  kAttr,    // .name
  kItem,    // [exprs[0]]
  kSlice,   // [exprs[0]:exprs[1]:exprs[2]] (absent parts are null)
  kCall,    // (call)
  kFilter,  // | name(call)
  kTest,    // is [not] name(call)
};

struct Link {
  LinkKind kind = LinkKind::kAttr;
  int line = 0;
  bool negated = false;  // kTest: `is not`
  std::string name;      // kAttr, kFilter, kTest
  std::vector<ExprPtr> exprs;
  ArgExprs call;  // kCall, kFilter, kTest
};

enum class ExprKind : uint8_t {
  kConst,    // value
  kName,     // name
  kChain,    // children[0] followed by links[0], links[1], ... applied left to right
  kNot,      // not children[0]
  kNeg,      // -children[0]
  kPos,      // +children[0]
  kBinary,   // children[0] ops[0] children[1] ops[1] ... left to right, one precedence level of
             // + - * / // % ** ~
  kAnd,      // children[0] and children[1] and ... (short-circuit)
  kOr,       // children[0] or children[1] or ... (short-circuit)
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
  std::vector<Link> links;
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
  std::vector<Link> filters;                            // kSetBlock, kFilterBlock: kFilter links
};

}  // namespace sniper::jinja
