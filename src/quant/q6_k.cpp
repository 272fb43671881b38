// SPDX-License-Identifier: MIT
// Q6_K codec (see q6_k.h). Super-block of 256 = 16 groups of 16; element = d * sc * (q - 32),
// q in [0, 63], sc an int8 per group. Layout per 128-element half h (ql += 64h, qh += 32h):
// for l < 32, element l: ql[l] low nibble + qh[l] bits 0-1; l+32: ql[l+32] low + bits 2-3;
// l+64: ql[l] high nibble + bits 4-5; l+96: ql[l+32] high + bits 6-7.
// The quantizer is ggml's quantize_row_q6_K_ref (make_qx_quants per group, rmse_type 1).
#include "quant/q6_k.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/block_count.h"
#include "quant/lane_order.h"
#include "quant/rounding.h"
#include "quant/scale_search.h"

namespace sniper {

void quantize_row_q6_K_ref(const float* x, BlockQ6_K* y, int64_t n) {
  const int64_t nb = block_count(n, kQ6_KBlockSize, "quantize_row_q6_K_ref");
  constexpr int kGroups = kQ6_KBlockSize / 16;
  int8_t L[kQ6_KBlockSize];
  float scales[kGroups];

  for (int64_t i = 0; i < nb; ++i, x += kQ6_KBlockSize) {
    float max_scale = 0.0f;
    float max_abs_scale = 0.0f;
    for (int ib = 0; ib < kGroups; ++ib) {
      const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, nullptr);
      scales[ib] = scale;
      if (std::fabs(scale) > max_abs_scale) {
        max_abs_scale = std::fabs(scale);
        max_scale = scale;
      }
    }

    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&y[i], 0, sizeof(BlockQ6_K));
      y[i].d = fp32_to_fp16(0.0f);
      continue;
    }

    const float iscale = -128.0f / max_scale;
    y[i].d = fp32_to_fp16(1.0f / iscale);
    for (int ib = 0; ib < kGroups; ++ib) {
      y[i].scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
    }

    for (int j = 0; j < kGroups; ++j) {
      const float d = fp16_to_fp32(y[i].d) * static_cast<float>(y[i].scales[j]);
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int(x[16 * j + ii] / d);
        L[16 * j + ii] = static_cast<int8_t>(std::max(-32, std::min(31, l)) + 32);
      }
    }

    uint8_t* ql = y[i].ql;
    uint8_t* qh = y[i].qh;
    for (int j = 0; j < kQ6_KBlockSize; j += 128) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t q1 = L[j + l + 0] & 0xF;
        const uint8_t q2 = L[j + l + 32] & 0xF;
        const uint8_t q3 = L[j + l + 64] & 0xF;
        const uint8_t q4 = L[j + l + 96] & 0xF;
        ql[l + 0] = static_cast<uint8_t>(q1 | (q3 << 4));
        ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
        qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                     ((L[j + l + 96] >> 4) << 6));
      }
      ql += 64;
      qh += 32;
    }
  }
}

void dequantize_row_q6_K_ref(const BlockQ6_K* x, float* y, int64_t n) {
  const int64_t nb = block_count(n, kQ6_KBlockSize, "dequantize_row_q6_K_ref");
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const uint8_t* ql = x[i].ql;
    const uint8_t* qh = x[i].qh;
    const int8_t* sc = x[i].scales;
    for (int half = 0; half < kQ6_KBlockSize; half += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

float vec_dot_q6_K_q8_K_ref(int64_t n, const BlockQ6_K* w, const BlockQ8_K* a) {
  const int64_t nb = block_count(n, kQ6_KBlockSize, "vec_dot_q6_K_q8_K_ref");
  // The reference build's kernel: unsigned 6-bit values in the AVX2 lane layout, and the -32
  // offset through the activation group sums, lane k losing 32 * (sc[2k] * bsums[2k] +
  // sc[2k+1] * bsums[2k+1]) (verified against the reference logits: the per-product offset of
  // the older AVX2 code gives different bits).
  int8_t q[kQ6_KBlockSize];
  float acc[8] = {};
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* q4 = w[i].ql;
    const uint8_t* qh = w[i].qh;
    int8_t* p = q;
    for (int j = 0; j < kQ6_KBlockSize; j += 128) {
      for (int l = 0; l < 32; ++l) {
        p[l + 0] = static_cast<int8_t>(((q4[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)));
        p[l + 32] = static_cast<int8_t>(((q4[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)));
        p[l + 64] = static_cast<int8_t>(((q4[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)));
        p[l + 96] = static_cast<int8_t>(((q4[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)));
      }
      p += 128;
      q4 += 64;
      qh += 32;
    }
    int scale16[16];
    for (int g = 0; g < 16; ++g) scale16[g] = w[i].scales[g];
    int lanes[8];
    superblock_lanes(lanes, q, scale16, a[i].qs);
    for (int k = 0; k < 8; ++k) {
      lanes[k] -= 32 * (scale16[2 * k] * a[i].bsums[2 * k] + scale16[2 * k + 1] * a[i].bsums[2 * k + 1]);
    }
    fma_lanes8(acc, a[i].d * fp16_to_fp32(w[i].d), lanes);
  }
  return hsum8_ordered(acc);
}

}  // namespace sniper
