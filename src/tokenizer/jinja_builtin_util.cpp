// SPDX-License-Identifier: MIT
// What the built-ins share (see jinja_builtins.h): argument binding and checking, and the
// helpers that build strings and lists only after charging the render's budget for them.
#include <algorithm>
#include <functional>

#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_eval.h"
#include "tokenizer/jinja_string.h"

namespace sniper::jinja {

Result<std::vector<Value>> bind_args(std::string_view fn, const CallArgs& call, std::initializer_list<Param> params) {
  std::vector<Value> out;
  std::vector<bool> set(params.size(), false);
  if (call.args.size() > params.size()) {
    return make_error("%.*s takes at most %zu argument(s), %zu given", static_cast<int>(fn.size()), fn.data(),
                      params.size(), call.args.size());
  }
  for (const Param& p : params) out.push_back(p.def);
  for (size_t i = 0; i < call.args.size(); ++i) {
    out[i] = call.args[i];
    set[i] = true;
  }
  for (const auto& [k, v] : call.kwargs) {
    size_t i = 0;
    for (const Param& p : params) {
      if (p.name == k) break;
      ++i;
    }
    if (i == params.size()) {
      return make_error("%.*s got an unexpected keyword argument '%s'", static_cast<int>(fn.size()), fn.data(),
                        k.c_str());
    }
    if (set[i]) {
      return make_error("%.*s got multiple values for argument '%s'", static_cast<int>(fn.size()), fn.data(),
                        k.c_str());
    }
    out[i] = v;
    set[i] = true;
  }
  size_t i = 0;
  for (const Param& p : params) {
    if (p.required && !set[i]) {
      return make_error("%.*s is missing its required argument '%.*s'", static_cast<int>(fn.size()), fn.data(),
                        static_cast<int>(p.name.size()), p.name.data());
    }
    ++i;
  }
  return out;
}

Result<int64_t> int_arg(std::string_view fn, std::string_view param, const Value& v) {
  if (v.is_int() || v.is_bool()) return v.as_int();
  return make_error("%.*s: argument '%.*s' must be an integer, got %s %s", static_cast<int>(fn.size()), fn.data(),
                    static_cast<int>(param.size()), param.data(), type_name(v).c_str(), brief(v).c_str());
}

Result<std::string_view> string_arg(std::string_view fn, std::string_view param, const Value& v) {
  if (v.is_string()) return std::string_view(v.as_string());
  return make_error("%.*s: argument '%.*s' must be a string, got %s", static_cast<int>(fn.size()), fn.data(),
                    static_cast<int>(param.size()), param.data(), type_name(v).c_str());
}

Result<Value> build_string(Budget& budget, uint64_t size, const std::function<std::string()>& build) {
  SNIPER_TRY(budget.string(size));
  return Value::string(build());
}

Result<Value> case_mapped(Interpreter& in, const Value& v, std::string (*map)(std::string_view)) {
  SNIPER_ASSIGN_OR_RETURN(Value s, in.str(v));
  const std::string& text = s.as_string();
  return build_string(in.budget(), text.size(), [&] { return map(text); });
}

Result<Value> replace_in(Interpreter& in, const std::string& s, std::string_view old, std::string_view repl,
                         int64_t count) {
  Budget& budget = in.budget();
  SNIPER_TRY(budget.bytes(s.size()));
  const uint64_t hits = py_replace_count(s, old, count);
  // Size of the result: len(s) + hits * (len(repl) - len(old)), in checked arithmetic.
  uint64_t size = s.size();
  if (repl.size() >= old.size()) {
    SNIPER_ASSIGN_OR_RETURN(uint64_t grow, checked_mul(hits, repl.size() - old.size(), "replace"));
    SNIPER_ASSIGN_OR_RETURN(size, checked_add(size, grow, "replace"));
  } else {
    size -= hits * (old.size() - repl.size());  // hits * len(old) <= len(s): no wrap
  }
  return build_string(budget, size, [&] { return py_replace(s, old, repl, count); });
}

Result<Value> strip_text(Interpreter& in, const Value& v, const Value& chars_arg, const char* fn, bool left,
                         bool right) {
  SNIPER_ASSIGN_OR_RETURN(Value s, in.str(v));
  const std::string& text = s.as_string();
  std::string chars;
  if (!chars_arg.is_none()) {
    SNIPER_ASSIGN_OR_RETURN(std::string_view c, string_arg(fn, "chars", chars_arg));
    SNIPER_TRY(in.budget().bytes(c.size() * 4));  // the set of code points built from it
    chars = std::string(c);
  }
  SNIPER_TRY(in.budget().bytes(text.size()));
  const std::string_view out = py_strip_view(text, chars_arg.is_none() ? nullptr : &chars, left, right);
  if (out.size() == text.size()) return s;
  return build_string(in.budget(), out.size(), [&] { return std::string(out); });
}

Result<size_t> parts_allowed(Interpreter& in) {
  const Budget& b = in.budget();
  const int64_t work_left = std::max<int64_t>(0, b.limits().max_work - b.work_used());
  const uint64_t bytes_left =
      b.limits().max_total_bytes > b.bytes_used() ? b.limits().max_total_bytes - b.bytes_used() : 0;
  return static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(work_left), bytes_left / kItemBytes));
}

Result<Value> parts_to_list(Interpreter& in, const std::vector<std::string_view>& parts) {
  SNIPER_TRY(in.charge_items(parts.size()));
  List out;
  out.reserve(parts.size());
  for (std::string_view part : parts) {
    SNIPER_TRY(in.budget().bytes(part.size()));
    out.push_back(Value::string(std::string(part)));
  }
  return Value::list(std::move(out));
}

Error too_many_parts(const char* fn) {
  return make_error("%s: the result would have more items than the template's work limit allows", fn);
}

Result<Value> dict_items(Interpreter& in, const Value& v) {
  const Dict& d = v.as_dict();
  SNIPER_TRY(in.charge_items(d.items.size() * 3));  // the list's items and the pairs
  List items;
  items.reserve(d.items.size());
  for (const auto& [k, val] : d.items) {
    SNIPER_TRY(in.budget().bytes(k.size()));
    items.push_back(Value::tuple({Value::string(k), val}));
  }
  return Value::list(std::move(items));
}

}  // namespace sniper::jinja
