// SPDX-License-Identifier: MIT
// Q4_K codec (see q4_k.h). Super-block of 256 = 8 groups of 32; element = d * sc * q - dmin * m
// with q in [0, 15] and 6-bit sc, m per group (packed as in k_scales.h). qs: for each 64-element
// chunk c, byte 32c + l holds element 64c + l in its low nibble and 64c + 32 + l in its high one.
// The quantizer is ggml's quantize_row_q4_K_ref (make_qkx2_quants per group, weights
// sqrt(mean x^2) + |x|).
#include "quant/q4_k.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/block_count.h"
#include "quant/k_scales.h"
#include "quant/lane_order.h"
#include "quant/rounding.h"
#include "quant/scale_search.h"

namespace sniper {

void quantize_row_q4_K_ref(const float* x, BlockQ4_K* y, int64_t n) {
  const int64_t nb = block_count(n, kQ4_KBlockSize, "quantize_row_q4_K_ref");
  uint8_t L[kQ4_KBlockSize];

  for (int64_t i = 0; i < nb; ++i, x += kQ4_KBlockSize) {
    quantize_scale_min_super_block(x, 15, -1.0f, 20, y[i].scales, &y[i].d, &y[i].dmin, L);

    uint8_t* q = y[i].qs;
    for (int j = 0; j < kQ4_KBlockSize; j += 64) {
      for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
      q += 32;
    }
  }
}

void dequantize_row_q4_K_ref(const BlockQ4_K* x, float* y, int64_t n) {
  const int64_t nb = block_count(n, kQ4_KBlockSize, "dequantize_row_q4_K_ref");
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* q = x[i].qs;
    const float d = fp16_to_fp32(x[i].d);
    const float min = fp16_to_fp32(x[i].dmin);
    int is = 0;
    for (int j = 0; j < kQ4_KBlockSize; j += 64) {
      uint8_t sc;
      uint8_t m;
      get_scale_min_k4(is + 0, x[i].scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = min * static_cast<float>(m);
      get_scale_min_k4(is + 1, x[i].scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = min * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
      q += 32;
      is += 2;
    }
  }
}

float vec_dot_q4_K_q8_K_ref(int64_t n, const BlockQ4_K* w, const BlockQ8_K* a) {
  const int64_t nb = block_count(n, kQ4_KBlockSize, "vec_dot_q4_K_q8_K_ref");
  // ggml's AVX2 kernel: 8 float lanes for the scaled sums and 4 float lanes for the mins (each
  // lane: two 32-element sub-blocks' min times their q8 sums), added at the end.
  int8_t q[kQ4_KBlockSize];
  float acc[8] = {};
  float acc_m[4] = {};
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* q4 = w[i].qs;
    for (int j = 0; j < kQ4_KBlockSize / 64; ++j) {
      for (int l = 0; l < 32; ++l) {
        q[64 * j + l] = static_cast<int8_t>(q4[32 * j + l] & 0xF);
        q[64 * j + 32 + l] = static_cast<int8_t>(q4[32 * j + l] >> 4);
      }
    }
    uint8_t scales[8];
    uint8_t mins[8];
    for (int j = 0; j < 8; ++j) get_scale_min_k4(j, w[i].scales, &scales[j], &mins[j]);
    int scale16[16];
    for (int g = 0; g < 16; ++g) scale16[g] = scales[g / 2];
    const float d = a[i].d * fp16_to_fp32(w[i].d);
    const float dmin = -a[i].d * fp16_to_fp32(w[i].dmin);
    const int16_t* bs = a[i].bsums;
    for (int m = 0; m < 4; ++m) {
      const int prod = mins[2 * m] * (bs[4 * m] + bs[4 * m + 1]) + mins[2 * m + 1] * (bs[4 * m + 2] + bs[4 * m + 3]);
      acc_m[m] = fma_ordered(dmin, static_cast<float>(prod), acc_m[m]);
    }
    fma_superblock_ordered(acc, d, q, scale16, a[i].qs);
  }
  return hsum8_ordered(acc) + hsum4_ordered(acc_m);
}

}  // namespace sniper
