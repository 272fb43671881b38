// SPDX-License-Identifier: MIT
// Q4_1 block format (32 elements per block, 20 bytes): x = d * q + m.
// Layout matches ggml's block_q4_1 byte for byte (the GGUF file format depends on it).
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "quant/q8_1.h"

namespace sniper {

constexpr int64_t kQ4_1BlockSize = 32;

struct BlockQ4_1 {
  fp16_t d;        // scale
  fp16_t m;        // minimum
  uint8_t qs[16];  // nibbles, low = element j, high = element j+16
};
static_assert(sizeof(BlockQ4_1) == 20, "q4_1 block must be 20 bytes");

// Quantizes n floats (n % 32 == 0).
void quantize_row_q4_1_ref(const float* x, BlockQ4_1* y, int64_t n);

// Decodes n elements (n % 32 == 0).
void dequantize_row_q4_1_ref(const BlockQ4_1* x, float* y, int64_t n);

// Returns sum_i w[i] * a[i] over n elements, a quantized to q8_1, in float accumulation
// the way ggml's scalar kernel orders it.
float vec_dot_q4_1_q8_1_ref(int64_t n, const BlockQ4_1* w, const BlockQ8_1* a);

}  // namespace sniper
