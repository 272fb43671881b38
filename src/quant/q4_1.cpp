// SPDX-License-Identifier: MIT
// Q4_1 codec (see q4_1.h): x = d * q + m, q in [0, 15], d = (max - min) / 15, m = min.
// The quantizer is ggml's quantize_row_q4_1_ref (q = min(15, trunc((x - min)/d + 0.5))).
#include "quant/q4_1.h"

#include <algorithm>
#include <cfloat>

#include "quant/block_count.h"
#include "quant/lane_order.h"
#include "quant/rounding.h"

namespace sniper {

void quantize_row_q4_1_ref(const float* x, BlockQ4_1* y, int64_t n) {
  const int64_t nb = block_count(n, kQ4_1BlockSize, "quantize_row_q4_1_ref");
  constexpr int kHalf = kQ4_1BlockSize / 2;
  for (int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQ4_1BlockSize;
    float min = FLT_MAX;
    float max = -FLT_MAX;
    for (int j = 0; j < kQ4_1BlockSize; ++j) {
      min = std::min(min, xb[j]);
      max = std::max(max, xb[j]);
    }
    const float d = (max - min) / 15.0f;
    const float id = safe_inverse(d);
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(min);
    for (int j = 0; j < kHalf; ++j) {
      // (x - min) * id lies in [0, 15] up to rounding.
      const int xi0 = std::min(15, static_cast<int>((xb[j] - min) * id + 0.5f));
      const int xi1 = std::min(15, static_cast<int>((xb[kHalf + j] - min) * id + 0.5f));
      y[i].qs[j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
    }
  }
}

void dequantize_row_q4_1_ref(const BlockQ4_1* x, float* y, int64_t n) {
  const int64_t nb = block_count(n, kQ4_1BlockSize, "dequantize_row_q4_1_ref");
  constexpr int kHalf = kQ4_1BlockSize / 2;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float m = fp16_to_fp32(x[i].m);
    float* yb = y + i * kQ4_1BlockSize;
    for (int j = 0; j < kHalf; ++j) {
      yb[j] = static_cast<float>(x[i].qs[j] & 0x0F) * d + m;
      yb[kHalf + j] = static_cast<float>(x[i].qs[j] >> 4) * d + m;
    }
  }
}

float vec_dot_q4_1_q8_1_ref(int64_t n, const BlockQ4_1* w, const BlockQ8_1* a) {
  const int64_t nb = block_count(n, kQ4_1BlockSize, "vec_dot_q4_1_q8_1_ref");
  constexpr int kHalf = kQ4_1BlockSize / 2;
  float acc[8] = {};
  float summs = 0.0f;  // the min term, from the activation's cached s = d_a * sum(q_a)
  for (int64_t i = 0; i < nb; ++i) {
    int v[kQ4_1BlockSize];
    for (int j = 0; j < kHalf; ++j) {
      v[j] = w[i].qs[j] & 0x0F;
      v[kHalf + j] = w[i].qs[j] >> 4;
    }
    summs = fma_ordered(fp16_to_fp32(w[i].m), fp16_to_fp32(a[i].s), summs);
    fma_block32_ordered(acc, fp16_to_fp32(w[i].d) * fp16_to_fp32(a[i].d), v, a[i].qs);
  }
  return hsum8_ordered(acc) + summs;
}

}  // namespace sniper
