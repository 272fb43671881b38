// SPDX-License-Identifier: MIT
// CHECK for invariants (programmer bugs): always compiled in, prints file:line and aborts.
// DCHECK is for hot loops only and vanishes with NDEBUG. Never use these for untrusted input.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace sniper {
[[noreturn]] void check_failed(const char* file, int line, const char* cond, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
[[noreturn]] void check_failed(const char* file, int line, const char* cond);
}  // namespace sniper

#define CHECK(cond, ...)                                                                                            \
  do {                                                                                                              \
    if (__builtin_expect(!(cond), 0)) ::sniper::check_failed(__FILE__, __LINE__, #cond __VA_OPT__(, ) __VA_ARGS__); \
  } while (0)

#ifdef NDEBUG
#define DCHECK(cond, ...) \
  do {                    \
  } while (0)
#else
#define DCHECK(cond, ...) CHECK(cond, __VA_ARGS__)
#endif
