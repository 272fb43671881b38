// SPDX-License-Identifier: MIT
// Q8_0 block format (32 elements per block, 34 bytes): x = d * q.
// Layout matches ggml's block_q8_0 byte for byte (the GGUF file format depends on it).
#pragma once

#include <cstdint>

#include "base/fp16.h"

namespace sniper {

constexpr int64_t kQ8_0BlockSize = 32;

struct BlockQ8_0 {
  fp16_t d;       // scale = max|x| / 127
  int8_t qs[32];  // x = d * q
};
static_assert(sizeof(BlockQ8_0) == 34, "q8_0 block must be 34 bytes");

// Quantizes n floats (n % 32 == 0). Bit-identical to ggml's quantize_row_q8_0_ref.
void quantize_row_q8_0_ref(const float* x, BlockQ8_0* y, int64_t n);

// The activation quantizer llama.cpp's x86 CPU backend runs (the AVX2 branch of ggml's
// quantize_row_q8_0, which is what Q4_0/Q5_0/Q8_0/IQ4_NL matmuls consume): d = max|x| / 127,
// q = round-half-to-even(x * (127 / max|x|)) with x86 conversion/saturation semantics
// (quant/rounding.h round_even_sat_i8). Differs from quantize_row_q8_0_ref (the weight
// quantizer: x * (1/d), roundf) in rare last-ulp ties. n % 32 == 0.
void quantize_act_q8_0_ref(const float* x, BlockQ8_0* y, int64_t n);

// Decodes n elements (n % 32 == 0).
void dequantize_row_q8_0_ref(const BlockQ8_0* x, float* y, int64_t n);

// Returns sum_i w[i] * a[i] over n elements (Q8_0 weights times Q8_0 activations) in the order
// of ggml's AVX2 kernel (and tinyBLAS): per block, 8 int32 lanes of 4 consecutive products,
// each FMA'd with d_w * d_a into 8 float lanes; then hsum_float_8.
float vec_dot_q8_0_q8_0_ref(int64_t n, const BlockQ8_0* w, const BlockQ8_0* a);

}  // namespace sniper
