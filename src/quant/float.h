// SPDX-License-Identifier: MIT
// F32, F16 and BF16 rows: conversion to and from float and the scalar reference dot products.
// F16 weights pair with F16 activations, BF16 with BF16, F32 with F32 (as llama.cpp does).
// Conversions round to nearest even (base/fp16.h); NaN stays NaN.
#pragma once

#include <cstdint>

#include "base/fp16.h"

namespace sniper {

// Copies n floats (F32 "quantization" is the identity). Thread-safe.
void quantize_row_f32_ref(const float* x, float* y, int64_t n);
void dequantize_row_f32_ref(const float* x, float* y, int64_t n);

// Rounds n floats to IEEE half, round-to-nearest-even. Thread-safe.
void quantize_row_f16_ref(const float* x, fp16_t* y, int64_t n);
// Widens n halves to float (exact). Thread-safe.
void dequantize_row_f16_ref(const fp16_t* x, float* y, int64_t n);

// Rounds n floats to bfloat16, round-to-nearest-even. Thread-safe.
void quantize_row_bf16_ref(const float* x, bf16_t* y, int64_t n);
// Widens n bfloat16 values to float (exact). Thread-safe.
void dequantize_row_bf16_ref(const bf16_t* x, float* y, int64_t n);

// Single-row dot products in the order of ggml's x86 AVX-512 vec_dot kernels (what llama.cpp
// runs for one token, and for batches whose shape tinyBLAS rejects):
//   f32:  4 accumulators of 16 lanes over steps of 64 (FMA), then whole 16-element groups of
//         the tail FMA'd into accumulator 0, combined (0+2),(1+3), summed, reduced with
//         _mm512_reduce_add_ps's tree; the last n % 16 products are FMA'd into that float.
//         (Inferred from the reference logits of stories260K, the one model with k % 64 != 0;
//         it leaves ~4e-10 NSE there, so the f32 tail order is not fully pinned down.)
//   f16:  the same lane structure; the reduced sum and the tail products accumulate in double.
//   bf16: AVX512_BF16 vdpbf16ps: two 16-lane accumulators over 64-element steps (lane i of a
//         32-element group takes the product of elements 2i+1 then 2i, each a fused add); both
//         reduced sums and the tail products accumulate in double.
// Products of widened halves / bfloat16 are exact in float. Denormal flushing that vdpbf16ps
// applies is not modelled (activations and weights are far from the denormal range).
float vec_dot_f32_ref(int64_t n, const float* w, const float* a);
float vec_dot_f16_ref(int64_t n, const fp16_t* w, const fp16_t* a);
float vec_dot_bf16_ref(int64_t n, const bf16_t* w, const bf16_t* a);

// One output of ggml's llamafile tinyBLAS gemm (llama.cpp's path for batches of >= 2 tokens
// when k % kTinyBlasK* == 0 and the weight row count is a multiple of 4): a single 16-lane
// accumulator over steps of 16 (f32/f16, FMA) or 32 (bf16, vdpbf16ps pairs), then the
// _mm512_reduce_add_ps tree. n must be a multiple of the step.
constexpr int64_t kTinyBlasKF32 = 16;
constexpr int64_t kTinyBlasKF16 = 16;
constexpr int64_t kTinyBlasKBF16 = 32;
float tinyblas_dot_f32_ref(int64_t n, const float* w, const float* a);
float tinyblas_dot_f16_ref(int64_t n, const fp16_t* w, const fp16_t* a);
float tinyblas_dot_bf16_ref(int64_t n, const bf16_t* w, const bf16_t* a);

}  // namespace sniper
