// SPDX-License-Identifier: MIT
// Q5_1 codec (see q5_1.h): x = d * q + m, q in [0, 31], d = (max - min) / 31, m = min; the 5th
// bit of element j is bit j of the little-endian u32 qh. The quantizer is ggml's
// quantize_row_q5_1_ref (q = trunc((x - min)/d + 0.5)).
#include "quant/q5_1.h"

#include <algorithm>
#include <cfloat>
#include <cstring>

#include "quant/block_count.h"
#include "quant/lane_order.h"
#include "quant/rounding.h"

namespace sniper {

void quantize_row_q5_1_ref(const float* x, BlockQ5_1* y, int64_t n) {
  const int64_t nb = block_count(n, kQ5_1BlockSize, "quantize_row_q5_1_ref");
  constexpr int kHalf = kQ5_1BlockSize / 2;
  for (int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQ5_1BlockSize;
    float min = FLT_MAX;
    float max = -FLT_MAX;
    for (int j = 0; j < kQ5_1BlockSize; ++j) {
      min = std::min(min, xb[j]);
      max = std::max(max, xb[j]);
    }
    const float d = (max - min) / 31.0f;
    const float id = safe_inverse(d);
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(min);
    uint32_t qh = 0;
    for (int j = 0; j < kHalf; ++j) {
      // (x - min) * id + 0.5 lies in [0.5, 31.5] up to rounding. ggml has no clamp here; the
      // min(31) only guards a rounding overshoot, which ggml would wrap instead.
      const uint32_t xi0 = static_cast<uint32_t>(std::min(31, static_cast<int>((xb[j] - min) * id + 0.5f)));
      const uint32_t xi1 = static_cast<uint32_t>(std::min(31, static_cast<int>((xb[kHalf + j] - min) * id + 0.5f)));
      y[i].qs[j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
      qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
      qh |= ((xi1 & 0x10u) >> 4) << (j + kHalf);
    }
    std::memcpy(y[i].qh, &qh, sizeof(qh));
  }
}

void dequantize_row_q5_1_ref(const BlockQ5_1* x, float* y, int64_t n) {
  const int64_t nb = block_count(n, kQ5_1BlockSize, "dequantize_row_q5_1_ref");
  constexpr int kHalf = kQ5_1BlockSize / 2;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float m = fp16_to_fp32(x[i].m);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, sizeof(qh));
    float* yb = y + i * kQ5_1BlockSize;
    for (int j = 0; j < kHalf; ++j) {
      const int xh0 = static_cast<int>(((qh >> (j + 0)) << 4) & 0x10);
      const int xh1 = static_cast<int>((qh >> (j + 12)) & 0x10);
      yb[j] = static_cast<float>((x[i].qs[j] & 0x0F) | xh0) * d + m;
      yb[kHalf + j] = static_cast<float>((x[i].qs[j] >> 4) | xh1) * d + m;
    }
  }
}

float vec_dot_q5_1_q8_1_ref(int64_t n, const BlockQ5_1* w, const BlockQ8_1* a) {
  const int64_t nb = block_count(n, kQ5_1BlockSize, "vec_dot_q5_1_q8_1_ref");
  constexpr int kHalf = kQ5_1BlockSize / 2;
  float acc[8] = {};
  float summs = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    uint32_t qh;
    std::memcpy(&qh, w[i].qh, sizeof(qh));
    int v[kQ5_1BlockSize];
    for (int j = 0; j < kHalf; ++j) {
      const int xh0 = static_cast<int>(((qh >> (j + 0)) << 4) & 0x10);
      const int xh1 = static_cast<int>((qh >> (j + 12)) & 0x10);
      v[j] = (w[i].qs[j] & 0x0F) | xh0;
      v[kHalf + j] = (w[i].qs[j] >> 4) | xh1;
    }
    summs = fma_ordered(fp16_to_fp32(w[i].m), fp16_to_fp32(a[i].s), summs);
    fma_block32_ordered(acc, fp16_to_fp32(w[i].d) * fp16_to_fp32(a[i].d), v, a[i].qs);
  }
  return hsum8_ordered(acc) + summs;
}

}  // namespace sniper
