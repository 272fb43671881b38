// SPDX-License-Identifier: MIT
// The 1-bit i-quant block formats (256 elements per block; ../shared/models/iq/FORMATS.md 4.6-4.7):
//   IQ1_S  50 bytes: x = d * (2c+1) * (grid8[idx] + delta), ternary grid (-1, 0, +1), 11-bit
//          index per 8, 3-bit scale c and delta sign per 32 (delta = +-1/8)
//   IQ1_M  56 bytes: no d field (its fp16 bits are the top nibbles of the 4 scale words), a 3-bit
//          scale per 16 and a delta sign per 8
// Every index is masked to 11 bits (the grid has 2048 entries), so any byte pattern decodes.
// Layouts match ggml's block_iq1_s / block_iq1_m byte for byte.
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "quant/q8_k.h"

namespace sniper {

constexpr int64_t kIQ1BlockSize = 256;

struct BlockIQ1_S {
  fp16_t d;
  uint8_t qs[32];  // low 8 bits of the grid index per 8 elements
  uint16_t qh[8];  // per 32: bits 3l..3l+2 = index bits 8..10 of group l, 12..14 scale, 15 delta sign
};
static_assert(sizeof(BlockIQ1_S) == 50, "iq1_s block must be 50 bytes");

struct BlockIQ1_M {
  uint8_t qs[32];     // low 8 bits of the grid index per 8 elements
  uint8_t qh[16];     // per 16 elements: nibble per 8 = index bits 8..10 | delta sign << 3
  uint8_t scales[8];  // 4 little-endian u16: 4 x 3-bit scales in bits 0..11, a nibble of d in 12..15
};
static_assert(sizeof(BlockIQ1_M) == 56, "iq1_m block must be 56 bytes");

// The fp16 bit pattern of an IQ1_M block's super-block scale.
fp16_t iq1_m_scale_bits(const BlockIQ1_M& b);

// q[256] = ternary grid values, delta[256] = the +-1 delta sign of each element, scale16[16] =
// 2c+1 of each 16 elements. Element i = d * scale16[i/16] * (q[i] + delta[i] / 8).
void decode_iq1_s_block(const BlockIQ1_S& b, int8_t* q, int8_t* delta, int* scale16);
void decode_iq1_m_block(const BlockIQ1_M& b, int8_t* q, int8_t* delta, int* scale16);

void dequantize_row_iq1_s_ref(const BlockIQ1_S* x, float* y, int64_t n);
void dequantize_row_iq1_m_ref(const BlockIQ1_M* x, float* y, int64_t n);

// Dot against q8_K in the float order of ggml's AVX2 kernels: IQ1_S keeps the grid part in 8
// float lanes and the delta part (through the q8_K bsums) in one float, result
// hsum8 + 1/8 * delta part; IQ1_M keeps both parts in 8 lanes each.
float vec_dot_iq1_s_q8_K_ref(int64_t n, const BlockIQ1_S* w, const BlockQ8_K* a);
float vec_dot_iq1_m_q8_K_ref(int64_t n, const BlockIQ1_M* w, const BlockQ8_K* a);

}  // namespace sniper
