// SPDX-License-Identifier: MIT
// LayerNorm of one row as the reference engine computes it (ggml_norm, then ggml_mul by the
// weight and ggml_add of the bias, each its own op): the mean is the float of the row's sum in
// double over float mean = sum / n; the variance is ggml_vec_cvar_f32's AVX-512 form, x - mean
// stored, squared, 16 lanes at a time reduced by _mm512_reduce_add_ps's tree and accumulated in
// double (the n % 16 tail one by one), divided by n in double; then
// y = (x - mean) * (1 / sqrtf(variance + eps)), y = y * w, y = y + b. The vision encoders
// (qwen3vl_merger's ViT) run it per token.
// Pure and thread-compatible; every tier gives the bits of layer_norm_ref.
#pragma once

#include <cstdint>

#include "base/cpu_features.h"

namespace sniper {

// out[i] = ((x[i] - mean) * scale) * w[i] + b[i] over one row of n >= 1 (w, b may be null:
// no multiply, no add). out may alias x.
void layer_norm(const float* x, const float* w, const float* b, float* out, int64_t n, float eps);
void layer_norm_ref(const float* x, const float* w, const float* b, float* out, int64_t n, float eps);

using LayerNormFn = void (*)(const float* x, const float* w, const float* b, float* out, int64_t n, float eps);
// The layer norm of `tier` (ref where the tier has none). CHECKs the host can run the tier.
LayerNormFn find_layer_norm(IsaTier tier);

}  // namespace sniper
