// SPDX-License-Identifier: MIT
// Q5_1 block format (32 elements per block, 24 bytes): x = d * q + m.
// Layout matches ggml's block_q5_1 byte for byte (the GGUF file format depends on it).
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "quant/q8_1.h"

namespace sniper {

constexpr int64_t kQ5_1BlockSize = 32;

struct BlockQ5_1 {
  fp16_t d;        // scale
  fp16_t m;        // minimum
  uint8_t qh[4];   // bit 4 of each element (u32 little-endian, bit j = element j)
  uint8_t qs[16];  // low 4 bits
};
static_assert(sizeof(BlockQ5_1) == 24, "q5_1 block must be 24 bytes");

// Quantizes n floats (n % 32 == 0).
void quantize_row_q5_1_ref(const float* x, BlockQ5_1* y, int64_t n);

// Decodes n elements (n % 32 == 0).
void dequantize_row_q5_1_ref(const BlockQ5_1* x, float* y, int64_t n);

// Returns sum_i w[i] * a[i] over n elements, a quantized to q8_1, in float accumulation
// the way ggml's scalar kernel orders it.
float vec_dot_q5_1_q8_1_ref(int64_t n, const BlockQ5_1* w, const BlockQ8_1* a);

}  // namespace sniper
