// SPDX-License-Identifier: MIT
// Q5_0 codec (see q5_0.h): x = d * (q - 16), q in [0, 31]; d = max / -16 where max is the
// element of largest magnitude (sign kept). The 5th bit of element j is bit j of the
// little-endian u32 qh. The quantizer is ggml's quantize_row_q5_0_ref.
#include "quant/q5_0.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/block_count.h"
#include "quant/lane_order.h"
#include "quant/rounding.h"

namespace sniper {

void quantize_row_q5_0_ref(const float* x, BlockQ5_0* y, int64_t n) {
  const int64_t nb = block_count(n, kQ5_0BlockSize, "quantize_row_q5_0_ref");
  constexpr int kHalf = kQ5_0BlockSize / 2;
  for (int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQ5_0BlockSize;
    float amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < kQ5_0BlockSize; ++j) {
      if (amax < std::fabs(xb[j])) {
        amax = std::fabs(xb[j]);
        max = xb[j];
      }
    }
    const float d = max / -16.0f;
    const float id = safe_inverse(d);
    y[i].d = fp32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kHalf; ++j) {
      // x * id lies in [-16, 16], so x * id + 16.5 is in [0.5, 32.5].
      const uint32_t xi0 = static_cast<uint32_t>(std::min(31, static_cast<int>(xb[j] * id + 16.5f)));
      const uint32_t xi1 = static_cast<uint32_t>(std::min(31, static_cast<int>(xb[kHalf + j] * id + 16.5f)));
      y[i].qs[j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
      qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
      qh |= ((xi1 & 0x10u) >> 4) << (j + kHalf);
    }
    std::memcpy(y[i].qh, &qh, sizeof(qh));
  }
}

void dequantize_row_q5_0_ref(const BlockQ5_0* x, float* y, int64_t n) {
  const int64_t nb = block_count(n, kQ5_0BlockSize, "dequantize_row_q5_0_ref");
  constexpr int kHalf = kQ5_0BlockSize / 2;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, sizeof(qh));
    float* yb = y + i * kQ5_0BlockSize;
    for (int j = 0; j < kHalf; ++j) {
      const int xh0 = static_cast<int>(((qh >> (j + 0)) << 4) & 0x10);
      const int xh1 = static_cast<int>((qh >> (j + 12)) & 0x10);
      yb[j] = static_cast<float>(((x[i].qs[j] & 0x0F) | xh0) - 16) * d;
      yb[kHalf + j] = static_cast<float>(((x[i].qs[j] >> 4) | xh1) - 16) * d;
    }
  }
}

float vec_dot_q5_0_q8_0_ref(int64_t n, const BlockQ5_0* w, const BlockQ8_0* a) {
  const int64_t nb = block_count(n, kQ5_0BlockSize, "vec_dot_q5_0_q8_0_ref");
  constexpr int kHalf = kQ5_0BlockSize / 2;
  float acc[8] = {};
  for (int64_t i = 0; i < nb; ++i) {
    uint32_t qh;
    std::memcpy(&qh, w[i].qh, sizeof(qh));
    int v[kQ5_0BlockSize];
    for (int j = 0; j < kHalf; ++j) {
      const int xh0 = static_cast<int>(((qh >> (j + 0)) << 4) & 0x10);
      const int xh1 = static_cast<int>((qh >> (j + 12)) & 0x10);
      v[j] = ((w[i].qs[j] & 0x0F) | xh0) - 16;
      v[kHalf + j] = ((w[i].qs[j] >> 4) | xh1) - 16;
    }
    fma_block32_ordered(acc, fp16_to_fp32(w[i].d) * fp16_to_fp32(a[i].d), v, a[i].qs);
  }
  return hsum8_ordered(acc);
}

}  // namespace sniper
