// SPDX-License-Identifier: MIT
// IQ4_XS codec (see iq4_xs.h). Super-block of 256 = 8 blocks of 32; element =
// d * (ls - 32) * kIq4nlValues[q] with the 6-bit ls of block ib split as
// low 4 bits = (scales_l[ib/2] >> 4*(ib%2)) & 0xf, high 2 bits = (scales_h >> 2*ib) & 3.
// Block ib's 16 bytes qs[16ib..] hold element j (low nibble) and j + 16 (high nibble).
// The quantizer is ggml's quantize_row_iq4_xs_ref (non-linear search, ntry = 7).
#include "quant/iq4_xs.h"

#include <initializer_list>

#include "quant/block_count.h"
#include "quant/scale_search.h"

namespace sniper {

void quantize_row_iq4_xs_ref(const float* x, BlockIQ4_XS* y, int64_t n) {
  const int64_t nb = block_count(n, kIQ4_XSBlockSize, "quantize_row_iq4_xs_ref");
  uint8_t L[kIQ4_XSBlockSize];
  float weight[32];
  float scales[kIQ4_XSBlockSize / 32];
  for (int64_t i = 0; i < nb; ++i) {
    make_iq4_quants(kIQ4_XSBlockSize, x + i * kIQ4_XSBlockSize, &y[i].d, y[i].qs, &y[i].scales_h, y[i].scales_l, scales,
                    weight, L, 7);
  }
}

void dequantize_row_iq4_xs_ref(const BlockIQ4_XS* x, float* y, int64_t n) {
  const int64_t nb = block_count(n, kIQ4_XSBlockSize, "dequantize_row_iq4_xs_ref");
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* qs = x[i].qs;
    const float d = fp16_to_fp32(x[i].d);
    for (int ib = 0; ib < kIQ4_XSBlockSize / 32; ++ib) {
      const int ls = ((x[i].scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((x[i].scales_h >> 2 * ib) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      for (int j = 0; j < 16; ++j) {
        y[j + 0] = dl * static_cast<float>(kIq4nlValues[qs[j] & 0xf]);
        y[j + 16] = dl * static_cast<float>(kIq4nlValues[qs[j] >> 4]);
      }
      y += 32;
      qs += 16;
    }
  }
}

float vec_dot_iq4_xs_q8_K_ref(int64_t n, const BlockIQ4_XS* w, const BlockQ8_K* a) {
  const int64_t nb = block_count(n, kIQ4_XSBlockSize, "vec_dot_iq4_xs_q8_K_ref");
  float sumf = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const float d4d8 = fp16_to_fp32(w[i].d) * a[i].d;
    uint16_t h = w[i].scales_h;
    const uint8_t* qs = w[i].qs;
    const int8_t* q8 = a[i].qs;
    for (int ib = 0; ib < kIQ4_XSBlockSize / 32; ib += 2) {
      const int ls1 = (w[i].scales_l[ib / 2] & 0xf) | ((h << 4) & 0x30);
      const int ls2 = (w[i].scales_l[ib / 2] >> 4) | ((h << 2) & 0x30);
      h = static_cast<uint16_t>(h >> 4);
      const float d1 = d4d8 * static_cast<float>(ls1 - 32);
      const float d2 = d4d8 * static_cast<float>(ls2 - 32);
      for (const float dl : {d1, d2}) {
        int sumi1 = 0;
        int sumi2 = 0;
        for (int j = 0; j < 16; ++j) {
          sumi1 += q8[j + 0] * kIq4nlValues[qs[j] & 0xf];
          sumi2 += q8[j + 16] * kIq4nlValues[qs[j] >> 4];
        }
        sumf += dl * static_cast<float>(sumi1 + sumi2);
        qs += 16;
        q8 += 32;
      }
    }
  }
  return sumf;
}

}  // namespace sniper
