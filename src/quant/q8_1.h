// SPDX-License-Identifier: MIT
// Q8_1 block format (32 elements per block, 36 bytes): x = d * q; s caches d * sum(q) for the Q4_1/Q5_1 min term.
// Layout matches ggml's block_q8_1 byte for byte (the GGUF file format depends on it).
#pragma once

#include <cstdint>

#include "base/fp16.h"

namespace sniper {

constexpr int64_t kQ8_1BlockSize = 32;

struct BlockQ8_1 {
  fp16_t d;  // scale = max|x| / 127
  fp16_t s;  // d * sum(qs)
  int8_t qs[32];
};
static_assert(sizeof(BlockQ8_1) == 36, "q8_1 block must be 36 bytes");

// Quantizes n floats (n % 32 == 0). Bit-identical to ggml's quantize_row_q8_1_ref.
void quantize_row_q8_1_ref(const float* x, BlockQ8_1* y, int64_t n);

// Decodes n elements (n % 32 == 0).
// The activation quantizer ggml's x86 CPU backend runs (AVX2 branch of quantize_row_q8_1):
// as quantize_act_q8_0_ref, plus s = f16(d * sum(q)) with the f32 d. n % 32 == 0.
void quantize_act_q8_1_ref(const float* x, BlockQ8_1* y, int64_t n);

void dequantize_row_q8_1_ref(const BlockQ8_1* x, float* y, int64_t n);

}  // namespace sniper
