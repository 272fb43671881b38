// SPDX-License-Identifier: MIT
// F32 / F16 / BF16 row conversions and scalar dot products (see float.h).
// The dot products reproduce the lane structure of ggml's x86 kernels (see float.h), so the
// SIMD tiers can match them bit for bit.
#include "quant/float.h"

#include <cstring>

#include "base/check.h"
#include "quant/lane_order.h"

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

namespace {

// ggml_vec_dot_f32 / _f16 main loop: 4 x 16 lanes over steps of 64, then (0+2),(1+3), sum,
// reduce. Returns the reduced float; *done is the number of elements consumed.
// tail16: also fold whole 16-element groups of the n % 64 tail into accumulator 0 before the
// reduction (what the reference build's f32 kernel does; its f16 kernel does not).
template <class T, class Widen>
float vec_dot_4x16(int64_t n, const T* w, const T* a, Widen widen, bool tail16, int64_t* done) {
  float acc[4][16] = {};
  const int64_t np = n - n % 64;
  for (int64_t i = 0; i < np; i += 64) {
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 16; ++l) {
        const int64_t e = i + 16 * j + l;
        acc[j][l] = fma_ordered(widen(w[e]), widen(a[e]), acc[j][l]);
      }
    }
  }
  int64_t np2 = np;
  if (tail16) {
    np2 = n - n % 16;
    for (int64_t i = np; i < np2; i += 16) {
      for (int l = 0; l < 16; ++l) acc[0][l] = fma_ordered(widen(w[i + l]), widen(a[i + l]), acc[0][l]);
    }
  }
  float s[16];
  for (int l = 0; l < 16; ++l) s[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
  *done = np2;
  return reduce16_ordered(s);
}

// vdpbf16ps on one 16-lane accumulator over 32 elements starting at e0.
inline void dpbf16(float* acc, const bf16_t* w, const bf16_t* a, int64_t e0) {
  for (int l = 0; l < 16; ++l) {
    const int64_t e = e0 + 2 * l;
    acc[l] = fma_ordered(bf16_to_fp32(w[e + 1]), bf16_to_fp32(a[e + 1]), acc[l]);
    acc[l] = fma_ordered(bf16_to_fp32(w[e]), bf16_to_fp32(a[e]), acc[l]);
  }
}

}  // namespace

float vec_dot_f32_ref(int64_t n, const float* w, const float* a) {
  int64_t i = 0;
  float sum = vec_dot_4x16(
      n, w, a, [](float x) { return x; }, true, &i);
  for (; i < n; ++i) sum = fma_ordered(w[i], a[i], sum);  // contracted by the reference build
  return sum;
}

float vec_dot_f16_ref(int64_t n, const fp16_t* w, const fp16_t* a) {
  int64_t i = 0;
  double sum = vec_dot_4x16(
      n, w, a, [](fp16_t x) { return fp16_to_fp32(x); }, false, &i);
  for (; i < n; ++i) sum += static_cast<double>(fp16_to_fp32(w[i]) * fp16_to_fp32(a[i]));
  return static_cast<float>(sum);
}

float vec_dot_bf16_ref(int64_t n, const bf16_t* w, const bf16_t* a) {
  float c1[16] = {}, c2[16] = {};
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    dpbf16(c1, w, a, i);
    dpbf16(c2, w, a, i + 32);
  }
  double sum = 0.0;
  sum += static_cast<double>(reduce16_ordered(c1));
  sum += static_cast<double>(reduce16_ordered(c2));
  for (; i < n; ++i) sum += static_cast<double>(bf16_to_fp32(w[i]) * bf16_to_fp32(a[i]));
  return static_cast<float>(sum);
}

float tinyblas_dot_f32_ref(int64_t n, const float* w, const float* a) {
  CHECK(n % kTinyBlasKF32 == 0, "tinyblas_dot_f32_ref: n=%lld", static_cast<long long>(n));
  float acc[16] = {};
  for (int64_t i = 0; i < n; i += 16) {
    for (int l = 0; l < 16; ++l) acc[l] = fma_ordered(w[i + l], a[i + l], acc[l]);
  }
  return reduce16_ordered(acc);
}

float tinyblas_dot_f16_ref(int64_t n, const fp16_t* w, const fp16_t* a) {
  CHECK(n % kTinyBlasKF16 == 0, "tinyblas_dot_f16_ref: n=%lld", static_cast<long long>(n));
  float acc[16] = {};
  for (int64_t i = 0; i < n; i += 16) {
    for (int l = 0; l < 16; ++l) acc[l] = fma_ordered(fp16_to_fp32(w[i + l]), fp16_to_fp32(a[i + l]), acc[l]);
  }
  return reduce16_ordered(acc);
}

float tinyblas_dot_bf16_ref(int64_t n, const bf16_t* w, const bf16_t* a) {
  CHECK(n % kTinyBlasKBF16 == 0, "tinyblas_dot_bf16_ref: n=%lld", static_cast<long long>(n));
  float acc[16] = {};
  for (int64_t i = 0; i < n; i += 32) dpbf16(acc, w, a, i);
  return reduce16_ordered(acc);
}

}  // namespace sniper
