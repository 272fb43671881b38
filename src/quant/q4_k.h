// SPDX-License-Identifier: MIT
// Q4_K block format (256 elements per block, 144 bytes): x = d * sc * q - dmin * m.
// Layout matches ggml's block_q4_K byte for byte (the GGUF file format depends on it).
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "quant/q8_k.h"

namespace sniper {

constexpr int64_t kQ4_KBlockSize = 256;

struct BlockQ4_K {
  fp16_t d;            // super-block scale for the scales
  fp16_t dmin;         // super-block scale for the mins
  uint8_t scales[12];  // 8 scales and 8 mins of 6 bits, packed
  uint8_t qs[128];     // 4-bit quants
};
static_assert(sizeof(BlockQ4_K) == 144, "q4_K block must be 144 bytes");

// Quantizes n floats (n % 256 == 0).
void quantize_row_q4_K_ref(const float* x, BlockQ4_K* y, int64_t n);

// Decodes n elements (n % 256 == 0).
void dequantize_row_q4_K_ref(const BlockQ4_K* x, float* y, int64_t n);

// Returns sum_i w[i] * a[i] over n elements, a quantized to q8_K, in float accumulation
// the way ggml's scalar kernel orders it.
float vec_dot_q4_K_q8_K_ref(int64_t n, const BlockQ4_K* w, const BlockQ8_K* a);

}  // namespace sniper
