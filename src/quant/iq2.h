// SPDX-License-Identifier: MIT
// The 2-bit i-quant block formats (256 elements per block; ../shared/models/iq/FORMATS.md 4.1-4.3):
//   IQ2_XXS  66 bytes: x = d * (2c+1)/8 * grid[8] * signs, one 4-bit scale c per 32 elements
//   IQ2_XS   74 bytes: as IQ2_XXS with a 9-bit grid index per 8 and a 4-bit scale per 16
//   IQ2_S    82 bytes: 10-bit grid index per 8, 8 explicit sign bits, a 4-bit scale per 16
// The grids are unsigned magnitudes {8, 25, 43}; signs negate single elements. Every grid and
// sign index is masked to its table's size, so any byte pattern decodes (no bounds to check).
// Layouts match ggml's block_iq2_* byte for byte (the GGUF file format depends on them).
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "quant/q8_k.h"

namespace sniper {

constexpr int64_t kIQ2BlockSize = 256;

struct BlockIQ2_XXS {
  fp16_t d;
  uint16_t qs[32];  // per 32 elements: 4 grid bytes, then a u32 of 4 x 7-bit signs + 4-bit scale
};
static_assert(sizeof(BlockIQ2_XXS) == 66, "iq2_xxs block must be 66 bytes");

struct BlockIQ2_XS {
  fp16_t d;
  uint16_t qs[32];    // per 8 elements: 9-bit grid index | 7-bit sign index << 9
  uint8_t scales[8];  // per 32 elements: low nibble for the first 16, high nibble for the second
};
static_assert(sizeof(BlockIQ2_XS) == 74, "iq2_xs block must be 74 bytes");

struct BlockIQ2_S {
  fp16_t d;
  uint8_t qs[64];     // [0, 32): low 8 bits of the grid index per 8; [32, 64): sign bytes per 8
  uint8_t qh[8];      // per 32 elements: 2 high index bits per group of 8
  uint8_t scales[8];  // as IQ2_XS
};
static_assert(sizeof(BlockIQ2_S) == 82, "iq2_s block must be 82 bytes");

// Block decoders shared by the codecs and the SIMD kernels' tests: q[256] = signed grid values
// (the integers the dot product multiplies), scale16[16] = the odd scale 2c+1 of each 16 elements.
// Element i of the block decodes to d * scale16[i/16] * q[i] / 8.
void decode_iq2_xxs_block(const BlockIQ2_XXS& b, int8_t* q, int* scale16);
void decode_iq2_xs_block(const BlockIQ2_XS& b, int8_t* q, int* scale16);
void decode_iq2_s_block(const BlockIQ2_S& b, int8_t* q, int* scale16);

// Decode n elements (n % 256 == 0).
void dequantize_row_iq2_xxs_ref(const BlockIQ2_XXS* x, float* y, int64_t n);
void dequantize_row_iq2_xs_ref(const BlockIQ2_XS* x, float* y, int64_t n);
void dequantize_row_iq2_s_ref(const BlockIQ2_S* x, float* y, int64_t n);

// Returns sum_i w[i] * a[i] over n elements (n % 256 == 0), a quantized to q8_K, in the float
// order of ggml's AVX2 kernels (8 int32 lanes per block FMA'd with d, then 0.125 * hsum8).
float vec_dot_iq2_xxs_q8_K_ref(int64_t n, const BlockIQ2_XXS* w, const BlockQ8_K* a);
float vec_dot_iq2_xs_q8_K_ref(int64_t n, const BlockIQ2_XS* w, const BlockQ8_K* a);
float vec_dot_iq2_s_q8_K_ref(int64_t n, const BlockIQ2_S* w, const BlockQ8_K* a);

}  // namespace sniper
