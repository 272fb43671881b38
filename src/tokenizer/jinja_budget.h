// SPDX-License-Identifier: MIT
// Budget: the limits of one template render and what the render has spent of them, and
// StringSink, which builds a string within them. Every piece of work a template can make the
// interpreter do is charged here before it is done: loop items and list items built (work),
// statements executed, expressions evaluated and value nodes compared or printed (steps), bytes
// of strings built, copied or scanned (bytes), the size of any one string, the depth of nested
// evaluation, wall time and an external cancel flag. Sizes are added and multiplied with
// overflow checks (checked_add, checked_mul), so a huge count is an error, never a wrap-around.
// Invariants: once a limit is exceeded the budget stays failed and every later charge returns the
// same error, so code that cannot return an error at once (a sort comparator) stops at the next
// check. Errors name the limit and its value. The clock and the cancel flag are polled every
// kPollSteps steps and on every large byte charge, so a render stops within milliseconds of a
// cancel. Not thread-safe (one render, one thread); the cancel flag may be set from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace sniper::jinja {

struct Limits {
  int64_t max_work = 10'000'000;              // loop items, list items built, and 10 per call
  int64_t max_steps = 50'000'000;             // statements, expressions, value nodes compared/printed
  int max_call_depth = 64;                    // nested macro/function calls
  int max_nesting = 400;                      // statements, expressions and calls active at once
  uint64_t max_string_bytes = 64ull << 20;    // any one string, the output included
  uint64_t max_total_bytes = 512ull << 20;    // bytes built, copied or scanned, summed over the render
  int64_t max_time_ms = 30'000;               // wall clock of the render
  const std::atomic<bool>* cancel = nullptr;  // set (by another thread) -> the render stops
};

// Where the current thread's stack ends, so that recursion can stop with an error before it
// overflows whatever the frame sizes (sanitizers, optimisation levels) and the thread's stack
// size. Every recursive path of the parser, the interpreter and the value walkers checks it, on
// top of their depth counters. The bounds come from pthread_getattr_np, once per thread.
class StackGuard {
 public:
  // `reserve_bytes`: stack that must stay free below the deepest checked frame (the unchecked
  // leaf calls below it: formatting, allocation, libc).
  explicit StackGuard(size_t reserve_bytes = kDefaultReserve);
  // False once the caller's frame is within reserve_bytes of the end of the stack (always true
  // when the stack bounds are unknown).
  bool ok() const { return reinterpret_cast<uintptr_t>(__builtin_frame_address(0)) > limit_; }
  // The error a failed ok() reports.
  Error error() const;

  static constexpr size_t kDefaultReserve = 128u << 10;

 private:
  uintptr_t limit_ = 0;
};

// Approximate bytes one list item, dict entry or scope costs besides its payload, charged when
// containers are built so that their memory counts against max_total_bytes.
inline constexpr uint64_t kItemBytes = 96;

// a + b and a * b, or an Error naming `what` when the result does not fit 64 bits.
[[nodiscard]] Result<uint64_t> checked_add(uint64_t a, uint64_t b, const char* what);
[[nodiscard]] Result<uint64_t> checked_mul(uint64_t a, uint64_t b, const char* what);

class Budget {
 public:
  explicit Budget(const Limits& limits);

  const Limits& limits() const { return limits_; }

  // Each fails once its limit is passed (and from then on, as does every other charge).
  [[nodiscard]] Status work(int64_t n);
  [[nodiscard]] Status steps(int64_t n);
  [[nodiscard]] Status bytes(uint64_t n);
  // A string of n bytes may be built: n <= max_string_bytes, and n is charged to bytes().
  [[nodiscard]] Status string(uint64_t n);
  // n <= max_string_bytes (nothing charged; for strings already paid for).
  [[nodiscard]] Status check_string(uint64_t n) const;
  // Checks the clock and the cancel flag now.
  [[nodiscard]] Status poll();

  // Nesting of active evaluation (RAII through Nest). Fails past max_nesting, or when the
  // thread's stack is nearly used up.
  [[nodiscard]] Status enter();
  void leave() { --nesting_; }
  // Fails when the thread's stack is nearly used up (for recursion that is not nesting).
  [[nodiscard]] Status check_stack();

  bool failed() const { return failed_; }
  // The error that failed the budget (valid when failed()).
  const Error& error() const { return error_; }

  int64_t work_used() const { return work_; }
  int64_t steps_used() const { return steps_; }
  uint64_t bytes_used() const { return bytes_; }
  int max_nesting_seen() const { return max_nesting_seen_; }

 private:
  static constexpr int64_t kPollSteps = 4096;
  static constexpr uint64_t kPollBytes = 1u << 20;

  Status fail(Error e);

  Limits limits_;
  StackGuard stack_;
  std::chrono::steady_clock::time_point deadline_;
  int64_t work_ = 0;
  int64_t steps_ = 0;
  uint64_t bytes_ = 0;
  int64_t next_poll_steps_ = kPollSteps;
  uint64_t next_poll_bytes_ = kPollBytes;
  int nesting_ = 0;
  int max_nesting_seen_ = 0;
  bool failed_ = false;
  Error error_;
};

// Holds one level of nesting while alive; check ok() before going on.
class Nest {
 public:
  explicit Nest(Budget& b) : budget_(b), status_(b.enter()) {}
  ~Nest() { budget_.leave(); }
  Nest(const Nest&) = delete;
  Nest& operator=(const Nest&) = delete;
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

 private:
  Budget& budget_;
  Status status_;
};

// Builds one string within a Budget: every append first checks that the string stays within
// max_string_bytes and charges its bytes, then copies them. Thread-compatible.
class StringSink {
 public:
  explicit StringSink(Budget& budget) : budget_(budget) {}
  [[nodiscard]] Status append(std::string_view s);
  [[nodiscard]] Status append(char c) { return append(std::string_view(&c, 1)); }
  [[nodiscard]] Status append_n(uint64_t n, char c);
  size_t size() const { return out_.size(); }
  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }
  Budget& budget() { return budget_; }

 private:
  Budget& budget_;
  std::string out_;
};

}  // namespace sniper::jinja
