// SPDX-License-Identifier: MIT
// Q4_0 codec (see q4_0.h): x = d * (q - 8), q in [0, 15]. The quantizer is ggml's
// quantize_row_q4_0_ref: d = max / -8 where max is the element of largest magnitude (sign
// kept), so that element maps exactly to level 0, and q = min(15, trunc(x/d + 8.5)).
#include "quant/q4_0.h"

#include <algorithm>
#include <cmath>

#include "quant/block_count.h"
#include "quant/lane_order.h"
#include "quant/rounding.h"

namespace sniper {

void quantize_row_q4_0_ref(const float* x, BlockQ4_0* y, int64_t n) {
  const int64_t nb = block_count(n, kQ4_0BlockSize, "quantize_row_q4_0_ref");
  constexpr int kHalf = kQ4_0BlockSize / 2;
  for (int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQ4_0BlockSize;
    float amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < kQ4_0BlockSize; ++j) {
      if (amax < std::fabs(xb[j])) {
        amax = std::fabs(xb[j]);
        max = xb[j];
      }
    }
    const float d = max / -8.0f;
    const float id = safe_inverse(d);
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < kHalf; ++j) {
      // x * id lies in [-8, 8] (up to rounding), so x * id + 8.5 is in [0.5, 16.5].
      const int xi0 = std::min(15, static_cast<int>(xb[j] * id + 8.5f));
      const int xi1 = std::min(15, static_cast<int>(xb[kHalf + j] * id + 8.5f));
      y[i].qs[j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
    }
  }
}

void dequantize_row_q4_0_ref(const BlockQ4_0* x, float* y, int64_t n) {
  const int64_t nb = block_count(n, kQ4_0BlockSize, "dequantize_row_q4_0_ref");
  constexpr int kHalf = kQ4_0BlockSize / 2;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    float* yb = y + i * kQ4_0BlockSize;
    for (int j = 0; j < kHalf; ++j) {
      yb[j] = static_cast<float>((x[i].qs[j] & 0x0F) - 8) * d;
      yb[kHalf + j] = static_cast<float>((x[i].qs[j] >> 4) - 8) * d;
    }
  }
}

float vec_dot_q4_0_q8_0_ref(int64_t n, const BlockQ4_0* w, const BlockQ8_0* a) {
  const int64_t nb = block_count(n, kQ4_0BlockSize, "vec_dot_q4_0_q8_0_ref");
  constexpr int kHalf = kQ4_0BlockSize / 2;
  float acc[8] = {};
  for (int64_t i = 0; i < nb; ++i) {
    int v[kQ4_0BlockSize];
    for (int j = 0; j < kHalf; ++j) {
      v[j] = (w[i].qs[j] & 0x0F) - 8;
      v[kHalf + j] = (w[i].qs[j] >> 4) - 8;
    }
    fma_block32_ordered(acc, fp16_to_fp32(w[i].d) * fp16_to_fp32(a[i].d), v, a[i].qs);
  }
  return hsum8_ordered(acc);
}

}  // namespace sniper
