// SPDX-License-Identifier: MIT
// Q8_1 codec (see q8_1.h): Q8_0 plus s = f16(d * sum(q)), the precomputed min term that the
// Q4_1/Q5_1 dot products use. Bit-identical to ggml's quantize_row_q8_1_ref.
#include "quant/q8_1.h"

#include <algorithm>
#include <cmath>

#include "quant/block_count.h"
#include "quant/rounding.h"

namespace sniper {

void quantize_row_q8_1_ref(const float* x, BlockQ8_1* y, int64_t n) {
  const int64_t nb = block_count(n, kQ8_1BlockSize, "quantize_row_q8_1_ref");
  constexpr int kHalf = kQ8_1BlockSize / 2;
  for (int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQ8_1BlockSize;
    float amax = 0.0f;
    for (int j = 0; j < kQ8_1BlockSize; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = safe_inverse(d);
    y[i].d = fp32_to_fp16(d);
    int sum = 0;
    for (int j = 0; j < kHalf; ++j) {
      y[i].qs[j] = static_cast<int8_t>(std::roundf(xb[j] * id));
      y[i].qs[kHalf + j] = static_cast<int8_t>(std::roundf(xb[kHalf + j] * id));
      sum += y[i].qs[j];
      sum += y[i].qs[kHalf + j];
    }
    // ggml: GGML_FP32_TO_FP16(sum*d) with the f32 d (not the f16-rounded one).
    y[i].s = fp32_to_fp16(static_cast<float>(sum) * d);
  }
}

void quantize_act_q8_1_ref(const float* x, BlockQ8_1* y, int64_t n) {
  const int64_t nb = block_count(n, kQ8_1BlockSize, "quantize_act_q8_1_ref");
  for (int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQ8_1BlockSize;
    float amax = 0.0f;
    for (int j = 0; j < kQ8_1BlockSize; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    y[i].d = fp32_to_fp16(d);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    uint32_t sum = 0;  // int32 lanes add with wrap-around
    for (int j = 0; j < kQ8_1BlockSize; ++j) {
      // The sum uses the int32 conversions before the int8 saturation (as ggml's AVX2 code).
      const float r = std::nearbyint(xb[j] * id);
      const bool in_range = r >= -2147483648.0f && r < 2147483648.0f;
      sum += in_range ? static_cast<uint32_t>(static_cast<int32_t>(r)) : 0x80000000u;
      y[i].qs[j] = round_even_sat_i8(xb[j] * id);
    }
    y[i].s = fp32_to_fp16(static_cast<float>(static_cast<int32_t>(sum)) * d);
  }
}

void dequantize_row_q8_1_ref(const BlockQ8_1* x, float* y, int64_t n) {
  const int64_t nb = block_count(n, kQ8_1BlockSize, "dequantize_row_q8_1_ref");
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < kQ8_1BlockSize; ++j) y[i * kQ8_1BlockSize + j] = x[i].qs[j] * d;
  }
}

}  // namespace sniper
