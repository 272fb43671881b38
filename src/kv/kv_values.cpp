// SPDX-License-Identifier: MIT
#include "kv/kv_values.h"

#include <cstring>

#include "base/check.h"
#include "gguf/format.h"

namespace sniper {

namespace {

constexpr int64_t kBlock = 32;  // values per block of every KV block type

bool f16_finite(uint16_t h) { return (h & 0x7C00u) != 0x7C00u; }   // exponent all ones: inf or NaN
bool bf16_finite(uint16_t h) { return (h & 0x7F80u) != 0x7F80u; }  // the same for bf16

uint16_t u16_at(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Scales of a block type: how many f16 (at offsets 0 and 2).
int block_scales(KvType type) {
  switch (type) {
    case KvType::kQ4_1:
    case KvType::kQ5_1: return 2;  // d and m
    default: return 1;             // d
  }
}

}  // namespace

size_t kv_values_bytes(KvType type, int64_t n_values) { return row_bytes(kv_ggml_type(type), n_values); }

int64_t first_non_finite_kv_value(const uint8_t* data, int64_t n_values, KvType type) {
  if (type == KvType::kF16 || type == KvType::kBF16) {
    const bool bf16 = type == KvType::kBF16;
    for (int64_t i = 0; i < n_values; ++i) {
      const uint16_t h = u16_at(data + 2 * i);
      if (!(bf16 ? bf16_finite(h) : f16_finite(h))) return i;
    }
    return -1;
  }
  CHECK(n_values % kBlock == 0, "first_non_finite_kv_value: %lld values of a block type",
        static_cast<long long>(n_values));
  const size_t block_bytes = kv_values_bytes(type, kBlock);
  const int scales = block_scales(type);
  for (int64_t b = 0; b < n_values / kBlock; ++b) {
    const uint8_t* block = data + block_bytes * static_cast<size_t>(b);
    for (int s = 0; s < scales; ++s) {
      if (!f16_finite(u16_at(block + 2 * s))) return b * kBlock;
    }
  }
  return -1;
}

}  // namespace sniper
