// SPDX-License-Identifier: MIT
// The render budget and the bounded string builder (see jinja_budget.h).
#include "tokenizer/jinja_budget.h"

#include <pthread.h>

namespace sniper::jinja {

namespace {

// Lowest address of the calling thread's stack, 0 when unknown. Computed once per thread (for
// the main thread glibc reads /proc/self/maps).
uintptr_t stack_low() {
  thread_local const uintptr_t low = [] {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return uintptr_t{0};
    void* addr = nullptr;
    size_t size = 0;
    const int rc = pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    return rc == 0 ? reinterpret_cast<uintptr_t>(addr) : uintptr_t{0};
  }();
  return low;
}

}  // namespace

StackGuard::StackGuard(size_t reserve_bytes) {
  const uintptr_t low = stack_low();
  limit_ = low == 0 ? 0 : low + reserve_bytes;
}

Error StackGuard::error() const {
  return make_error("the template nests too deeply for this thread's stack (it stops %zu KiB before the end)",
                    kDefaultReserve >> 10);
}

Result<uint64_t> checked_add(uint64_t a, uint64_t b, const char* what) {
  uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    return make_error("%s: %llu + %llu does not fit in 64 bits", what, static_cast<unsigned long long>(a),
                      static_cast<unsigned long long>(b));
  }
  return r;
}

Result<uint64_t> checked_mul(uint64_t a, uint64_t b, const char* what) {
  uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    return make_error("%s: %llu * %llu does not fit in 64 bits", what, static_cast<unsigned long long>(a),
                      static_cast<unsigned long long>(b));
  }
  return r;
}

Budget::Budget(const Limits& limits) : limits_(limits) {
  const int64_t ms = limits_.max_time_ms > 0 ? limits_.max_time_ms : 0;
  deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
}

Status Budget::fail(Error e) {
  if (!failed_) {
    failed_ = true;
    error_ = std::move(e);
  }
  return error_;
}

Status Budget::poll() {
  if (failed_) return error_;
  if (limits_.cancel != nullptr && limits_.cancel->load(std::memory_order_relaxed)) {
    return fail(make_error("the render was cancelled"));
  }
  if (std::chrono::steady_clock::now() > deadline_) {
    return fail(
        make_error("the template exceeded its time limit of %lld ms", static_cast<long long>(limits_.max_time_ms)));
  }
  return ok_status();
}

Status Budget::work(int64_t n) {
  if (failed_) return error_;
  if (n < 0 || n > limits_.max_work - work_) {
    work_ = limits_.max_work;
    return fail(make_error("the template exceeded its work limit of %lld loop iterations, items and calls",
                           static_cast<long long>(limits_.max_work)));
  }
  work_ += n;
  return ok_status();
}

Status Budget::steps(int64_t n) {
  if (failed_) return error_;
  if (n < 0 || n > limits_.max_steps - steps_) {
    steps_ = limits_.max_steps;
    return fail(make_error("the template exceeded its limit of %lld evaluation steps",
                           static_cast<long long>(limits_.max_steps)));
  }
  steps_ += n;
  if (steps_ >= next_poll_steps_) {
    next_poll_steps_ = steps_ + kPollSteps;
    return poll();
  }
  return ok_status();
}

Status Budget::bytes(uint64_t n) {
  if (failed_) return error_;
  if (n > limits_.max_total_bytes - bytes_) {
    bytes_ = limits_.max_total_bytes;
    return fail(make_error("the template exceeded its limit of %llu bytes built, copied or scanned",
                           static_cast<unsigned long long>(limits_.max_total_bytes)));
  }
  bytes_ += n;
  if (bytes_ >= next_poll_bytes_) {
    next_poll_bytes_ = bytes_ + kPollBytes;
    return poll();
  }
  return ok_status();
}

Status Budget::check_string(uint64_t n) const {
  if (failed_) return error_;
  if (n > limits_.max_string_bytes) {
    return make_error("a string of %llu bytes exceeds the template limit of %llu bytes",
                      static_cast<unsigned long long>(n), static_cast<unsigned long long>(limits_.max_string_bytes));
  }
  return ok_status();
}

Status Budget::string(uint64_t n) {
  if (auto st = check_string(n); !st.ok()) return fail(st.error());
  return bytes(n);
}

Status Budget::check_stack() {
  if (failed_) return error_;
  if (!stack_.ok()) return fail(stack_.error());
  return ok_status();
}

Status Budget::enter() {
  ++nesting_;
  if (nesting_ > max_nesting_seen_) max_nesting_seen_ = nesting_;
  if (failed_) return error_;
  if (!stack_.ok()) return fail(stack_.error());
  if (nesting_ > limits_.max_nesting) {
    return fail(make_error("the template nests statements, expressions and calls deeper than the limit of %d",
                           limits_.max_nesting));
  }
  return ok_status();
}

Status StringSink::append(std::string_view s) {
  if (budget_.failed()) return budget_.error();
  SNIPER_ASSIGN_OR_RETURN(uint64_t n, checked_add(out_.size(), s.size(), "string length"));
  SNIPER_TRY(budget_.check_string(n));
  SNIPER_TRY(budget_.bytes(s.size()));
  out_.append(s);
  return ok_status();
}

Status StringSink::append_n(uint64_t n, char c) {
  if (budget_.failed()) return budget_.error();
  SNIPER_ASSIGN_OR_RETURN(uint64_t total, checked_add(out_.size(), n, "string length"));
  SNIPER_TRY(budget_.check_string(total));
  SNIPER_TRY(budget_.bytes(n));
  out_.append(static_cast<size_t>(n), c);
  return ok_status();
}

}  // namespace sniper::jinja
