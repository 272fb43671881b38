// SPDX-License-Identifier: MIT
// IQ3_XXS / IQ3_S codecs (see iq3.h), decoding as FORMATS.md 4.4-4.5 with the generated tables of
// iq_grids.h. Read-only formats here (no quantizer).
#include "quant/iq3.h"

#include <cstring>

#include "quant/iq_grids.h"
#include "quant/iq_scaled.h"

namespace sniper {

namespace {

// q[0..3] = the 4 magnitudes of `entry` with signs from bits `shift`.. of sign byte s.
inline void signed_grid4(uint32_t entry, uint8_t s, int shift, int8_t* q) {
  for (int j = 0; j < 4; ++j) {
    const int v = static_cast<int>((entry >> (8 * j)) & 0xff);
    q[j] = static_cast<int8_t>((s >> (shift + j)) & 1 ? -v : v);
  }
}

}  // namespace

void decode_iq3_xxs_block(const BlockIQ3_XXS& b, int8_t* q, int* scale16) {
  for (int s = 0; s < 8; ++s) {
    uint32_t w;
    std::memcpy(&w, b.qs + 64 + 4 * s, 4);
    for (int l = 0; l < 4; ++l) {
      const uint8_t sign = kKsignsIq2xs[(w >> (7 * l)) & 127];
      int8_t* out = q + 32 * s + 8 * l;
      signed_grid4(kIq3xxsGrid[b.qs[8 * s + 2 * l]], sign, 0, out);
      signed_grid4(kIq3xxsGrid[b.qs[8 * s + 2 * l + 1]], sign, 4, out + 4);
    }
    scale16[2 * s] = scale16[2 * s + 1] = 2 * static_cast<int>(w >> 28) + 1;
  }
}

void decode_iq3_s_block(const BlockIQ3_S& b, int8_t* q, int* scale16) {
  for (int s = 0; s < 8; ++s) {
    for (int l = 0; l < 4; ++l) {
      const int i0 = b.qs[8 * s + 2 * l] | (((b.qh[s] >> (2 * l)) & 1) << 8);
      const int i1 = b.qs[8 * s + 2 * l + 1] | (((b.qh[s] >> (2 * l + 1)) & 1) << 8);
      const uint8_t sign = b.signs[4 * s + l];
      int8_t* out = q + 32 * s + 8 * l;
      signed_grid4(kIq3sGrid[i0], sign, 0, out);
      signed_grid4(kIq3sGrid[i1], sign, 4, out + 4);
    }
    const int c = (b.scales[s / 2] >> (4 * (s % 2))) & 0xf;
    scale16[2 * s] = scale16[2 * s + 1] = 2 * c + 1;
  }
}

void dequantize_row_iq3_xxs_ref(const BlockIQ3_XXS* x, float* y, int64_t n) {
  iq_internal::dequantize_scaled<BlockIQ3_XXS, decode_iq3_xxs_block>(x, y, n, 0.25f, "dequantize_row_iq3_xxs_ref");
}
void dequantize_row_iq3_s_ref(const BlockIQ3_S* x, float* y, int64_t n) {
  iq_internal::dequantize_scaled<BlockIQ3_S, decode_iq3_s_block>(x, y, n, 1.0f, "dequantize_row_iq3_s_ref");
}

float vec_dot_iq3_xxs_q8_K_ref(int64_t n, const BlockIQ3_XXS* w, const BlockQ8_K* a) {
  return iq_internal::vec_dot_scaled<BlockIQ3_XXS, decode_iq3_xxs_block>(n, w, a, 0.25f, "vec_dot_iq3_xxs_q8_K_ref");
}
float vec_dot_iq3_s_q8_K_ref(int64_t n, const BlockIQ3_S* w, const BlockQ8_K* a) {
  return iq_internal::vec_dot_scaled<BlockIQ3_S, decode_iq3_s_block>(n, w, a, 1.0f, "vec_dot_iq3_s_q8_K_ref");
}

}  // namespace sniper
