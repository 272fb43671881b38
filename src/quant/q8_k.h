// SPDX-License-Identifier: MIT
// Q8_K block format (256 elements per block, 292 bytes): x = d * q (activation format for the K-quants and IQ4_XS).
// Layout matches ggml's block_q8_K byte for byte (the GGUF file format depends on it).
#pragma once

#include <cstdint>

#include "base/fp16.h"

namespace sniper {

constexpr int64_t kQ8_KBlockSize = 256;

struct BlockQ8_K {
  float d;            // scale (float, not half)
  int8_t qs[256];     // quants
  int16_t bsums[16];  // sum of qs in each group of 16
};
static_assert(sizeof(BlockQ8_K) == 292, "q8_K block must be 292 bytes");

// Quantizes n floats (n % 256 == 0). Bit-identical to ggml's quantize_row_q8_K_ref.
void quantize_row_q8_K_ref(const float* x, BlockQ8_K* y, int64_t n);

// Decodes n elements (n % 256 == 0).
void dequantize_row_q8_K_ref(const BlockQ8_K* x, float* y, int64_t n);

}  // namespace sniper
