// SPDX-License-Identifier: MIT
// Q2_K block format (256 elements per block, 84 bytes): x = d * sc * q - dmin * m.
// Layout matches ggml's block_q2_K byte for byte (the GGUF file format depends on it).
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "quant/q8_k.h"

namespace sniper {

constexpr int64_t kQ2_KBlockSize = 256;

struct BlockQ2_K {
  uint8_t scales[16];  // per 16 elements: low nibble = scale, high nibble = min (4 bits each)
  uint8_t qs[64];      // 2-bit quants
  fp16_t d;            // super-block scale for the scales
  fp16_t dmin;         // super-block scale for the mins
};
static_assert(sizeof(BlockQ2_K) == 84, "q2_K block must be 84 bytes");

// Quantizes n floats (n % 256 == 0).
void quantize_row_q2_K_ref(const float* x, BlockQ2_K* y, int64_t n);

// Decodes n elements (n % 256 == 0).
void dequantize_row_q2_K_ref(const BlockQ2_K* x, float* y, int64_t n);

// Returns sum_i w[i] * a[i] over n elements, a quantized to q8_K, in float accumulation
// the way ggml's scalar kernel orders it.
float vec_dot_q2_K_q8_K_ref(int64_t n, const BlockQ2_K* w, const BlockQ8_K* a);

}  // namespace sniper
