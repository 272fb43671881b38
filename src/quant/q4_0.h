// SPDX-License-Identifier: MIT
// Q4_0 block format (32 elements per block, 18 bytes): x = d * (q - 8).
// Layout matches ggml's block_q4_0 byte for byte (the GGUF file format depends on it).
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "quant/q8_0.h"

namespace sniper {

constexpr int64_t kQ4_0BlockSize = 32;

struct BlockQ4_0 {
  fp16_t d;        // scale
  uint8_t qs[16];  // nibbles: element j in low nibble of qs[j], element j+16 in the high nibble
};
static_assert(sizeof(BlockQ4_0) == 18, "q4_0 block must be 18 bytes");

// Quantizes n floats (n % 32 == 0).
void quantize_row_q4_0_ref(const float* x, BlockQ4_0* y, int64_t n);

// Decodes n elements (n % 32 == 0).
void dequantize_row_q4_0_ref(const BlockQ4_0* x, float* y, int64_t n);

// Returns sum_i w[i] * a[i] over n elements, a quantized to q8_0, in float accumulation
// the way ggml's scalar kernel orders it.
float vec_dot_q4_0_q8_0_ref(int64_t n, const BlockQ4_0* w, const BlockQ8_0* a);

}  // namespace sniper
