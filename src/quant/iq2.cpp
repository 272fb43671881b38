// SPDX-License-Identifier: MIT
// IQ2_XXS / IQ2_XS / IQ2_S codecs (see iq2.h). Decoding follows FORMATS.md 4.1-4.3; the tables
// come from the generated iq_grids.h. Decoded weights are exact in float (fp16 d times small
// integers), so the dequantizer's evaluation order does not matter. No quantizer: these types
// need llama.cpp's importance-matrix search; we only read them.
#include "quant/iq2.h"

#include <cstring>

#include "quant/iq_grids.h"
#include "quant/iq_scaled.h"

namespace sniper {

namespace {

// Writes the 8 grid magnitudes of `entry` times the signs of sign byte `s` to q[0..7].
inline void signed_grid8(uint64_t entry, uint8_t s, int8_t* q) {
  for (int j = 0; j < 8; ++j) {
    const int v = static_cast<int>((entry >> (8 * j)) & 0xff);
    q[j] = static_cast<int8_t>((s >> j) & 1 ? -v : v);
  }
}

}  // namespace

void decode_iq2_xxs_block(const BlockIQ2_XXS& b, int8_t* q, int* scale16) {
  const auto* qs = reinterpret_cast<const uint8_t*>(b.qs);
  for (int s = 0; s < 8; ++s) {
    const uint8_t* chunk = qs + 8 * s;
    uint32_t w;
    std::memcpy(&w, chunk + 4, 4);
    for (int l = 0; l < 4; ++l) {
      signed_grid8(kIq2xxsGrid[chunk[l]], kKsignsIq2xs[(w >> (7 * l)) & 127], q + 32 * s + 8 * l);
    }
    scale16[2 * s] = scale16[2 * s + 1] = 2 * static_cast<int>(w >> 28) + 1;
  }
}

void decode_iq2_xs_block(const BlockIQ2_XS& b, int8_t* q, int* scale16) {
  for (int g = 0; g < 32; ++g) {
    const uint16_t v = b.qs[g];
    signed_grid8(kIq2xsGrid[v & 511], kKsignsIq2xs[v >> 9], q + 8 * g);
  }
  for (int s = 0; s < 8; ++s) {
    scale16[2 * s] = 2 * (b.scales[s] & 0xf) + 1;
    scale16[2 * s + 1] = 2 * (b.scales[s] >> 4) + 1;
  }
}

void decode_iq2_s_block(const BlockIQ2_S& b, int8_t* q, int* scale16) {
  const uint8_t* signs = b.qs + 32;
  for (int g = 0; g < 32; ++g) {
    const int s = g / 4, l = g % 4;
    const int idx = b.qs[g] | (((b.qh[s] >> (2 * l)) & 3) << 8);
    signed_grid8(kIq2sGrid[idx], signs[g], q + 8 * g);
  }
  for (int s = 0; s < 8; ++s) {
    scale16[2 * s] = 2 * (b.scales[s] & 0xf) + 1;
    scale16[2 * s + 1] = 2 * (b.scales[s] >> 4) + 1;
  }
}

void dequantize_row_iq2_xxs_ref(const BlockIQ2_XXS* x, float* y, int64_t n) {
  iq_internal::dequantize_scaled<BlockIQ2_XXS, decode_iq2_xxs_block>(x, y, n, 0.125f, "dequantize_row_iq2_xxs_ref");
}
void dequantize_row_iq2_xs_ref(const BlockIQ2_XS* x, float* y, int64_t n) {
  iq_internal::dequantize_scaled<BlockIQ2_XS, decode_iq2_xs_block>(x, y, n, 0.125f, "dequantize_row_iq2_xs_ref");
}
void dequantize_row_iq2_s_ref(const BlockIQ2_S* x, float* y, int64_t n) {
  iq_internal::dequantize_scaled<BlockIQ2_S, decode_iq2_s_block>(x, y, n, 0.125f, "dequantize_row_iq2_s_ref");
}

float vec_dot_iq2_xxs_q8_K_ref(int64_t n, const BlockIQ2_XXS* w, const BlockQ8_K* a) {
  return iq_internal::vec_dot_scaled<BlockIQ2_XXS, decode_iq2_xxs_block>(n, w, a, 0.125f, "vec_dot_iq2_xxs_q8_K_ref");
}
float vec_dot_iq2_xs_q8_K_ref(int64_t n, const BlockIQ2_XS* w, const BlockQ8_K* a) {
  return iq_internal::vec_dot_scaled<BlockIQ2_XS, decode_iq2_xs_block>(n, w, a, 0.125f, "vec_dot_iq2_xs_q8_K_ref");
}
float vec_dot_iq2_s_q8_K_ref(int64_t n, const BlockIQ2_S* w, const BlockQ8_K* a) {
  return iq_internal::vec_dot_scaled<BlockIQ2_S, decode_iq2_s_block>(n, w, a, 0.125f, "vec_dot_iq2_s_q8_K_ref");
}

}  // namespace sniper
