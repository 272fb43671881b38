// SPDX-License-Identifier: MIT
// Q5_K codec (see q5_k.h). As Q4_K with q in [0, 31]: the low 4 bits use Q4_K's qs layout and
// the 5th bit of element 64c + l (resp. 64c + 32 + l) is bit 2c (resp. 2c + 1) of qh[l].
// The quantizer is ggml's quantize_row_q5_K_ref (make_qkx2_quants per group of 32).
#include "quant/q5_k.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/block_count.h"
#include "quant/k_scales.h"
#include "quant/lane_order.h"
#include "quant/rounding.h"
#include "quant/scale_search.h"

namespace sniper {

void quantize_row_q5_K_ref(const float* x, BlockQ5_K* y, int64_t n) {
  const int64_t nb = block_count(n, kQ5_KBlockSize, "quantize_row_q5_K_ref");
  uint8_t L[kQ5_KBlockSize];

  for (int64_t i = 0; i < nb; ++i, x += kQ5_KBlockSize) {
    quantize_scale_min_super_block(x, 31, -0.5f, 15, y[i].scales, &y[i].d, &y[i].dmin, L);

    uint8_t* qh = y[i].qh;
    uint8_t* ql = y[i].qs;
    std::memset(qh, 0, sizeof(y[i].qh));
    uint8_t m1 = 1;
    uint8_t m2 = 2;
    for (int c = 0; c < kQ5_KBlockSize; c += 64) {
      for (int j = 0; j < 32; ++j) {
        int l1 = L[c + j];
        if (l1 > 15) {
          l1 -= 16;
          qh[j] = static_cast<uint8_t>(qh[j] | m1);
        }
        int l2 = L[c + j + 32];
        if (l2 > 15) {
          l2 -= 16;
          qh[j] = static_cast<uint8_t>(qh[j] | m2);
        }
        ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
      }
      m1 = static_cast<uint8_t>(m1 << 2);
      m2 = static_cast<uint8_t>(m2 << 2);
      ql += 32;
    }
  }
}

void dequantize_row_q5_K_ref(const BlockQ5_K* x, float* y, int64_t n) {
  const int64_t nb = block_count(n, kQ5_KBlockSize, "dequantize_row_q5_K_ref");
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* ql = x[i].qs;
    const uint8_t* qh = x[i].qh;
    const float d = fp16_to_fp32(x[i].d);
    const float min = fp16_to_fp32(x[i].dmin);
    int is = 0;
    uint8_t u1 = 1;
    uint8_t u2 = 2;
    for (int j = 0; j < kQ5_KBlockSize; j += 64) {
      uint8_t sc;
      uint8_t m;
      get_scale_min_k4(is + 0, x[i].scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = min * static_cast<float>(m);
      get_scale_min_k4(is + 1, x[i].scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = min * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) {
        *y++ = d1 * static_cast<float>((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
      }
      ql += 32;
      is += 2;
      u1 = static_cast<uint8_t>(u1 << 2);
      u2 = static_cast<uint8_t>(u2 << 2);
    }
  }
}

float vec_dot_q5_K_q8_K_ref(int64_t n, const BlockQ5_K* w, const BlockQ8_K* a) {
  const int64_t nb = block_count(n, kQ5_KBlockSize, "vec_dot_q5_K_q8_K_ref");
  // ggml's AVX2 kernel: 8 float lanes for the scaled sums; the min term is one integer per
  // super-block FMA'd into a scalar.
  int8_t q[kQ5_KBlockSize];
  float acc[8] = {};
  float summs = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* q4 = w[i].qs;
    const uint8_t* hm = w[i].qh;
    uint8_t m = 1;
    for (int j = 0; j < kQ5_KBlockSize / 64; ++j) {
      for (int l = 0; l < 32; ++l) q[64 * j + l] = static_cast<int8_t>((q4[l] & 0xF) + ((hm[l] & m) ? 16 : 0));
      m = static_cast<uint8_t>(m << 1);
      for (int l = 0; l < 32; ++l) q[64 * j + 32 + l] = static_cast<int8_t>((q4[l] >> 4) + ((hm[l] & m) ? 16 : 0));
      m = static_cast<uint8_t>(m << 1);
      q4 += 32;
    }
    uint8_t scales[8];
    uint8_t mins[8];
    for (int j = 0; j < 8; ++j) get_scale_min_k4(j, w[i].scales, &scales[j], &mins[j]);
    int scale16[16];
    for (int g = 0; g < 16; ++g) scale16[g] = scales[g / 2];
    const float d = a[i].d * fp16_to_fp32(w[i].d);
    const float dmin = -a[i].d * fp16_to_fp32(w[i].dmin);
    int sumi = 0;
    for (int g = 0; g < kQ5_KBlockSize / 16; ++g) sumi += a[i].bsums[g] * mins[g / 2];
    summs = fma_ordered(dmin, static_cast<float>(sumi), summs);
    fma_superblock_ordered(acc, d, q, scale16, a[i].qs);
  }
  return hsum8_ordered(acc) + summs;
}

}  // namespace sniper
