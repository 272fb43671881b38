// SPDX-License-Identifier: MIT
// Result<T>: an expected-style value-or-error for untrusted input (std::expected is C++23).
// Invariant: a Result holds exactly one of a value or an Error; reading the wrong one is a CHECK failure.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace sniper {

// An error for input we do not trust: the message names the field, the value and the allowed range.
struct Error {
  std::string message;
};

// Builds an Error from a printf-style format.
[[nodiscard]] Error make_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    require_value();
    return std::get<0>(v_);
  }
  const T& value() const& {
    require_value();
    return std::get<0>(v_);
  }
  T&& value() && {
    require_value();
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const {
    if (ok()) {
      std::fprintf(stderr, "Result::error() called on a value\n");
      std::abort();
    }
    return std::get<1>(v_);
  }

 private:
  void require_value() const {
    if (!ok()) {
      std::fprintf(stderr, "Result::value() called on an error: %s\n", std::get<1>(v_).message.c_str());
      std::abort();
    }
  }
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), failed_(true) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool failed_ = false;
};

inline Status ok_status() { return Status(); }

}  // namespace sniper

// Propagates an error from a Result or Status expression; otherwise evaluates to nothing.
#define SNIPER_TRY(expr)                                   \
  do {                                                     \
    auto&& sniper_try_r_ = (expr);                         \
    if (!sniper_try_r_.ok()) return sniper_try_r_.error(); \
  } while (0)

// Declares `lhs` from a Result expression, returning its error on failure.
#define SNIPER_CONCAT_INNER_(a, b) a##b
#define SNIPER_CONCAT_(a, b) SNIPER_CONCAT_INNER_(a, b)
#define SNIPER_ASSIGN_OR_RETURN(lhs, expr) SNIPER_ASSIGN_OR_RETURN_IMPL_(SNIPER_CONCAT_(sniper_r_, __LINE__), lhs, expr)
#define SNIPER_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.error();                  \
  lhs = std::move(tmp).value()
