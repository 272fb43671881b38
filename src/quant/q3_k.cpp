// SPDX-License-Identifier: MIT
// Q3_K codec (see q3_k.h). Super-block of 256 = 16 groups of 16; element = d * (sc - 32) * q
// with q = low2 - (hbit ? 0 : 4) in [-4, 3] and 6-bit sc per group. Scale packing (12 bytes):
// group j < 8 keeps its low nibble in scales[j] bits 0..3, j >= 8 in scales[j-8] bits 4..7;
// the top 2 bits of group j sit in scales[8 + j%4] bits 2*(j/4)..2*(j/4)+1. hmask bit k of
// byte l is the high bit of element 32k + l. qs uses Q2_K's 2-bit layout.
// The quantizer is ggml's quantize_row_q3_K_ref (make_q3_quants per group).
#include "quant/q3_k.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/block_count.h"
#include "quant/lane_order.h"
#include "quant/rounding.h"
#include "quant/scale_search.h"

namespace sniper {

namespace {

// Unpacks the 16 6-bit scales (still biased by 32) exactly as ggml does with
// kmask1 = 0x03030303 (2-bit high parts) and kmask2 = 0x0f0f0f0f (nibbles).
void unpack_q3_K_scales(const uint8_t* packed, int8_t* scales) {
  constexpr uint32_t kmask1 = 0x03030303;
  constexpr uint32_t kmask2 = 0x0f0f0f0f;
  uint32_t aux[4];
  std::memcpy(aux, packed, 12);
  const uint32_t tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
  std::memcpy(scales, aux, 16);
}

}  // namespace

void quantize_row_q3_K_ref(const float* x, BlockQ3_K* y, int64_t n) {
  const int64_t nb = block_count(n, kQ3_KBlockSize, "quantize_row_q3_K_ref");
  constexpr int kGroups = kQ3_KBlockSize / 16;
  int8_t L[kQ3_KBlockSize];
  float scales[kGroups];

  for (int64_t i = 0; i < nb; ++i, x += kQ3_KBlockSize) {
    float max_scale = 0.0f;
    float amax = 0.0f;
    for (int j = 0; j < kGroups; ++j) {
      scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
      const float scale = std::fabs(scales[j]);
      if (scale > amax) {
        amax = scale;
        max_scale = scales[j];
      }
    }

    std::memset(y[i].scales, 0, 12);
    if (max_scale != 0.0f) {
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < kGroups; ++j) {
        // ggml stores nearest_int into an int8_t first (modular), then clamps.
        int8_t l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
        l = static_cast<int8_t>(std::max<int>(-32, std::min<int>(31, l)) + 32);
        if (j < 8) {
          y[i].scales[j] = static_cast<uint8_t>(l & 0xF);
        } else {
          y[i].scales[j - 8] = static_cast<uint8_t>(y[i].scales[j - 8] | ((l & 0xF) << 4));
        }
        l = static_cast<int8_t>(l >> 4);
        y[i].scales[j % 4 + 8] = static_cast<uint8_t>(y[i].scales[j % 4 + 8] | (l << (2 * (j / 4))));
      }
      y[i].d = fp32_to_fp16(1.0f / iscale);
    } else {
      y[i].d = fp32_to_fp16(0.0f);
    }

    // Requantize against the stored (f16 d, 6-bit) scales.
    for (int j = 0; j < kGroups; ++j) {
      int sc = j < 8 ? y[i].scales[j] & 0xF : y[i].scales[j - 8] >> 4;
      sc = (sc | (((y[i].scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
      const float d = fp16_to_fp32(y[i].d) * static_cast<float>(sc);
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int(x[16 * j + ii] / d);
        L[16 * j + ii] = static_cast<int8_t>(std::max(-4, std::min(3, l)) + 4);
      }
    }

    std::memset(y[i].hmask, 0, sizeof(y[i].hmask));
    int m = 0;
    uint8_t hm = 1;
    for (int j = 0; j < kQ3_KBlockSize; ++j) {
      if (L[j] > 3) {
        y[i].hmask[m] = static_cast<uint8_t>(y[i].hmask[m] | hm);
        L[j] = static_cast<int8_t>(L[j] - 4);
      }
      if (++m == kQ3_KBlockSize / 8) {
        m = 0;
        hm = static_cast<uint8_t>(hm << 1);
      }
    }
    for (int j = 0; j < kQ3_KBlockSize; j += 128) {
      for (int l = 0; l < 32; ++l) {
        y[i].qs[j / 4 + l] =
            static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
      }
    }
  }
}

void dequantize_row_q3_K_ref(const BlockQ3_K* x, float* y, int64_t n) {
  const int64_t nb = block_count(n, kQ3_KBlockSize, "dequantize_row_q3_K_ref");
  int8_t scales[16];
  for (int64_t i = 0; i < nb; ++i) {
    const float d_all = fp16_to_fp32(x[i].d);
    const uint8_t* q = x[i].qs;
    const uint8_t* hm = x[i].hmask;
    uint8_t m = 1;
    unpack_q3_K_scales(x[i].scales, scales);
    int is = 0;
    for (int half = 0; half < kQ3_KBlockSize; half += 128) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {
          const float dl = d_all * static_cast<float>(scales[is++] - 32);
          for (int l = 16 * part; l < 16 * part + 16; ++l) {
            const int v = ((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4);
            *y++ = dl * static_cast<float>(v);
          }
        }
        m = static_cast<uint8_t>(m << 1);
      }
      q += 32;
    }
  }
}

float vec_dot_q3_K_q8_K_ref(int64_t n, const BlockQ3_K* w, const BlockQ8_K* a) {
  const int64_t nb = block_count(n, kQ3_KBlockSize, "vec_dot_q3_K_q8_K_ref");
  // ggml's AVX2 kernel: the -4 offset (clear high bit) is applied per product.
  int8_t q[kQ3_KBlockSize];
  int8_t scales[16];
  float acc[8] = {};
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* q3 = w[i].qs;
    const uint8_t* hm = w[i].hmask;
    int8_t* p = q;
    uint8_t m = 1;
    for (int j = 0; j < kQ3_KBlockSize; j += 128) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int l = 0; l < 32; ++l) {
          p[l] = static_cast<int8_t>(((q3[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
        }
        p += 32;
        m = static_cast<uint8_t>(m << 1);
      }
      q3 += 32;
    }
    unpack_q3_K_scales(w[i].scales, scales);
    int scale16[16];
    for (int g = 0; g < 16; ++g) scale16[g] = scales[g] - 32;
    fma_superblock_ordered(acc, a[i].d * fp16_to_fp32(w[i].d), q, scale16, a[i].qs);
  }
  return hsum8_ordered(acc);
}

}  // namespace sniper
