// SPDX-License-Identifier: MIT
// IQ4_NL codec (see iq4_nl.h): x = d * kIq4nlValues[q], q a 4-bit index (low nibble of qs[j] =
// element j, high nibble = element j + 16). The quantizer is ggml's quantize_row_iq4_nl_ref:
// the non-linear search of scale_search.h with weights x^2 and ntry = -1 (no scale sweep).
#include "quant/iq4_nl.h"

#include <cmath>

#include "quant/block_count.h"
#include "quant/lane_order.h"
#include "quant/scale_search.h"

namespace sniper {

void quantize_row_iq4_nl_ref(const float* x, BlockIQ4_NL* y, int64_t n) {
  const int64_t nb = block_count(n, kIQ4_NLBlockSize, "quantize_row_iq4_nl_ref");
  uint8_t L[kIQ4_NLBlockSize];
  float weight[kIQ4_NLBlockSize];
  float scale;
  uint16_t unused_h;
  uint8_t unused_l[4];
  for (int64_t i = 0; i < nb; ++i) {
    make_iq4_quants(kIQ4_NLBlockSize, x + i * kIQ4_NLBlockSize, &y[i].d, y[i].qs, &unused_h, unused_l, &scale, weight,
                    L, -1);
  }
}

void dequantize_row_iq4_nl_ref(const BlockIQ4_NL* x, float* y, int64_t n) {
  const int64_t nb = block_count(n, kIQ4_NLBlockSize, "dequantize_row_iq4_nl_ref");
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    float* yb = y + i * kIQ4_NLBlockSize;
    for (int j = 0; j < kIQ4_NLBlockSize / 2; ++j) {
      yb[j] = d * static_cast<float>(kIq4nlValues[x[i].qs[j] & 0xf]);
      yb[j + kIQ4_NLBlockSize / 2] = d * static_cast<float>(kIq4nlValues[x[i].qs[j] >> 4]);
    }
  }
}

float vec_dot_iq4_nl_q8_0_ref(int64_t n, const BlockIQ4_NL* w, const BlockQ8_0* a) {
  const int64_t nb = block_count(n, kIQ4_NLBlockSize, "vec_dot_iq4_nl_q8_0_ref");
  constexpr int kHalf = kIQ4_NLBlockSize / 2;
  // tinyBLAS order (ggml's batched path); its single-token AVX2 kernel pairs two accumulators.
  float acc[8] = {};
  for (int64_t i = 0; i < nb; ++i) {
    int v[kIQ4_NLBlockSize];
    for (int j = 0; j < kHalf; ++j) {
      v[j] = kIq4nlValues[w[i].qs[j] & 0xf];
      v[kHalf + j] = kIq4nlValues[w[i].qs[j] >> 4];
    }
    fma_block32_ordered(acc, fp16_to_fp32(w[i].d) * fp16_to_fp32(a[i].d), v, a[i].qs);
  }
  return hsum8_ordered(acc);
}

float vec_dot_iq4_nl_q8_0_row_ref(int64_t n, const BlockIQ4_NL* w, const BlockQ8_0* a) {
  const int64_t nb = block_count(n, kIQ4_NLBlockSize, "vec_dot_iq4_nl_q8_0_row_ref");
  constexpr int kHalf = kIQ4_NLBlockSize / 2;
  const auto decode = [&](int64_t i, int* v) {
    for (int j = 0; j < kHalf; ++j) {
      v[j] = kIq4nlValues[w[i].qs[j] & 0xf];
      v[kHalf + j] = kIq4nlValues[w[i].qs[j] >> 4];
    }
  };
  float acc1[8] = {}, acc2[8] = {};
  int64_t i = 0;
  for (; i + 1 < nb; i += 2) {
    int v[kIQ4_NLBlockSize];
    decode(i, v);
    fma_block32_ordered(acc1, fp16_to_fp32(a[i].d) * fp16_to_fp32(w[i].d), v, a[i].qs);
    decode(i + 1, v);
    fma_block32_ordered(acc2, fp16_to_fp32(a[i + 1].d) * fp16_to_fp32(w[i + 1].d), v, a[i + 1].qs);
  }
  float both[8];
  for (int k = 0; k < 8; ++k) both[k] = acc1[k] + acc2[k];
  float sum = hsum8_ordered(both);
  for (; i < nb; ++i) {
    int v[kIQ4_NLBlockSize];
    decode(i, v);
    int total = 0;
    for (int j = 0; j < kIQ4_NLBlockSize; ++j) total += v[j] * a[i].qs[j];
    sum = std::fma(fp16_to_fp32(a[i].d) * fp16_to_fp32(w[i].d), static_cast<float>(total), sum);
  }
  return sum;
}

}  // namespace sniper
