// SPDX-License-Identifier: MIT
// Python's binary operators on template values (+ - * / // % ** ~), sequence and string
// repetition, and slicing (see jinja_eval.h). Every size is computed with overflow checks and
// charged to the budget before the result is built.
#include <cmath>
#include <optional>

#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_eval.h"
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

}  // namespace

Result<Value> Interpreter::repeat(const Value& seq, int64_t count) {
  const uint64_t n = count < 0 ? 0 : static_cast<uint64_t>(count);
  if (seq.is_string()) {
    const std::string& unit = seq.as_string();
    if (unit.empty() || n == 0) return Value::string("");
    SNIPER_ASSIGN_OR_RETURN(uint64_t total, checked_mul(unit.size(), n, "string repetition"));
    SNIPER_TRY(budget_.string(total));
    // Doubling: O(log n) appends however short the unit.
    std::string s;
    s.reserve(static_cast<size_t>(total));
    s += unit;
    while (s.size() * 2 <= total) s.append(s);
    s.append(s, 0, static_cast<size_t>(total) - s.size());
    return Value::string(std::move(s));
  }
  const List& unit = seq.as_list();
  const bool is_list = seq.kind() == Kind::kList;
  if (unit.empty() || n == 0) return is_list ? Value::list({}) : Value::tuple({});
  SNIPER_ASSIGN_OR_RETURN(uint64_t total, checked_mul(unit.size(), n, "list repetition"));
  SNIPER_TRY(charge_items(total));
  List items;
  items.reserve(static_cast<size_t>(total));
  for (uint64_t i = 0; i < n; ++i) items.insert(items.end(), unit.begin(), unit.end());
  return is_list ? Value::list(std::move(items)) : Value::tuple(std::move(items));
}

Result<Value> Interpreter::eval_binary(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    StringSink sink(budget_);
    SNIPER_TRY(append_str(sink, a));
    SNIPER_TRY(append_str(sink, b));
    return Value::string(sink.take());
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
      StringSink sink(budget_);
      SNIPER_TRY(sink.append(a.as_string()));
      SNIPER_TRY(sink.append(b.as_string()));
      return Value::string(sink.take());
    }
    if (a.is_sequence() && a.kind() == b.kind()) {
      SNIPER_ASSIGN_OR_RETURN(uint64_t n, checked_add(a.as_list().size(), b.as_list().size(), "list concatenation"));
      SNIPER_TRY(charge_items(n));
      List items;
      items.reserve(static_cast<size_t>(n));
      items = a.as_list();
      items.insert(items.end(), b.as_list().begin(), b.as_list().end());
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
      return repeat(seq, count.as_int());
    }
    return type_error("*", a, b);
  }
  if (op == "%" && a.is_string()) return percent_format(budget_, a.as_string(), b);
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
      const int64_t base = a.as_int();
      const int64_t exp = b.as_int();
      if (base == 0) return Value::integer(exp == 0 ? 1 : 0);
      if (base == 1) return Value::integer(1);
      if (base == -1) return Value::integer(exp % 2 == 0 ? 1 : -1);
      // |base| >= 2 overflows within 63 multiplications.
      int64_t r = 1;
      for (int64_t i = 0; i < exp; ++i) {
        if (__builtin_mul_overflow(r, base, &r)) return make_error("integer overflow in **");
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
  int64_t n = 0;
  if (obj.is_string()) {
    SNIPER_TRY(budget_.bytes(obj.as_string().size()));
    n = static_cast<int64_t>(utf8_length(obj.as_string()));
  } else {
    n = static_cast<int64_t>(obj.as_list().size());
  }
  // PySlice_AdjustIndices: lo and hi end in [-1, n].
  auto adjust = [n, st](std::optional<int64_t> v, bool is_start) {
    if (!v) return st > 0 ? (is_start ? int64_t{0} : n) : (is_start ? n - 1 : int64_t{-1});
    int64_t x = *v;
    if (x < 0) {
      x = x < -n ? (st < 0 ? -1 : 0) : x + n;
    } else if (x >= n) {
      x = st < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t lo = adjust(o_start, true);
  const int64_t hi = adjust(o_stop, false);
  // Number of indices lo, lo + st, ... before hi (st > 0) or after it (st < 0).
  const uint64_t step_abs = st > 0 ? static_cast<uint64_t>(st) : static_cast<uint64_t>(-(st + 1)) + 1;
  const int64_t span = st > 0 ? hi - lo : lo - hi;
  const uint64_t count = span > 0 ? (static_cast<uint64_t>(span) - 1) / step_abs + 1 : 0;
  if (obj.is_string()) {
    const std::string& s = obj.as_string();
    if (st == 1) {
      size_t begin = s.size();
      size_t end = s.size();
      size_t len = 0;
      if (count > 0) {
        (void)utf8_at(s, static_cast<uint64_t>(lo), &begin, &len);
        if (!utf8_at(s, static_cast<uint64_t>(hi), &end, &len)) end = s.size();
      }
      SNIPER_TRY(budget_.string(end - begin));
      return Value::string(s.substr(begin, end - begin));
    }
    SNIPER_ASSIGN_OR_RETURN(uint64_t offsets_bytes, checked_mul(static_cast<uint64_t>(n) + 1, 8, "slice"));
    SNIPER_TRY(budget_.bytes(offsets_bytes));
    const std::vector<size_t> off = utf8_offsets(s);
    StringSink out(budget_);
    int64_t i = lo;
    for (uint64_t k = 0; k < count; ++k, i += st) {
      const auto u = static_cast<size_t>(i);
      SNIPER_TRY(out.append(std::string_view(s).substr(off[u], off[u + 1] - off[u])));
    }
    return Value::string(out.take());
  }
  SNIPER_TRY(charge_items(count));
  List items;
  items.reserve(static_cast<size_t>(count));
  int64_t i = lo;
  for (uint64_t k = 0; k < count; ++k, i += st) items.push_back(obj.as_list()[static_cast<size_t>(i)]);
  return obj.kind() == Kind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
}

}  // namespace sniper::jinja
