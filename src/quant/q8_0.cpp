// SPDX-License-Identifier: MIT
// Q8_0 codec (see q8_0.h): x = d * q, q in [-127, 127], d = max|x| / 127 stored as f16.
// The quantizer is bit-identical to ggml's quantize_row_q8_0_ref (it is also the activation
// format for Q4_0/Q5_0/Q8_0/IQ4_NL weights, so its rounding decides our logits).
#include "quant/q8_0.h"

#include <algorithm>
#include <cmath>

#include "quant/block_count.h"
#include "quant/lane_order.h"
#include "quant/rounding.h"

namespace sniper {

void quantize_row_q8_0_ref(const float* x, BlockQ8_0* y, int64_t n) {
  const int64_t nb = block_count(n, kQ8_0BlockSize, "quantize_row_q8_0_ref");
  for (int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQ8_0BlockSize;
    float amax = 0.0f;
    for (int j = 0; j < kQ8_0BlockSize; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = safe_inverse(d);
    y[i].d = fp32_to_fp16(d);
    // |xb[j] * id| <= 127 up to rounding, so roundf lands in [-127, 127].
    for (int j = 0; j < kQ8_0BlockSize; ++j) {
      y[i].qs[j] = static_cast<int8_t>(std::roundf(xb[j] * id));
    }
  }
}

void quantize_act_q8_0_ref(const float* x, BlockQ8_0* y, int64_t n) {
  const int64_t nb = block_count(n, kQ8_0BlockSize, "quantize_act_q8_0_ref");
  for (int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQ8_0BlockSize;
    float amax = 0.0f;
    for (int j = 0; j < kQ8_0BlockSize; ++j) amax = std::max(amax, std::fabs(xb[j]));
    y[i].d = fp32_to_fp16(amax / 127.0f);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < kQ8_0BlockSize; ++j) y[i].qs[j] = round_even_sat_i8(xb[j] * id);
  }
}

void dequantize_row_q8_0_ref(const BlockQ8_0* x, float* y, int64_t n) {
  const int64_t nb = block_count(n, kQ8_0BlockSize, "dequantize_row_q8_0_ref");
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < kQ8_0BlockSize; ++j) y[i * kQ8_0BlockSize + j] = x[i].qs[j] * d;
  }
}

float vec_dot_q8_0_q8_0_ref(int64_t n, const BlockQ8_0* w, const BlockQ8_0* a) {
  const int64_t nb = block_count(n, kQ8_0BlockSize, "vec_dot_q8_0_q8_0_ref");
  float acc[8] = {};
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(w[i].d) * fp16_to_fp32(a[i].d);
    for (int k = 0; k < 8; ++k) {
      int32_t lane = 0;
      for (int j = 4 * k; j < 4 * k + 4; ++j) lane += w[i].qs[j] * a[i].qs[j];
      acc[k] = fma_ordered(d, static_cast<float>(lane), acc[k]);
    }
  }
  return hsum8_ordered(acc);
}

}  // namespace sniper
