// SPDX-License-Identifier: MIT
// IQ1_S / IQ1_M codecs (see iq1.h), decoding as FORMATS.md 4.6-4.7 with kIq1sGrid from the
// generated iq_grids.h. Read-only formats here (no quantizer). The dot products reproduce the
// float operations of ggml's AVX2 kernels, including the FMAs its build contracts
// (`accum1 += d * sumi1` and `hsum + IQ1S_DELTA * accum1`).
#include "quant/iq1.h"

#include <cstring>

#include "quant/iq1_dot.h"
#include "quant/iq_grids.h"

namespace sniper {

namespace {

inline void ternary8(uint64_t entry, int8_t* q) {
  for (int j = 0; j < 8; ++j) q[j] = static_cast<int8_t>(static_cast<uint8_t>(entry >> (8 * j)));
}

}  // namespace

fp16_t iq1_m_scale_bits(const BlockIQ1_M& b) {
  uint16_t sc[4];
  std::memcpy(sc, b.scales, 8);
  return static_cast<fp16_t>((sc[0] >> 12) | ((sc[1] >> 12) << 4) | ((sc[2] >> 12) << 8) | ((sc[3] >> 12) << 12));
}

void decode_iq1_s_block(const BlockIQ1_S& b, int8_t* q, int8_t* delta, int* scale16) {
  for (int s = 0; s < 8; ++s) {
    const uint16_t h = b.qh[s];
    for (int l = 0; l < 4; ++l) {
      const int idx = b.qs[4 * s + l] | (((h >> (3 * l)) & 7) << 8);
      ternary8(kIq1sGrid[idx], q + 32 * s + 8 * l);
    }
    const int8_t e = (h & 0x8000) ? -1 : 1;
    for (int j = 0; j < 32; ++j) delta[32 * s + j] = e;
    scale16[2 * s] = scale16[2 * s + 1] = 2 * ((h >> 12) & 7) + 1;
  }
}

void decode_iq1_m_block(const BlockIQ1_M& b, int8_t* q, int8_t* delta, int* scale16) {
  uint16_t sc[4];
  std::memcpy(sc, b.scales, 8);
  for (int s = 0; s < 8; ++s) {
    for (int l = 0; l < 4; ++l) {
      const int nib = (b.qh[2 * s + l / 2] >> (4 * (l % 2))) & 0xf;
      const int idx = b.qs[4 * s + l] | ((nib & 7) << 8);
      ternary8(kIq1sGrid[idx], q + 32 * s + 8 * l);
      for (int j = 0; j < 8; ++j) delta[32 * s + 8 * l + j] = (nib & 8) ? -1 : 1;
    }
    const int r = 6 * (s % 2);
    scale16[2 * s] = 2 * ((sc[s / 2] >> r) & 7) + 1;
    scale16[2 * s + 1] = 2 * ((sc[s / 2] >> (r + 3)) & 7) + 1;
  }
}

namespace {

fp16_t iq1_s_d(const BlockIQ1_S& b) { return b.d; }

}  // namespace

void dequantize_row_iq1_s_ref(const BlockIQ1_S* x, float* y, int64_t n) {
  iq1_internal::dequantize<BlockIQ1_S, decode_iq1_s_block, iq1_s_d>(x, y, n, "dequantize_row_iq1_s_ref");
}

void dequantize_row_iq1_m_ref(const BlockIQ1_M* x, float* y, int64_t n) {
  iq1_internal::dequantize<BlockIQ1_M, decode_iq1_m_block, iq1_m_scale_bits>(x, y, n, "dequantize_row_iq1_m_ref");
}

float vec_dot_iq1_s_q8_K_ref(int64_t n, const BlockIQ1_S* w, const BlockQ8_K* a) {
  return iq1_internal::vec_dot_s<BlockIQ1_S, decode_iq1_s_block, iq1_s_d>(n, w, a, "vec_dot_iq1_s_q8_K_ref");
}

float vec_dot_iq1_m_q8_K_ref(int64_t n, const BlockIQ1_M* w, const BlockQ8_K* a) {
  return iq1_internal::vec_dot_m<BlockIQ1_M, decode_iq1_m_block, iq1_m_scale_bits>(n, w, a, "vec_dot_iq1_m_q8_K_ref");
}

}  // namespace sniper
