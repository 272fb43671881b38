// SPDX-License-Identifier: MIT
// Shared scalar machinery of the IQ2_* and IQ3_* codecs: each decodes a 256-element block into
// signed grid integers q[256] and odd scales scale16[16] (one per 16 elements), and element e
// is d * scale16[e/16] * q[e] * kFactor (kFactor = 1/8, 1/4 or 1, a power of two). The dot
// product runs in the float order of ggml's AVX2 kernels for these types: per block, 8 int32
// lanes (maddubs + madd layout, lane_order.h) FMA'd with d_w * d_a, then kFactor * hsum8.
// Internal to quant/.
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "quant/block_count.h"
#include "quant/lane_order.h"
#include "quant/q8_k.h"

namespace sniper::iq_internal {

template <typename Block, void (*Decode)(const Block&, int8_t*, int*)>
void dequantize_scaled(const Block* x, float* y, int64_t n, float factor, const char* what) {
  const int64_t nb = block_count(n, 256, what);
  int8_t q[256];
  int scale16[16];
  for (int64_t i = 0; i < nb; ++i) {
    Decode(x[i], q, scale16);
    const float d = fp16_to_fp32(x[i].d);
    // d (11 significant bits) * integer (< 2^11) * power of two: exact in float.
    for (int e = 0; e < 256; ++e) *y++ = d * static_cast<float>(scale16[e / 16] * q[e]) * factor;
  }
}

template <typename Block, void (*Decode)(const Block&, int8_t*, int*)>
float vec_dot_scaled(int64_t n, const Block* w, const BlockQ8_K* a, float factor, const char* what) {
  const int64_t nb = block_count(n, 256, what);
  int8_t q[256];
  int scale16[16];
  float acc[8] = {};
  for (int64_t i = 0; i < nb; ++i) {
    Decode(w[i], q, scale16);
    fma_superblock_ordered(acc, fp16_to_fp32(w[i].d) * a[i].d, q, scale16, a[i].qs);
  }
  return factor * hsum8_ordered(acc);
}

}  // namespace sniper::iq_internal
