// SPDX-License-Identifier: MIT
// IQ4_XS block format (256 elements per block, 136 bytes): x = d * (ls - 32) * kIq4nlValues[q].
// Layout matches ggml's block_iq4_xs byte for byte (the GGUF file format depends on it).
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "quant/iq4_values.h"
#include "quant/q8_k.h"

namespace sniper {

constexpr int64_t kIQ4_XSBlockSize = 256;

struct BlockIQ4_XS {
  fp16_t d;             // super-block scale
  uint16_t scales_h;    // high 2 bits of the 8 sub-block scales
  uint8_t scales_l[4];  // low 4 bits of the 8 sub-block scales
  uint8_t qs[128];      // 4-bit indices into kIq4nlValues
};
static_assert(sizeof(BlockIQ4_XS) == 136, "iq4_xs block must be 136 bytes");

// Quantizes n floats (n % 256 == 0).
void quantize_row_iq4_xs_ref(const float* x, BlockIQ4_XS* y, int64_t n);

// Decodes n elements (n % 256 == 0).
void dequantize_row_iq4_xs_ref(const BlockIQ4_XS* x, float* y, int64_t n);

// Returns sum_i w[i] * a[i] over n elements, a quantized to q8_K, in float accumulation
// the way ggml's scalar kernel orders it.
float vec_dot_iq4_xs_q8_K_ref(int64_t n, const BlockIQ4_XS* w, const BlockQ8_K* a);

}  // namespace sniper
