// SPDX-License-Identifier: MIT
// F32 / F16 / BF16 row conversions and scalar dot products (see float.h).
// Accumulation is a single float running sum in index order; SIMD kernels that split the sum
// into lanes differ from it only by float reassociation, which their tests tolerate.
#include "quant/float.h"

#include <cstring>

#include "base/check.h"

namespace sniper {

void quantize_row_f32_ref(const float* x, float* y, int64_t n) {
  CHECK(n >= 0, "n=%lld", static_cast<long long>(n));
  if (n > 0) std::memmove(y, x, static_cast<size_t>(n) * sizeof(float));
}

void dequantize_row_f32_ref(const float* x, float* y, int64_t n) { quantize_row_f32_ref(x, y, n); }

void quantize_row_f16_ref(const float* x, fp16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void dequantize_row_f16_ref(const fp16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

void quantize_row_bf16_ref(const float* x, bf16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_bf16(x[i]);
}

void dequantize_row_bf16_ref(const bf16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_fp32(x[i]);
}

float vec_dot_f32_ref(int64_t n, const float* w, const float* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += w[i] * a[i];
  return sum;
}

float vec_dot_f16_ref(int64_t n, const fp16_t* w, const fp16_t* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += fp16_to_fp32(w[i]) * fp16_to_fp32(a[i]);
  return sum;
}

float vec_dot_bf16_ref(int64_t n, const bf16_t* w, const bf16_t* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += bf16_to_fp32(w[i]) * bf16_to_fp32(a[i]);
  return sum;
}

}  // namespace sniper
