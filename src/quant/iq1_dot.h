// SPDX-License-Identifier: MIT
// Shared scalar machinery of the IQ1_S / IQ1_M codecs and their repacked layout (iq_repack.h):
// a decoder gives a block's ternary q[256], delta signs delta[256], odd scales scale16[16] and
// fp16 d; the dot products follow the float order of ggml's AVX2 kernels (iq1.h): IQ1_S keeps
// the delta part in one float through the q8_K bsums (its delta and scale are per 32 elements),
// IQ1_M keeps it in 8 lanes. Internal to quant/.
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "quant/block_count.h"
#include "quant/lane_order.h"
#include "quant/q8_k.h"

namespace sniper::iq1_internal {

// decode(b, q, delta, scale16) and d_bits(b) for a block type.
template <class Block, void (*Decode)(const Block&, int8_t*, int8_t*, int*), fp16_t (*DBits)(const Block&)>
void dequantize(const Block* x, float* y, int64_t n, const char* what) {
  const int64_t nb = block_count(n, 256, what);
  int8_t q[256], delta[256];
  int scale16[16];
  for (int64_t i = 0; i < nb; ++i, y += 256) {
    Decode(x[i], q, delta, scale16);
    const float d = fp16_to_fp32(DBits(x[i]));
    // d * (2c+1) * (q + delta/8): d has 11 significant bits, 2c+1 < 16 and q + delta/8 in
    // {+-0.875, +-1.125, +-0.125}: every product is exact in float.
    for (int e = 0; e < 256; ++e) {
      const float dl = d * static_cast<float>(scale16[e / 16]);
      y[e] = dl * (static_cast<float>(q[e]) + 0.125f * static_cast<float>(delta[e]));
    }
  }
}

// IQ1_S's order: the delta sign and scale are those of each 32 elements (delta[32s], scale16[2s]).
template <class Block, void (*Decode)(const Block&, int8_t*, int8_t*, int*), fp16_t (*DBits)(const Block&)>
float vec_dot_s(int64_t n, const Block* w, const BlockQ8_K* a, const char* what) {
  const int64_t nb = block_count(n, 256, what);
  int8_t q[256], delta[256];
  int scale16[16];
  float acc[8] = {};
  float acc1 = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    Decode(w[i], q, delta, scale16);
    int sumi1 = 0;  // sum_s (2c_s+1) * e_s * (sum of the sub-block's activations)
    for (int s = 0; s < 8; ++s) sumi1 += (a[i].bsums[2 * s] + a[i].bsums[2 * s + 1]) * delta[32 * s] * scale16[2 * s];
    const float d = a[i].d * fp16_to_fp32(DBits(w[i]));
    fma_superblock_ordered(acc, d, q, scale16, a[i].qs);
    acc1 = fma_ordered(d, static_cast<float>(sumi1), acc1);
  }
  return fma_ordered(0.125f, acc1, hsum8_ordered(acc));
}

// IQ1_M's order: the delta part in 8 lanes of its own.
template <class Block, void (*Decode)(const Block&, int8_t*, int8_t*, int*), fp16_t (*DBits)(const Block&)>
float vec_dot_m(int64_t n, const Block* w, const BlockQ8_K* a, const char* what) {
  const int64_t nb = block_count(n, 256, what);
  int8_t q[256], delta[256];
  int scale16[16];
  float acc1[8] = {}, acc2[8] = {};
  for (int64_t i = 0; i < nb; ++i) {
    Decode(w[i], q, delta, scale16);
    const float d = a[i].d * fp16_to_fp32(DBits(w[i]));
    fma_superblock_ordered(acc1, d, q, scale16, a[i].qs);
    fma_superblock_ordered(acc2, d, delta, scale16, a[i].qs);
  }
  return fma_ordered(0.125f, hsum8_ordered(acc2), hsum8_ordered(acc1));
}

}  // namespace sniper::iq1_internal
