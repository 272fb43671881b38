// SPDX-License-Identifier: MIT
// IQ1_S / IQ1_M codecs (see iq1.h), decoding as FORMATS.md 4.6-4.7 with kIq1sGrid from the
// generated iq_grids.h. Read-only formats here (no quantizer). The dot products reproduce the
// float operations of ggml's AVX2 kernels, including the FMAs its build contracts
// (`accum1 += d * sumi1` and `hsum + IQ1S_DELTA * accum1`).
#include "quant/iq1.h"

#include <cstring>

#include "quant/block_count.h"
#include "quant/iq_grids.h"
#include "quant/lane_order.h"

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

// d * (2c+1) * (q + delta/8): d has 11 significant bits, 2c+1 < 16 and q + delta/8 in
// {+-0.875, +-1.125, +-0.125}: every product is exact in float.
void dequantize_block(float d, const int8_t* q, const int8_t* delta, const int* scale16, float* y) {
  for (int e = 0; e < 256; ++e) {
    const float dl = d * static_cast<float>(scale16[e / 16]);
    y[e] = dl * (static_cast<float>(q[e]) + 0.125f * static_cast<float>(delta[e]));
  }
}

}  // namespace

void dequantize_row_iq1_s_ref(const BlockIQ1_S* x, float* y, int64_t n) {
  const int64_t nb = block_count(n, kIQ1BlockSize, "dequantize_row_iq1_s_ref");
  int8_t q[256], delta[256];
  int scale16[16];
  for (int64_t i = 0; i < nb; ++i, y += 256) {
    decode_iq1_s_block(x[i], q, delta, scale16);
    dequantize_block(fp16_to_fp32(x[i].d), q, delta, scale16, y);
  }
}

void dequantize_row_iq1_m_ref(const BlockIQ1_M* x, float* y, int64_t n) {
  const int64_t nb = block_count(n, kIQ1BlockSize, "dequantize_row_iq1_m_ref");
  int8_t q[256], delta[256];
  int scale16[16];
  for (int64_t i = 0; i < nb; ++i, y += 256) {
    decode_iq1_m_block(x[i], q, delta, scale16);
    dequantize_block(fp16_to_fp32(iq1_m_scale_bits(x[i])), q, delta, scale16, y);
  }
}

float vec_dot_iq1_s_q8_K_ref(int64_t n, const BlockIQ1_S* w, const BlockQ8_K* a) {
  const int64_t nb = block_count(n, kIQ1BlockSize, "vec_dot_iq1_s_q8_K_ref");
  int8_t q[256], delta[256];
  int scale16[16];
  float acc[8] = {};
  float acc1 = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    decode_iq1_s_block(w[i], q, delta, scale16);
    int sumi1 = 0;  // sum_s (2c_s+1) * e_s * (sum of the sub-block's activations)
    for (int s = 0; s < 8; ++s) sumi1 += (a[i].bsums[2 * s] + a[i].bsums[2 * s + 1]) * delta[32 * s] * scale16[2 * s];
    const float d = a[i].d * fp16_to_fp32(w[i].d);
    fma_superblock_ordered(acc, d, q, scale16, a[i].qs);
    acc1 = fma_ordered(d, static_cast<float>(sumi1), acc1);
  }
  return fma_ordered(0.125f, acc1, hsum8_ordered(acc));
}

float vec_dot_iq1_m_q8_K_ref(int64_t n, const BlockIQ1_M* w, const BlockQ8_K* a) {
  const int64_t nb = block_count(n, kIQ1BlockSize, "vec_dot_iq1_m_q8_K_ref");
  int8_t q[256], delta[256];
  int scale16[16];
  float acc1[8] = {}, acc2[8] = {};
  for (int64_t i = 0; i < nb; ++i) {
    decode_iq1_m_block(w[i], q, delta, scale16);
    const float d = a[i].d * fp16_to_fp32(iq1_m_scale_bits(w[i]));
    fma_superblock_ordered(acc1, d, q, scale16, a[i].qs);
    fma_superblock_ordered(acc2, d, delta, scale16, a[i].qs);
  }
  return fma_ordered(0.125f, hsum8_ordered(acc2), hsum8_ordered(acc1));
}

}  // namespace sniper
