// SPDX-License-Identifier: MIT
// Q5_0 block format (32 elements per block, 22 bytes): x = d * (q - 16).
// Layout matches ggml's block_q5_0 byte for byte (the GGUF file format depends on it).
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "quant/q8_0.h"

namespace sniper {

constexpr int64_t kQ5_0BlockSize = 32;

struct BlockQ5_0 {
  fp16_t d;        // scale
  uint8_t qh[4];   // bit 4 of each element, little-endian u32: bit j = element j
  uint8_t qs[16];  // low 4 bits, low nibble = element j, high = element j+16
};
static_assert(sizeof(BlockQ5_0) == 22, "q5_0 block must be 22 bytes");

// Quantizes n floats (n % 32 == 0).
void quantize_row_q5_0_ref(const float* x, BlockQ5_0* y, int64_t n);

// Decodes n elements (n % 32 == 0).
void dequantize_row_q5_0_ref(const BlockQ5_0* x, float* y, int64_t n);

// Returns sum_i w[i] * a[i] over n elements, a quantized to q8_0, in float accumulation
// the way ggml's scalar kernel orders it.
float vec_dot_q5_0_q8_0_ref(int64_t n, const BlockQ5_0* w, const BlockQ8_0* a);

}  // namespace sniper
