// SPDX-License-Identifier: MIT
// Q3_K block format (256 elements per block, 110 bytes): x = d * (sc - 32) * (q - 4 * !hbit).
// Layout matches ggml's block_q3_K byte for byte (the GGUF file format depends on it).
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "quant/q8_k.h"

namespace sniper {

constexpr int64_t kQ3_KBlockSize = 256;

struct BlockQ3_K {
  uint8_t hmask[32];   // high bit of each 3-bit quant
  uint8_t qs[64];      // low 2 bits
  uint8_t scales[12];  // 16 scales of 6 bits, packed
  fp16_t d;            // super-block scale
};
static_assert(sizeof(BlockQ3_K) == 110, "q3_K block must be 110 bytes");

// Quantizes n floats (n % 256 == 0).
void quantize_row_q3_K_ref(const float* x, BlockQ3_K* y, int64_t n);

// Decodes n elements (n % 256 == 0).
void dequantize_row_q3_K_ref(const BlockQ3_K* x, float* y, int64_t n);

// Returns sum_i w[i] * a[i] over n elements, a quantized to q8_K, in float accumulation
// the way ggml's scalar kernel orders it.
float vec_dot_q3_K_q8_K_ref(int64_t n, const BlockQ3_K* w, const BlockQ8_K* a);

}  // namespace sniper
