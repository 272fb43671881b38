// SPDX-License-Identifier: MIT
// Q8_K codec (see q8_k.h), the activation format of the K-quants and IQ4_XS.
// Bit-identical to ggml's quantize_row_q8_K_ref: the scale maps the element of largest
// magnitude (sign kept) to -127, q = min(127, nearest_int(-127/max * x)), d = 1/iscale as a
// float, bsums[g] = sum of the 16 quants of group g. An all-zero block gets d = 0, qs = 0 and
// (unlike ggml, which leaves them unwritten) bsums = 0.
#include "quant/q8_k.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/block_count.h"
#include "quant/rounding.h"

namespace sniper {

void quantize_row_q8_K_ref(const float* x, BlockQ8_K* y, int64_t n) {
  const int64_t nb = block_count(n, kQ8_KBlockSize, "quantize_row_q8_K_ref");
  for (int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQ8_KBlockSize;
    float max = 0.0f;
    float amax = 0.0f;
    for (int j = 0; j < kQ8_KBlockSize; ++j) {
      const float ax = std::fabs(xb[j]);
      if (ax > amax) {
        amax = ax;
        max = xb[j];
      }
    }
    if (amax == 0.0f) {
      y[i].d = 0.0f;
      std::memset(y[i].qs, 0, sizeof(y[i].qs));
      std::memset(y[i].bsums, 0, sizeof(y[i].bsums));
      continue;
    }
    // The minus sign matters: ggml picked -127/max so the extreme element quantizes to -127.
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQ8_KBlockSize; ++j) {
      const int v = nearest_int(iscale * xb[j]);
      // Conversion to int8_t is modular in C++20, matching ggml's C cast on every platform.
      y[i].qs[j] = static_cast<int8_t>(std::min(127, v));
    }
    for (int g = 0; g < kQ8_KBlockSize / 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += y[i].qs[g * 16 + l];
      y[i].bsums[g] = static_cast<int16_t>(sum);
    }
    y[i].d = 1.0f / iscale;
  }
}

void dequantize_row_q8_K_ref(const BlockQ8_K* x, float* y, int64_t n) {
  const int64_t nb = block_count(n, kQ8_KBlockSize, "dequantize_row_q8_K_ref");
  for (int64_t i = 0; i < nb; ++i) {
    for (int j = 0; j < kQ8_KBlockSize; ++j) y[i * kQ8_KBlockSize + j] = x[i].d * x[i].qs[j];
  }
}

}  // namespace sniper
