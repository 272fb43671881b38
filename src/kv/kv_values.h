// SPDX-License-Identifier: MIT
// Checks of KV cache bytes that come from outside (saved contexts): every value a cache of the
// type would read back must be finite. f16 and bf16 values are checked one by one; a block type
// (q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1) holds small integers, all of which are valid, and f16
// scales (d, and m for q4_1 / q5_1), which must be finite: a NaN or infinite scale makes every
// value of its block non-finite. One NaN in a context's KV rows turns every later attention
// output it reaches into NaN (issue 40 finding 6). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kv/kv_cache.h"

namespace sniper {

// The index of the first value in data[0, n_values) (values of `type`, in rows of whole
// blocks) that is not finite, its block's first value for a block type; -1 when all are finite.
// Preconditions: data holds kv_values_bytes(type, n_values) bytes; n_values is a multiple of 32
// for block types.
int64_t first_non_finite_kv_value(const uint8_t* data, int64_t n_values, KvType type);

// Bytes of n_values values of `type` (whole blocks).
size_t kv_values_bytes(KvType type, int64_t n_values);

}  // namespace sniper
