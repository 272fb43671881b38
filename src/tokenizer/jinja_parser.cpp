// SPDX-License-Identifier: MIT
// Recursive-descent Jinja2 parser (see jinja_parser.h). Method names follow jinja2/parser.py.
#include "tokenizer/jinja_parser.h"

#include <initializer_list>
#include <utility>

#include "tokenizer/jinja_budget.h"
#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_lexer.h"

namespace sniper::jinja {

namespace {

ExprPtr make_expr(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Result<Body> parse() {
    Body body;
    std::string end_name;
    SNIPER_TRY(subparse(body, {}, &end_name));
    return body;
  }

 private:
  const Token& cur() const { return tokens_[pos_]; }
  const Token& look() const { return tokens_[pos_ + 1 < tokens_.size() ? pos_ + 1 : pos_]; }
  void next() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool is_op(std::string_view op) const { return cur().type == TokenType::kOp && cur().text == op; }
  bool is_name(std::string_view name) const { return cur().type == TokenType::kName && cur().text == name; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }

  Error fail(const std::string& what) const { return make_error("template line %d: %s", cur().line, what.c_str()); }
  Error unexpected(const std::string& expected) const {
    return fail("expected " + expected + ", got " + describe_token(cur()));
  }

  Status expect_op(std::string_view op) {
    if (!skip_op(op)) return unexpected("'" + std::string(op) + "'");
    return ok_status();
  }
  Status expect_type(TokenType type) {
    if (cur().type != type) {
      Token want;
      want.type = type;
      return unexpected(describe_token(want));
    }
    next();
    return ok_status();
  }
  Result<std::string> expect_name() {
    if (cur().type != TokenType::kName) return unexpected("a name");
    std::string name = cur().text;
    next();
    return name;
  }

  // RAII depth counter shared by expressions and blocks.
  struct DepthGuard {
    explicit DepthGuard(int* d) : depth(d) { ++*depth; }
    ~DepthGuard() { --*depth; }
    int* depth;
  };
  Status check_depth() const {
    if (depth_ > kMaxParseDepth)
      return fail("expressions or blocks are nested deeper than " + std::to_string(kMaxParseDepth) + " levels");
    if (!stack_.ok()) return fail(stack_.error().message);
    return ok_status();
  }

  // ---- statements ----

  // Parses statements until a block whose first name is in `end_names` (left unconsumed with
  // the name in *end_name) or the end of the template (only allowed when end_names is empty).
  Status subparse(Body& body, std::initializer_list<std::string_view> end_names, std::string* end_name) {
    DepthGuard guard(&depth_);
    SNIPER_TRY(check_depth());
    while (cur().type != TokenType::kEof) {
      const Token& t = cur();
      if (t.type == TokenType::kData) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kText;
        s->line = t.line;
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.type == TokenType::kVarBegin) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kOutput;
        s->line = t.line;
        next();
        SNIPER_ASSIGN_OR_RETURN(s->expr, parse_tuple(false, true, false));
        SNIPER_TRY(expect_type(TokenType::kVarEnd));
        body.push_back(std::move(s));
      } else if (t.type == TokenType::kBlockBegin) {
        next();
        if (cur().type == TokenType::kName) {
          for (std::string_view end : end_names) {
            if (cur().text == end) {
              *end_name = cur().text;
              return ok_status();
            }
          }
        }
        SNIPER_ASSIGN_OR_RETURN(StmtPtr s, parse_statement(end_names));
        SNIPER_TRY(expect_type(TokenType::kBlockEnd));
        body.push_back(std::move(s));
      } else {
        return fail("unexpected " + describe_token(t));
      }
    }
    if (end_names.size() != 0) {
      std::string names;
      for (std::string_view n : end_names) names += (names.empty() ? "'" : " or '") + std::string(n) + "'";
      return fail("unexpected end of template, expected " + names + " to close the block");
    }
    return ok_status();
  }

  // Consumes an optional ':' and the block end, then parses a body up to one of end_names.
  // Leaves the end name as the current token unless drop_needle.
  Result<Body> parse_statements(std::initializer_list<std::string_view> end_names, bool drop_needle,
                                std::string* end_name) {
    skip_op(":");
    SNIPER_TRY(expect_type(TokenType::kBlockEnd));
    Body body;
    SNIPER_TRY(subparse(body, end_names, end_name));
    if (drop_needle) next();
    return body;
  }

  Result<StmtPtr> parse_statement(std::initializer_list<std::string_view> open_ends) {
    if (cur().type != TokenType::kName) return fail("expected a statement name, got " + describe_token(cur()));
    const std::string name = cur().text;
    auto s = std::make_unique<Stmt>();
    s->line = cur().line;
    next();
    std::string end;
    if (name == "if") {
      s->kind = StmtKind::kIf;
      while (true) {
        SNIPER_ASSIGN_OR_RETURN(ExprPtr cond, parse_tuple(false, false, false));
        SNIPER_ASSIGN_OR_RETURN(Body body, parse_statements({"elif", "else", "endif"}, false, &end));
        s->branches.emplace_back(std::move(cond), std::move(body));
        next();
        if (end == "elif") continue;
        if (end == "else") {
          SNIPER_ASSIGN_OR_RETURN(Body else_body, parse_statements({"endif"}, true, &end));
          s->branches.emplace_back(nullptr, std::move(else_body));
        }
        break;
      }
    } else if (name == "for") {
      s->kind = StmtKind::kFor;
      SNIPER_ASSIGN_OR_RETURN(s->target, parse_assign_target(false));
      if (!skip_name("in")) return unexpected("'in'");
      SNIPER_ASSIGN_OR_RETURN(s->expr, parse_tuple(false, false, false));
      if (skip_name("if")) {
        SNIPER_ASSIGN_OR_RETURN(s->cond, parse_expression(true));
      }
      if (is_name("recursive")) return fail("recursive for loops are not supported");
      ++loop_depth_;
      auto body = parse_statements({"endfor", "else"}, false, &end);
      --loop_depth_;
      if (!body.ok()) return body.error();
      s->body = std::move(body).value();
      next();
      if (end == "else") {
        SNIPER_ASSIGN_OR_RETURN(s->else_body, parse_statements({"endfor"}, true, &end));
      }
    } else if (name == "set") {
      SNIPER_ASSIGN_OR_RETURN(s->target, parse_assign_target(true));
      if (skip_op("=")) {
        s->kind = StmtKind::kSet;
        SNIPER_ASSIGN_OR_RETURN(s->expr, parse_tuple(false, true, false));
      } else {
        s->kind = StmtKind::kSetBlock;
        while (skip_op("|")) {
          SNIPER_ASSIGN_OR_RETURN(Link f, parse_one_filter());
          s->filters.push_back(std::move(f));
        }
        SNIPER_ASSIGN_OR_RETURN(s->body, parse_statements({"endset"}, true, &end));
      }
    } else if (name == "macro") {
      s->kind = StmtKind::kMacro;
      SNIPER_ASSIGN_OR_RETURN(s->name, expect_name());
      SNIPER_TRY(parse_signature(*s));
      SNIPER_ASSIGN_OR_RETURN(s->body, parse_statements({"endmacro"}, true, &end));
    } else if (name == "call") {
      s->kind = StmtKind::kCallBlock;
      if (is_op("(")) SNIPER_TRY(parse_signature(*s));
      SNIPER_ASSIGN_OR_RETURN(s->expr, parse_expression(true));
      if (s->expr->kind != ExprKind::kChain || s->expr->links.back().kind != LinkKind::kCall) {
        return fail("the call block needs a macro call after 'call'");
      }
      SNIPER_ASSIGN_OR_RETURN(s->body, parse_statements({"endcall"}, true, &end));
    } else if (name == "filter") {
      s->kind = StmtKind::kFilterBlock;
      do {
        SNIPER_ASSIGN_OR_RETURN(Link f, parse_one_filter());
        s->filters.push_back(std::move(f));
      } while (skip_op("|"));
      SNIPER_ASSIGN_OR_RETURN(s->body, parse_statements({"endfilter"}, true, &end));
    } else if (name == "with") {
      s->kind = StmtKind::kWith;
      while (cur().type != TokenType::kBlockEnd) {
        if (!s->params.empty()) SNIPER_TRY(expect_op(","));
        SNIPER_ASSIGN_OR_RETURN(std::string var, expect_name());
        SNIPER_TRY(expect_op("="));
        SNIPER_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
        s->params.emplace_back(std::move(var), std::move(value));
      }
      SNIPER_ASSIGN_OR_RETURN(s->body, parse_statements({"endwith"}, true, &end));
    } else if (name == "generation") {
      s->kind = StmtKind::kScope;
      SNIPER_ASSIGN_OR_RETURN(s->body, parse_statements({"endgeneration"}, true, &end));
    } else if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) return fail("'" + name + "' used outside of a for loop");
      s->kind = name == "break" ? StmtKind::kBreak : StmtKind::kContinue;
    } else {
      std::string msg = "unknown statement '" + name + "'";
      if (open_ends.size() != 0) {
        msg += " (the innermost open block expects";
        for (std::string_view n : open_ends) msg += " '" + std::string(n) + "'";
        msg += ")";
      }
      return fail(msg);
    }
    return s;
  }

  // for/set targets: name, tuple of names (optionally parenthesised), or (set only) ns.attr.
  Result<Target> parse_assign_target(bool with_namespace) {
    Target t;
    if (with_namespace && cur().type == TokenType::kName && look().type == TokenType::kOp && look().text == ".") {
      t.names.push_back(cur().text);
      next();
      next();
      SNIPER_ASSIGN_OR_RETURN(t.ns_attr, expect_name());
      return t;
    }
    const bool parens = skip_op("(");
    while (true) {
      SNIPER_ASSIGN_OR_RETURN(std::string n, expect_name());
      t.names.push_back(std::move(n));
      if (!skip_op(",")) break;
      t.is_tuple = true;
      if (cur().type != TokenType::kName) break;
    }
    if (parens) {
      SNIPER_TRY(expect_op(")"));
      t.is_tuple = true;
    }
    return t;
  }

  // (name [= default], ...) for macros and call blocks.
  Status parse_signature(Stmt& s) {
    SNIPER_TRY(expect_op("("));
    bool seen_default = false;
    while (!is_op(")")) {
      if (!s.params.empty()) SNIPER_TRY(expect_op(","));
      SNIPER_ASSIGN_OR_RETURN(std::string param, expect_name());
      ExprPtr def;
      if (skip_op("=")) {
        SNIPER_ASSIGN_OR_RETURN(def, parse_expression(true));
        seen_default = true;
      } else if (seen_default) {
        return fail("non-default argument '" + param + "' follows default argument");
      }
      s.params.emplace_back(std::move(param), std::move(def));
    }
    next();
    return ok_status();
  }

  // ---- expressions ----

  // jinja2 parse_tuple: expressions separated by commas; a trailing comma or several items
  // make a tuple. `simplified` parses primaries only; explicit_parentheses allows "()".
  Result<ExprPtr> parse_tuple(bool simplified, bool with_condexpr, bool explicit_parentheses) {
    const int line = cur().line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) SNIPER_TRY(expect_op(","));
      if (cur().type == TokenType::kVarEnd || cur().type == TokenType::kBlockEnd || is_op(")")) break;
      if (simplified) {
        SNIPER_ASSIGN_OR_RETURN(ExprPtr e, parse_primary());
        items.push_back(std::move(e));
      } else {
        SNIPER_ASSIGN_OR_RETURN(ExprPtr e, parse_expression(with_condexpr));
        items.push_back(std::move(e));
      }
      if (!is_op(",")) break;
      is_tuple = true;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parentheses) return unexpected("an expression");
    }
    ExprPtr t = make_expr(ExprKind::kTuple, line);
    t->children = std::move(items);
    return t;
  }

  Result<ExprPtr> parse_expression(bool with_condexpr) {
    DepthGuard guard(&depth_);
    SNIPER_TRY(check_depth());
    if (!with_condexpr) return parse_or();
    SNIPER_ASSIGN_OR_RETURN(ExprPtr expr, parse_or());
    // `a if b if c else d` nests one conditional per `if`: each counts as a level of nesting.
    int extra = 0;
    struct Release {
      int* depth;
      int* n;
      ~Release() { *depth -= *n; }
    } release{&depth_, &extra};
    while (is_name("if")) {
      ++depth_;
      ++extra;
      SNIPER_TRY(check_depth());
      const int line = cur().line;
      next();
      SNIPER_ASSIGN_OR_RETURN(ExprPtr cond, parse_or());
      ExprPtr otherwise;
      if (skip_name("else")) {
        SNIPER_ASSIGN_OR_RETURN(otherwise, parse_expression(true));
      }
      ExprPtr c = make_expr(ExprKind::kCond, line);
      c->children.push_back(std::move(expr));
      c->children.push_back(std::move(cond));
      c->children.push_back(std::move(otherwise));
      expr = std::move(c);
    }
    return expr;
  }

  // One left-associative level: operands from `operand`, separated by any of `ops` (operators,
  // or the names "and"/"or"). A chain is one node with every operand, however long.
  using OperandFn = Result<ExprPtr> (Parser::*)();
  Result<ExprPtr> parse_level(ExprKind kind, OperandFn operand, std::initializer_list<std::string_view> ops) {
    SNIPER_ASSIGN_OR_RETURN(ExprPtr first, (this->*operand)());
    ExprPtr chain;
    while (true) {
      std::string_view op;
      for (std::string_view o : ops) {
        const bool word = o == "and" || o == "or";
        if (word ? is_name(o) : is_op(o)) op = o;
      }
      if (op.empty()) break;
      if (chain == nullptr) {
        chain = make_expr(kind, cur().line);
        chain->children.push_back(std::move(first));
      }
      next();
      SNIPER_ASSIGN_OR_RETURN(ExprPtr right, (this->*operand)());
      chain->ops.emplace_back(op);
      chain->children.push_back(std::move(right));
    }
    return chain != nullptr ? std::move(chain) : std::move(first);
  }

  Result<ExprPtr> parse_or() { return parse_level(ExprKind::kOr, &Parser::parse_and, {"or"}); }
  Result<ExprPtr> parse_and() { return parse_level(ExprKind::kAnd, &Parser::parse_not, {"and"}); }

  Result<ExprPtr> parse_not() {
    if (is_name("not")) {
      const int line = cur().line;
      next();
      DepthGuard guard(&depth_);
      SNIPER_TRY(check_depth());
      SNIPER_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
      ExprPtr e = make_expr(ExprKind::kNot, line);
      e->children.push_back(std::move(operand));
      return e;
    }
    return parse_compare();
  }

  Result<ExprPtr> parse_compare() {
    const int line = cur().line;
    SNIPER_ASSIGN_OR_RETURN(ExprPtr first, parse_math1());
    ExprPtr cmp = make_expr(ExprKind::kCompare, line);
    cmp->children.push_back(std::move(first));
    while (true) {
      std::string op;
      if (cur().type == TokenType::kOp && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                           cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
        op = cur().text;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && look().type == TokenType::kName && look().text == "in") {
        op = "not in";
        next();
        next();
      } else {
        break;
      }
      SNIPER_ASSIGN_OR_RETURN(ExprPtr operand, parse_math1());
      cmp->ops.push_back(std::move(op));
      cmp->children.push_back(std::move(operand));
    }
    if (cmp->ops.empty()) return std::move(cmp->children[0]);
    return cmp;
  }

  Result<ExprPtr> parse_math1() { return parse_level(ExprKind::kBinary, &Parser::parse_concat, {"+", "-"}); }
  Result<ExprPtr> parse_concat() { return parse_level(ExprKind::kBinary, &Parser::parse_math2, {"~"}); }
  Result<ExprPtr> parse_math2() { return parse_level(ExprKind::kBinary, &Parser::parse_pow, {"*", "/", "//", "%"}); }
  Result<ExprPtr> parse_pow() { return parse_level(ExprKind::kBinary, &Parser::parse_unary_filtered, {"**"}); }
  Result<ExprPtr> parse_unary_filtered() { return parse_unary(true); }

  // The chain node that `node` continues: node itself when it is one, else a new chain on it.
  static ExprPtr as_chain(ExprPtr node) {
    if (node->kind == ExprKind::kChain) return node;
    ExprPtr e = make_expr(ExprKind::kChain, node->line);
    e->children.push_back(std::move(node));
    return e;
  }
  static void append_link(ExprPtr& node, Link link) {
    node = as_chain(std::move(node));
    node->links.push_back(std::move(link));
  }

  Result<ExprPtr> parse_unary(bool with_filter) {
    DepthGuard guard(&depth_);
    SNIPER_TRY(check_depth());
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      const ExprKind kind = is_op("-") ? ExprKind::kNeg : ExprKind::kPos;
      const int line = cur().line;
      next();
      SNIPER_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
      node = make_expr(kind, line);
      node->children.push_back(std::move(operand));
    } else {
      SNIPER_ASSIGN_OR_RETURN(node, parse_primary());
    }
    SNIPER_TRY(parse_postfix(node));
    if (!with_filter) return node;
    // Filters, tests and calls may follow each other: x|f is t (args)...
    while (true) {
      if (skip_op("|")) {
        SNIPER_ASSIGN_OR_RETURN(Link f, parse_one_filter());
        append_link(node, std::move(f));
      } else if (is_name("is")) {
        SNIPER_ASSIGN_OR_RETURN(Link t, parse_test());
        append_link(node, std::move(t));
      } else if (is_op("(")) {
        SNIPER_ASSIGN_OR_RETURN(Link c, parse_call());
        append_link(node, std::move(c));
      } else {
        break;
      }
    }
    return node;
  }

  Result<ExprPtr> parse_primary() {
    const Token& t = cur();
    ExprPtr e;
    if (t.type == TokenType::kName) {
      e = make_expr(ExprKind::kConst, t.line);
      if (t.text == "true" || t.text == "True") e->value = Value::boolean(true);
      else if (t.text == "false" || t.text == "False") e->value = Value::boolean(false);
      else if (t.text == "none" || t.text == "None") e->value = Value::none();
      else {
        e->kind = ExprKind::kName;
        e->name = t.text;
      }
      next();
    } else if (t.type == TokenType::kString) {
      e = make_expr(ExprKind::kConst, t.line);
      std::string s;
      while (cur().type == TokenType::kString) {  // adjacent literals concatenate
        s += cur().text;
        next();
      }
      e->value = Value::string(std::move(s));
    } else if (t.type == TokenType::kInt || t.type == TokenType::kFloat) {
      e = make_expr(ExprKind::kConst, t.line);
      e->value = t.type == TokenType::kInt ? Value::integer(t.int_value) : Value::number(t.float_value);
      next();
    } else if (is_op("(")) {
      next();
      SNIPER_ASSIGN_OR_RETURN(e, parse_tuple(false, true, true));
      SNIPER_TRY(expect_op(")"));
    } else if (is_op("[") || is_op("{")) {
      const bool is_list = is_op("[");
      e = make_expr(is_list ? ExprKind::kList : ExprKind::kDict, t.line);
      next();
      const char* close = is_list ? "]" : "}";
      while (!is_op(close)) {
        if (!e->children.empty()) {
          SNIPER_TRY(expect_op(","));
          if (is_op(close)) break;
        }
        SNIPER_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(true));
        e->children.push_back(std::move(item));
        if (!is_list) {
          SNIPER_TRY(expect_op(":"));
          SNIPER_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
          e->children.push_back(std::move(value));
        }
      }
      next();
    } else {
      return fail("unexpected " + describe_token(t));
    }
    return e;
  }

  // Appends .name, .0, [subscript] and (call) links to `node` (made a chain when one follows).
  Status parse_postfix(ExprPtr& node) {
    while (true) {
      if (is_op(".")) {
        Link link;
        link.line = cur().line;
        next();
        if (cur().type == TokenType::kName) {
          link.kind = LinkKind::kAttr;
          link.name = cur().text;
        } else if (cur().type == TokenType::kInt) {
          ExprPtr key = make_expr(ExprKind::kConst, link.line);
          key->value = Value::integer(cur().int_value);
          link.kind = LinkKind::kItem;
          link.exprs.push_back(std::move(key));
        } else {
          return unexpected("a name or number after '.'");
        }
        next();
        append_link(node, std::move(link));
      } else if (is_op("[")) {
        SNIPER_ASSIGN_OR_RETURN(Link link, parse_subscript());
        append_link(node, std::move(link));
      } else if (is_op("(")) {
        SNIPER_ASSIGN_OR_RETURN(Link link, parse_call());
        append_link(node, std::move(link));
      } else {
        return ok_status();
      }
    }
  }

  // [expr] or [start:stop:step].
  Result<Link> parse_subscript() {
    Link link;
    link.line = cur().line;
    next();  // [
    ExprPtr parts[3];
    bool is_slice = false;
    if (!is_op(":")) {
      SNIPER_ASSIGN_OR_RETURN(parts[0], parse_expression(true));
    }
    if (skip_op(":")) {
      is_slice = true;
      if (!is_op(":") && !is_op("]")) {
        SNIPER_ASSIGN_OR_RETURN(parts[1], parse_expression(true));
      }
      if (skip_op(":") && !is_op("]")) {
        SNIPER_ASSIGN_OR_RETURN(parts[2], parse_expression(true));
      }
    }
    if (is_op(",")) return fail("subscripts with several indices are not supported");
    SNIPER_TRY(expect_op("]"));
    link.kind = is_slice ? LinkKind::kSlice : LinkKind::kItem;
    link.exprs.push_back(std::move(parts[0]));
    if (is_slice) {
      link.exprs.push_back(std::move(parts[1]));
      link.exprs.push_back(std::move(parts[2]));
    }
    return link;
  }

  Status parse_call_args(ArgExprs& out) {
    SNIPER_TRY(expect_op("("));
    while (!is_op(")")) {
      if (!out.args.empty() || !out.kwargs.empty()) {
        SNIPER_TRY(expect_op(","));
        if (is_op(")")) break;
      }
      if (is_op("*") || is_op("**")) return fail("*args and **kwargs in calls are not supported");
      if (cur().type == TokenType::kName && look().type == TokenType::kOp && look().text == "=") {
        std::string key = cur().text;
        next();
        next();
        SNIPER_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
        out.kwargs.emplace_back(std::move(key), std::move(value));
      } else {
        if (!out.kwargs.empty()) return fail("positional argument follows keyword argument");
        SNIPER_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
        out.args.push_back(std::move(value));
      }
    }
    next();
    return ok_status();
  }

  Result<Link> parse_call() {
    Link link;
    link.kind = LinkKind::kCall;
    link.line = cur().line;
    SNIPER_TRY(parse_call_args(link.call));
    return link;
  }

  // name[(args)] after '|' (already consumed); also the filters of filter and set blocks.
  Result<Link> parse_one_filter() {
    Link link;
    link.kind = LinkKind::kFilter;
    link.line = cur().line;
    SNIPER_ASSIGN_OR_RETURN(link.name, expect_name());
    if (!is_known_filter(link.name)) {
      return make_error("template line %d: unknown filter '%s'", link.line, link.name.c_str());
    }
    if (is_op("(")) SNIPER_TRY(parse_call_args(link.call));
    return link;
  }

  // `is [not] name [arg | (args)]`, as jinja2 parse_test.
  Result<Link> parse_test() {
    Link link;
    link.kind = LinkKind::kTest;
    link.line = cur().line;
    next();  // is
    link.negated = skip_name("not");
    SNIPER_ASSIGN_OR_RETURN(link.name, expect_name());
    if (!is_known_test(link.name)) {
      return make_error("template line %d: unknown test '%s'", link.line, link.name.c_str());
    }
    if (is_op("(")) {
      SNIPER_TRY(parse_call_args(link.call));
    } else if ((cur().type == TokenType::kName || cur().type == TokenType::kString || cur().type == TokenType::kInt ||
                cur().type == TokenType::kFloat || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) return fail("tests cannot be chained with 'is'");
      DepthGuard guard(&depth_);
      SNIPER_TRY(check_depth());
      SNIPER_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
      SNIPER_TRY(parse_postfix(arg));
      link.call.args.push_back(std::move(arg));
    }
    return link;
  }

  std::vector<Token> tokens_;
  StackGuard stack_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Result<Body> parse_template(std::string_view source) {
  SNIPER_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source, LexerOptions{}));
  Parser parser(std::move(tokens));
  return parser.parse();
}

}  // namespace sniper::jinja
