// SPDX-License-Identifier: MIT
// The ternary block formats (256 elements per block; ../shared/models/iq/FORMATS.md 4.10-4.11):
//   TQ1_0  54 bytes: 5 base-3 digits per byte (4 in the qh bytes), x = (t - 1) * d
//   TQ2_0  66 bytes: 4 two-bit digits per byte, x = (q - 1) * d (the encoder writes q <= 2;
//          q = 3 decodes to 2 * d like ggml does)
// Layouts match ggml's block_tq1_0 / block_tq2_0 byte for byte (d at the end).
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "quant/q8_k.h"

namespace sniper {

constexpr int64_t kTQBlockSize = 256;

struct BlockTQ1_0 {
  uint8_t qs[48];  // [0, 32): trits n of byte m = element 32n + m; [32, 48): element 160 + 16n + m
  uint8_t qh[4];   // trits n of byte m = element 240 + 4n + m (n < 4)
  fp16_t d;
};
static_assert(sizeof(BlockTQ1_0) == 54, "tq1_0 block must be 54 bytes");

struct BlockTQ2_0 {
  uint8_t qs[64];  // bits 2n..2n+1 of byte 32c + m = element 128c + 32n + m
  fp16_t d;
};
static_assert(sizeof(BlockTQ2_0) == 66, "tq2_0 block must be 66 bytes");

// t[256] = the unsigned digit of each element (0..2 for TQ1_0, 0..3 for TQ2_0); element i is
// (t[i] - 1) * d.
void decode_tq1_0_block(const BlockTQ1_0& b, int8_t* t);
void decode_tq2_0_block(const BlockTQ2_0& b, int8_t* t);

void dequantize_row_tq1_0_ref(const BlockTQ1_0* x, float* y, int64_t n);
void dequantize_row_tq2_0_ref(const BlockTQ2_0* x, float* y, int64_t n);

// Dot against q8_K in the float order of ggml's AVX2 kernels: int32 lane m of a block holds
// sum t*a over elements 4m..4m+3 of every 32 minus bsums[2m] + bsums[2m+1] (the "- 1" applied
// through the activation sums), FMA'd with d into 8 float lanes, then hsum8.
float vec_dot_tq1_0_q8_K_ref(int64_t n, const BlockTQ1_0* w, const BlockQ8_K* a);
float vec_dot_tq2_0_q8_K_ref(int64_t n, const BlockTQ2_0* w, const BlockQ8_K* a);

}  // namespace sniper
