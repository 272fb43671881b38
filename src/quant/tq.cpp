// SPDX-License-Identifier: MIT
// TQ1_0 / TQ2_0 codecs (see tq.h), decoding as FORMATS.md 4.10-4.11. Read-only formats here.
#include "quant/tq.h"

#include "quant/block_count.h"
#include "quant/lane_order.h"

namespace sniper {

namespace {

// Trit n of byte b: q = (b * 3^n) mod 256, t = (q * 3) >> 8.
inline int8_t trit(uint8_t b, int n) {
  constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const auto q = static_cast<uint8_t>(b * kPow3[n]);
  return static_cast<int8_t>((static_cast<uint16_t>(q) * 3) >> 8);
}

template <typename Block, void (*Decode)(const Block&, int8_t*)>
void dequantize(const Block* x, float* y, int64_t n, const char* what) {
  const int64_t nb = block_count(n, kTQBlockSize, what);
  int8_t t[256];
  for (int64_t i = 0; i < nb; ++i) {
    Decode(x[i], t);
    const float d = fp16_to_fp32(x[i].d);
    for (int e = 0; e < 256; ++e) *y++ = static_cast<float>(t[e] - 1) * d;
  }
}

template <typename Block, void (*Decode)(const Block&, int8_t*)>
float vec_dot(int64_t n, const Block* w, const BlockQ8_K* a, const char* what) {
  const int64_t nb = block_count(n, kTQBlockSize, what);
  int8_t t[256];
  int ones[16];
  for (int& o : ones) o = 1;
  float acc[8] = {};
  for (int64_t i = 0; i < nb; ++i) {
    Decode(w[i], t);
    int lanes[8];
    superblock_lanes(lanes, t, ones, a[i].qs);
    const float d = a[i].d * fp16_to_fp32(w[i].d);
    for (int m = 0; m < 8; ++m) {
      lanes[m] -= a[i].bsums[2 * m] + a[i].bsums[2 * m + 1];
      acc[m] = fma_ordered(static_cast<float>(lanes[m]), d, acc[m]);
    }
  }
  return hsum8_ordered(acc);
}

}  // namespace

void decode_tq1_0_block(const BlockTQ1_0& b, int8_t* t) {
  for (int n = 0; n < 5; ++n) {
    for (int m = 0; m < 32; ++m) t[32 * n + m] = trit(b.qs[m], n);
    for (int m = 0; m < 16; ++m) t[160 + 16 * n + m] = trit(b.qs[32 + m], n);
  }
  for (int n = 0; n < 4; ++n) {
    for (int m = 0; m < 4; ++m) t[240 + 4 * n + m] = trit(b.qh[m], n);
  }
}

void decode_tq2_0_block(const BlockTQ2_0& b, int8_t* t) {
  for (int c = 0; c < 2; ++c) {
    for (int n = 0; n < 4; ++n) {
      for (int m = 0; m < 32; ++m) t[128 * c + 32 * n + m] = static_cast<int8_t>((b.qs[32 * c + m] >> (2 * n)) & 3);
    }
  }
}

void dequantize_row_tq1_0_ref(const BlockTQ1_0* x, float* y, int64_t n) {
  dequantize<BlockTQ1_0, decode_tq1_0_block>(x, y, n, "dequantize_row_tq1_0_ref");
}
void dequantize_row_tq2_0_ref(const BlockTQ2_0* x, float* y, int64_t n) {
  dequantize<BlockTQ2_0, decode_tq2_0_block>(x, y, n, "dequantize_row_tq2_0_ref");
}
float vec_dot_tq1_0_q8_K_ref(int64_t n, const BlockTQ1_0* w, const BlockQ8_K* a) {
  return vec_dot<BlockTQ1_0, decode_tq1_0_block>(n, w, a, "vec_dot_tq1_0_q8_K_ref");
}
float vec_dot_tq2_0_q8_K_ref(int64_t n, const BlockTQ2_0* w, const BlockQ8_K* a) {
  return vec_dot<BlockTQ2_0, decode_tq2_0_block>(n, w, a, "vec_dot_tq2_0_q8_K_ref");
}

}  // namespace sniper
