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

// Returns sum_i w[i] * a[i], each product and the running sum in float, in index order.
float vec_dot_f32_ref(int64_t n, const float* w, const float* a);
// As vec_dot_f32_ref with both operands widened from half (products are exact in float).
float vec_dot_f16_ref(int64_t n, const fp16_t* w, const fp16_t* a);
// As vec_dot_f32_ref with both operands widened from bfloat16 (products are exact in float).
float vec_dot_bf16_ref(int64_t n, const bf16_t* w, const bf16_t* a);

}  // namespace sniper
