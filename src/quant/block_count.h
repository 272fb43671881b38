// SPDX-License-Identifier: MIT
// Row-length check shared by every codec in this folder.
#pragma once

#include <cstdint>

#include "base/check.h"

namespace sniper {

// Returns n / block_size. CHECKs n >= 0 and n % block_size == 0 (a caller bug otherwise:
// tensor shapes from files are validated against block sizes before they reach a codec).
inline int64_t block_count(int64_t n, int64_t block_size, const char* codec) {
  CHECK(n >= 0 && n % block_size == 0, "%s: n=%lld is not a non-negative multiple of %lld", codec,
        static_cast<long long>(n), static_cast<long long>(block_size));
  return n / block_size;
}

}  // namespace sniper
