// SPDX-License-Identifier: MIT
// Q6_K block format (256 elements per block, 210 bytes): x = d * sc * (q - 32).
// Layout matches ggml's block_q6_K byte for byte (the GGUF file format depends on it).
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "quant/q8_k.h"

namespace sniper {

constexpr int64_t kQ6_KBlockSize = 256;

struct BlockQ6_K {
  uint8_t ql[128];    // low 4 bits
  uint8_t qh[64];     // high 2 bits
  int8_t scales[16];  // 8-bit scales, one per 16 elements
  fp16_t d;           // super-block scale
};
static_assert(sizeof(BlockQ6_K) == 210, "q6_K block must be 210 bytes");

// Quantizes n floats (n % 256 == 0).
void quantize_row_q6_K_ref(const float* x, BlockQ6_K* y, int64_t n);

// Decodes n elements (n % 256 == 0).
void dequantize_row_q6_K_ref(const BlockQ6_K* x, float* y, int64_t n);

// Returns sum_i w[i] * a[i] over n elements, a quantized to q8_K, in float accumulation
// the way ggml's scalar kernel orders it.
float vec_dot_q6_K_q8_K_ref(int64_t n, const BlockQ6_K* w, const BlockQ8_K* a);

}  // namespace sniper
