// SPDX-License-Identifier: MIT
// Type-generic entry points to the scalar reference codecs in this folder (one header per
// format: q4_0.h, q4_k.h, ...). These `_ref` functions define the correct result; every SIMD
// kernel in kernels/ is tested against them.
//
// Pairing of weight type and activation ("vec_dot") type, as the reference engine does it:
//   F32->F32, F16->F16, BF16->BF16, Q4_0/Q5_0/Q8_0/IQ4_NL->Q8_0, Q4_1/Q5_1->Q8_1,
//   Q2_K..Q6_K/IQ4_XS/IQ1_*/IQ2_*/IQ3_*/TQ1_0/TQ2_0->Q8_K.
#pragma once

#include <cstdint>

#include "gguf/format.h"

namespace sniper {

// True if we can decode and multiply with weights of this type.
bool is_supported_weight_type(GgmlType type);

// The activation type a weight type's dot product consumes. CHECKs that `type` is supported.
GgmlType vec_dot_type(GgmlType type);

// True if quantize_row_ref can write `type`: every supported weight type except the ones we
// only read (IQ1_*, IQ2_*, IQ3_XXS, IQ3_S, TQ1_0, TQ2_0), and every activation type.
bool has_ref_quantizer(GgmlType type);

// Quantizes n floats (n a multiple of the block size) into `type` blocks; CHECKs
// has_ref_quantizer(type).
// For activation types the result matches ggml's quantize_row_*_ref bit for bit.
void quantize_row_ref(GgmlType type, const float* src, void* dst, int64_t n);

// The activation quantizer the reference engine's x86 CPU backend runs for activation type
// `act_type` (Q8_0, Q8_1, Q8_K, F16, BF16, F32): for Q8_0/Q8_1 the AVX2 form (ties to even,
// quantize_act_q8_0_ref / quantize_act_q8_1_ref), otherwise quantize_row_ref. Every SIMD
// activation quantizer in kernels/ matches this byte for byte.
void quantize_act_row_ref(GgmlType act_type, const float* src, void* dst, int64_t n);

// Decodes n elements of `type` into floats.
void dequantize_row_ref(GgmlType type, const void* src, float* dst, int64_t n);

// Returns dot(w, a) over n elements, w of weight type `type`, a already quantized to
// vec_dot_type(type).
float vec_dot_ref(GgmlType type, int64_t n, const void* w, const void* a);

}  // namespace sniper
