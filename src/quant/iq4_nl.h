// SPDX-License-Identifier: MIT
// IQ4_NL block format (32 elements per block, 18 bytes): x = d * kIq4nlValues[q].
// Layout matches ggml's block_iq4_nl byte for byte (the GGUF file format depends on it).
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "quant/iq4_values.h"
#include "quant/q8_0.h"

namespace sniper {

constexpr int64_t kIQ4_NLBlockSize = 32;

struct BlockIQ4_NL {
  fp16_t d;        // scale
  uint8_t qs[16];  // 4-bit indices into kIq4nlValues; low nibble = element j, high = j+16
};
static_assert(sizeof(BlockIQ4_NL) == 18, "iq4_nl block must be 18 bytes");

// Quantizes n floats (n % 32 == 0).
void quantize_row_iq4_nl_ref(const float* x, BlockIQ4_NL* y, int64_t n);

// Decodes n elements (n % 32 == 0).
void dequantize_row_iq4_nl_ref(const BlockIQ4_NL* x, float* y, int64_t n);

// Returns sum_i w[i] * a[i] over n elements, a quantized to q8_0, in float accumulation
// the way ggml's scalar kernel orders it.
float vec_dot_iq4_nl_q8_0_ref(int64_t n, const BlockIQ4_NL* w, const BlockQ8_0* a);
// The same dot in the order of ggml's single-row AVX2 kernel (ggml_vec_dot_iq4_nl_q8_0, which
// flash attention calls per KV cell): pairs of blocks into two 8-lane accumulators (even blocks
// in one, odd in the other), summed lane-wise and reduced; an odd last block added as
// fma(d, sum, total).
float vec_dot_iq4_nl_q8_0_row_ref(int64_t n, const BlockIQ4_NL* w, const BlockQ8_0* a);

}  // namespace sniper
