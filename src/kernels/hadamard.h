// SPDX-License-Identifier: MIT
// The Walsh-Hadamard rotation llama.cpp applies to Q, K and V when the KV cache is quantized
// (llama-graph.cpp build_attn, llama_mul_mat_hadamard): x is multiplied, per consecutive chunk
// of `chunk` elements, by the orthonormal Sylvester matrix H (H[i][j] = (-1)^popcount(i&j) /
// sqrt(chunk)). The CPU backend runs that product as a fast transform in f32 (ggml-cpu ops.cpp
// ggml_compute_forward_fwht_f32), and this is the same order of operations, bit for bit: every
// element is first multiplied by 1/sqrtf(chunk), then butterflies (u + v, u - v) with span 1, 2,
// 4, ... chunk/2. H is symmetric and H*H = I, so rotating twice gives x back (up to rounding).
// Thread-compatible.
#pragma once

#include <cstdint>

namespace sniper {

// Rotates x[0, n) in place, chunk by chunk. chunk is a power of two >= 2 dividing n (CHECKed).
void hadamard_rotate(float* x, int64_t n, int64_t chunk);

// llama.cpp's rotation sizes for a head of head_dim elements (0 = no rotation): K uses the
// largest power of two >= 64 dividing head_dim, V always 64; both need head_dim % 64 == 0.
int64_t hadamard_k_chunk(int64_t head_dim);
int64_t hadamard_v_chunk(int64_t head_dim);

}  // namespace sniper
