// SPDX-License-Identifier: MIT
// Lookup-free in-memory layouts of the grid i-quants, made once at load time (never read from or
// written to a file; gguf/format.h numbers them past ggml's types). The grid values are small
// exact integers, so a block's decoded integers q[256] and odd scales scale16[16] can be stored
// directly instead of as grid indices; the layouts keep d, the factor and the float order of the
// source type's dot product, so every result is bitwise what the source type gives:
//   IQ2_RP     (from IQ2_XXS, IQ2_XS, IQ2_S; 106 bytes): 2-bit magnitude codes (0, 1, 2 = 8, 25,
//              43), one sign bit per element, a 4-bit scale s (2s+1) per 16; x = d * (2s+1) * q / 8
//   IQ3_XXS_RP (from IQ3_XXS; 138 bytes): a nibble per element, 3-bit magnitude code into
//              {4, 12, 20, 28, 36, 44, 52, 62} | sign << 3; x = d * (2s+1) * q / 4
//   IQ3_S_RP   (from IQ3_S; 138 bytes): as IQ3_XXS_RP with magnitudes {1, 3, ..., 15}; x = d * (2s+1) * q
//   IQ1_S_RP, IQ1_M_RP (from IQ1_S, IQ1_M; 78 bytes): a 2-bit code q + 1 per element (q in
//              -1, 0, 1), a delta sign bit per 8 elements, a 4-bit scale s per 16;
//              x = d * (2s+1) * (q + delta / 8), each in its source's dot order (iq1_dot.h)
// Byte layouts are chosen for the SIMD kernels (x86/dot_iq_repacked*.h): one 64-byte load of
// codes gives the 64 elements of two 32-element chunks (the lane pairs of the 512-bit kernels),
// its first and last 32 bytes one chunk each (the 256-bit kernels). Every bit pattern decodes
// (code 3 of IQ2_RP decodes as 43, like code 2), so no layout needs validating.
// The ternary TQ1_0 needs no layout of its own: it repacks into TQ2_0 blocks (same dot product).
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "gguf/format.h"
#include "quant/q8_k.h"

namespace sniper {

struct BlockIQ2_RP {
  fp16_t d;
  uint8_t scales[8];  // s of elements 32j..32j+15 in the low nibble of byte j, 32j+16.. in the high
  uint8_t signs[32];  // bit e % 8 of byte e / 8: element e is negative
  uint8_t qs[64];     // code of element 64j + m in bits 2j..2j+1 of byte m (j < 4, m < 64)
};
static_assert(sizeof(BlockIQ2_RP) == 106, "iq2_rp block must be 106 bytes");

struct BlockIQ3_RP {
  fp16_t d;
  uint8_t scales[8];  // as BlockIQ2_RP
  uint8_t qs[128];    // byte 64h + m: element 128h + m in the low nibble, 128h + 64 + m in the high
};
static_assert(sizeof(BlockIQ3_RP) == 138, "iq3_*_rp block must be 138 bytes");

struct BlockIQ1_RP {
  fp16_t d;           // IQ1_M: iq1_m_scale_bits of the source
  uint8_t scales[8];  // as BlockIQ2_RP (s <= 7 here)
  uint8_t delta[4];   // bit g % 8 of byte g / 8: elements 8g..8g+7 have delta -1 (else +1); IQ1_S_RP
                      // reads only each chunk's first (g = 4c: delta per 32, as IQ1_S has it)
  uint8_t qs[64];     // code q + 1 of element 64j + m in bits 2j..2j+1 of byte m (code 3 decodes as q = 2)
};
static_assert(sizeof(BlockIQ1_RP) == 78, "iq1_*_rp block must be 78 bytes");

// The magnitudes behind each layout's codes (entries 8..15 of the IQ3 tables repeat 0..7, so a
// table lookup by the whole nibble, sign bit included, gives the magnitude).
inline constexpr uint8_t kIq2RpLevels[4] = {8, 25, 43, 43};
inline constexpr uint8_t kIq3XxsRpLevels[16] = {4, 12, 20, 28, 36, 44, 52, 62, 4, 12, 20, 28, 36, 44, 52, 62};
inline constexpr uint8_t kIq3SRpLevels[16] = {1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15};

// The layout `type` repacks into at load time (kIQ2_RP for IQ2_XXS, ..., kIQ1_S_RP for IQ1_S;
// kTQ2_0 for TQ1_0), or
// `type` itself when it has none.
GgmlType repacked_type(GgmlType type);

// Converts n elements (n % 256 == 0) of `from` at src into repacked_type(from) blocks at dst;
// CHECKs that `from` has a repacked layout. Every output decodes to the same integers, scales
// and d as its input block. Thread-safe (pure).
void repack_row(GgmlType from, const void* src, void* dst, int64_t n);

// q[256] = the signed integers, scale16[16] = the odd scales (iq2.h / iq3.h decoders' contract).
void decode_iq2_rp_block(const BlockIQ2_RP& b, int8_t* q, int* scale16);
void decode_iq3_xxs_rp_block(const BlockIQ3_RP& b, int8_t* q, int* scale16);
void decode_iq3_s_rp_block(const BlockIQ3_RP& b, int8_t* q, int* scale16);

// q[256], delta[256] (+-1), scale16[16]: the iq1.h decoders' contract.
void decode_iq1_s_rp_block(const BlockIQ1_RP& b, int8_t* q, int8_t* delta, int* scale16);
void decode_iq1_m_rp_block(const BlockIQ1_RP& b, int8_t* q, int8_t* delta, int* scale16);

void dequantize_row_iq1_s_rp_ref(const BlockIQ1_RP* x, float* y, int64_t n);
void dequantize_row_iq1_m_rp_ref(const BlockIQ1_RP* x, float* y, int64_t n);
float vec_dot_iq1_s_rp_q8_K_ref(int64_t n, const BlockIQ1_RP* w, const BlockQ8_K* a);
float vec_dot_iq1_m_rp_q8_K_ref(int64_t n, const BlockIQ1_RP* w, const BlockQ8_K* a);

void dequantize_row_iq2_rp_ref(const BlockIQ2_RP* x, float* y, int64_t n);
void dequantize_row_iq3_xxs_rp_ref(const BlockIQ3_RP* x, float* y, int64_t n);
void dequantize_row_iq3_s_rp_ref(const BlockIQ3_RP* x, float* y, int64_t n);

// Dot against q8_K in the float order of the source types (iq_scaled.h), so each equals the
// source type's vec_dot on the block it was repacked from, bit for bit.
float vec_dot_iq2_rp_q8_K_ref(int64_t n, const BlockIQ2_RP* w, const BlockQ8_K* a);
float vec_dot_iq3_xxs_rp_q8_K_ref(int64_t n, const BlockIQ3_RP* w, const BlockQ8_K* a);
float vec_dot_iq3_s_rp_q8_K_ref(int64_t n, const BlockIQ3_RP* w, const BlockQ8_K* a);

}  // namespace sniper
