// SPDX-License-Identifier: MIT
// Causal depthwise conv1d over time with carried state, followed by SiLU: the delta-net layer's
// short convolution (ggml_ssm_conv then ggml_silu) for kernel width 4, no bias.
//   out[t][c] = silu(sum_{i=0..3} w[c][i] * in(t - 3 + i, c))
// where in(s, c) = x[s][c] for s >= 0 and the carried state for s < 0, w[c][3] multiplies the
// current token, and the sum is fma(p3, fma(p2, fma(p1, fma(p0, 0)))): a fused multiply-add chain
// from 0 in tap order. That chain reproduces the shared llama.cpp references bit for bit (every
// qwen35/qwen35moe/qwen3next fixture, NMSE 0); products rounded on their own, as a GCC 12 build of
// ggml_ssm_conv on this host computes them (scripts/ggml-parity.sh), leave NMSE 1.6e-9 on
// syn-qwen35moe-small: the reference build contracted `sumf += s * c` into an FMA. silu is silu_row
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
