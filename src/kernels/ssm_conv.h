// SPDX-License-Identifier: MIT
// Causal depthwise conv1d over time with carried state, followed by SiLU: the delta-net layer's
// short convolution (ggml_ssm_conv then ggml_silu) for kernel width 4, no bias.
//   out[t][c] = silu(sum_{i=0..3} w[c][i] * in(t - 3 + i, c))
// where in(s, c) = x[s][c] for s >= 0 and the carried state for s < 0, w[c][3] multiplies the
// current token, and the sum is ((((0 + p0) + p1) + p2) + p3) with each product p_i rounded on
// its own: the reference build (GCC 12, -march=native) vectorises the 4 products of its loop and
// adds them in order, no FMA (checked bit for bit against ggml_ssm_conv). silu is silu_row
// (kernels/activations.h) over each output row of `channels` values.
// State layout: [3][channels] floats, the last 3 input rows in time order (row 2 = the latest);
// zero at sequence start. After a call it holds the last 3 rows of (state, x) combined, so a
// prefill of n tokens gives the same bits as n single-token calls.
#pragma once

#include <cstdint>

namespace sniper {

inline constexpr int64_t kSsmConvWidth = 4;

// x: [n_tokens] rows of `channels` inputs, x_stride floats apart; w: [channels][4] (the GGUF
// ssm_conv1d tensor, ne = [4, channels]); state: [3][channels], updated in place; out:
// [n_tokens] rows, out_stride apart. out must not overlap x or state. n_tokens >= 0.
// Thread-compatible; disjoint calls may run concurrently.
void ssm_conv_silu(const float* x, int64_t x_stride, int64_t n_tokens, int64_t channels, const float* w, float* state,
                   float* out, int64_t out_stride);

}  // namespace sniper
