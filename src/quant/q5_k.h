// SPDX-License-Identifier: MIT
// Q5_K block format (256 elements per block, 176 bytes): x = d * sc * q - dmin * m.
// Layout matches ggml's block_q5_K byte for byte (the GGUF file format depends on it).
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "quant/q8_k.h"

namespace sniper {

constexpr int64_t kQ5_KBlockSize = 256;

struct BlockQ5_K {
  fp16_t d;            // super-block scale for the scales
  fp16_t dmin;         // super-block scale for the mins
  uint8_t scales[12];  // 8 scales and 8 mins of 6 bits, packed
  uint8_t qh[32];      // 5th bit of each quant
  uint8_t qs[128];     // low 4 bits
};
static_assert(sizeof(BlockQ5_K) == 176, "q5_K block must be 176 bytes");

// Quantizes n floats (n % 256 == 0).
void quantize_row_q5_K_ref(const float* x, BlockQ5_K* y, int64_t n);

// Decodes n elements (n % 256 == 0).
void dequantize_row_q5_K_ref(const BlockQ5_K* x, float* y, int64_t n);

// Returns sum_i w[i] * a[i] over n elements, a quantized to q8_K, in float accumulation
// the way ggml's scalar kernel orders it.
float vec_dot_q5_K_q8_K_ref(int64_t n, const BlockQ5_K* w, const BlockQ8_K* a);

}  // namespace sniper
