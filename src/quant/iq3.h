// SPDX-License-Identifier: MIT
// The 3-bit i-quant block formats (256 elements per block; ../shared/models/iq/FORMATS.md 4.4-4.5):
//   IQ3_XXS  98 bytes: x = d * (2c+1)/4 * grid4[idx] * signs, 8-bit index per 4 elements, 7-bit
//            sign index per 8 (parity gives the 8th sign), a 4-bit scale c per 32
//   IQ3_S   110 bytes: x = d * (2c+1) * grid4[idx] * signs, 9-bit index per 4, 8 sign bits per 8,
//            a 4-bit scale per 32
// Every index is masked to its table's size, so any byte pattern decodes.
// Layouts match ggml's block_iq3_* byte for byte (the GGUF file format depends on them).
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "quant/q8_k.h"

namespace sniper {

constexpr int64_t kIQ3BlockSize = 256;

struct BlockIQ3_XXS {
  fp16_t d;
  uint8_t qs[96];  // [0, 64): grid index per 4 elements; [64, 96): u32 per 32: 4 x 7-bit signs | scale << 28
};
static_assert(sizeof(BlockIQ3_XXS) == 98, "iq3_xxs block must be 98 bytes");

struct BlockIQ3_S {
  fp16_t d;
  uint8_t qs[64];     // low 8 bits of the grid index per 4 elements
  uint8_t qh[8];      // per 32 elements: bit k = 9th index bit of its k-th group of 4
  uint8_t signs[32];  // sign byte per 8 elements
  uint8_t scales[4];  // 4-bit scale per 32 (low nibble: even sub-block)
};
static_assert(sizeof(BlockIQ3_S) == 110, "iq3_s block must be 110 bytes");

// q[256] = signed grid values, scale16[16] = 2c+1 of each 16 elements (equal in pairs).
// IQ3_XXS element i = d * scale16[i/16] * q[i] / 4; IQ3_S element i = d * scale16[i/16] * q[i].
void decode_iq3_xxs_block(const BlockIQ3_XXS& b, int8_t* q, int* scale16);
void decode_iq3_s_block(const BlockIQ3_S& b, int8_t* q, int* scale16);

void dequantize_row_iq3_xxs_ref(const BlockIQ3_XXS* x, float* y, int64_t n);
void dequantize_row_iq3_s_ref(const BlockIQ3_S* x, float* y, int64_t n);

// Dot against q8_K in the float order of ggml's AVX2 kernels (see iq_scaled.h).
float vec_dot_iq3_xxs_q8_K_ref(int64_t n, const BlockIQ3_XXS* w, const BlockQ8_K* a);
float vec_dot_iq3_s_q8_K_ref(int64_t n, const BlockIQ3_S* w, const BlockQ8_K* a);

}  // namespace sniper
