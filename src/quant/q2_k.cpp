// SPDX-License-Identifier: MIT
// Q2_K codec (see q2_k.h). Super-block of 256 = 16 groups of 16; element = d * sc * q - dmin * m
// with q in [0, 3] and 4-bit sc, m per group. qs layout: for each half (128 elements) h and
// l < 32, byte qs[32h + l] holds elements 128h + l + 32k in bits 2k..2k+1 (k = 0..3).
// The quantizer is ggml's quantize_row_q2_K_ref (make_qkx2_quants per group, weights |x|).
#include "quant/q2_k.h"

#include <algorithm>
#include <cmath>

#include "quant/block_count.h"
#include "quant/lane_order.h"
#include "quant/rounding.h"
#include "quant/scale_search.h"

namespace sniper {

void quantize_row_q2_K_ref(const float* x, BlockQ2_K* y, int64_t n) {
  const int64_t nb = block_count(n, kQ2_KBlockSize, "quantize_row_q2_K_ref");
  constexpr int kGroups = kQ2_KBlockSize / 16;
  constexpr float kQ4Scale = 15.0f;
  uint8_t L[kQ2_KBlockSize];
  uint8_t Laux[16];
  float weights[16];
  float mins[kGroups];
  float scales[kGroups];

  for (int64_t i = 0; i < nb; ++i, x += kQ2_KBlockSize) {
    float max_scale = 0.0f;  // scales are positive because the min is subtracted
    float max_min = 0.0f;
    for (int j = 0; j < kGroups; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }

    if (max_scale > 0) {
      const float iscale = kQ4Scale / max_scale;
      for (int j = 0; j < kGroups; ++j) {
        y[i].scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      }
      y[i].d = fp32_to_fp16(max_scale / kQ4Scale);
    } else {
      for (int j = 0; j < kGroups; ++j) y[i].scales[j] = 0;
      y[i].d = fp32_to_fp16(0.0f);
    }
    if (max_min > 0) {
      const float iscale = kQ4Scale / max_min;
      for (int j = 0; j < kGroups; ++j) {
        const int l = nearest_int(iscale * mins[j]);
        y[i].scales[j] = static_cast<uint8_t>(y[i].scales[j] | (l << 4));
      }
      y[i].dmin = fp32_to_fp16(max_min / kQ4Scale);
    } else {
      y[i].dmin = fp32_to_fp16(0.0f);
    }
    // Requantize against the rounded (f16, 4-bit) scales actually stored.
    for (int j = 0; j < kGroups; ++j) {
      const float d = fp16_to_fp32(y[i].d) * static_cast<float>(y[i].scales[j] & 0xF);
      if (d == 0.0f) continue;
      const float dm = fp16_to_fp32(y[i].dmin) * static_cast<float>(y[i].scales[j] >> 4);
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int((x[16 * j + ii] + dm) / d);
        L[16 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(3, l)));
      }
    }
    for (int j = 0; j < kQ2_KBlockSize; j += 128) {
      for (int l = 0; l < 32; ++l) {
        y[i].qs[j / 4 + l] =
            static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
      }
    }
  }
}

void dequantize_row_q2_K_ref(const BlockQ2_K* x, float* y, int64_t n) {
  const int64_t nb = block_count(n, kQ2_KBlockSize, "dequantize_row_q2_K_ref");
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float min = fp16_to_fp32(x[i].dmin);
    const uint8_t* q = x[i].qs;
    int is = 0;
    for (int half = 0; half < kQ2_KBlockSize; half += 128) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {
          const uint8_t sc = x[i].scales[is++];
          const float dl = d * static_cast<float>(sc & 0xF);
          const float ml = min * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l) {
            *y++ = dl * static_cast<float>((q[16 * part + l] >> shift) & 3) - ml;
          }
        }
      }
      q += 32;
    }
  }
}

float vec_dot_q2_K_q8_K_ref(int64_t n, const BlockQ2_K* w, const BlockQ8_K* a) {
  const int64_t nb = block_count(n, kQ2_KBlockSize, "vec_dot_q2_K_q8_K_ref");
  // ggml's AVX2 kernel: per super-block the min term (8 lanes of two 16-group products) is
  // FMA'd into the same 8 float lanes first, then the scaled sums.
  int8_t q[kQ2_KBlockSize];
  float acc[8] = {};
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* q2 = w[i].qs;
    const uint8_t* sc = w[i].scales;
    for (int k = 0; k < kQ2_KBlockSize / 128; ++k) {
      for (int s = 0; s < 4; ++s) {
        for (int l = 0; l < 32; ++l) q[128 * k + 32 * s + l] = static_cast<int8_t>((q2[32 * k + l] >> (2 * s)) & 3);
      }
    }
    int scale16[16];
    for (int g = 0; g < 16; ++g) scale16[g] = sc[g] & 0xF;
    const float d = a[i].d * fp16_to_fp32(w[i].d);
    const float dmin = -a[i].d * fp16_to_fp32(w[i].dmin);
    const int16_t* bs = a[i].bsums;
    for (int m = 0; m < 8; ++m) {
      const int prod = (sc[2 * m] >> 4) * bs[2 * m] + (sc[2 * m + 1] >> 4) * bs[2 * m + 1];
      acc[m] = fma_ordered(dmin, static_cast<float>(prod), acc[m]);
    }
    fma_superblock_ordered(acc, d, q, scale16, a[i].qs);
  }
  return hsum8_ordered(acc);
}

}  // namespace sniper
