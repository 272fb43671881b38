// SPDX-License-Identifier: MIT
// matmul() for F16 weights over many tokens (a vision or audio encoder's patches or frames),
// bit for bit, faster: where the batch takes the tinyBLAS order (kernels.h gemm_batched), the
// activations are rounded to f16 and kept widened to f32, and each chunk of weight rows is
// widened once (f16 -> f32 is exact) into a per-thread slice of the caller's buffer, so the F32
// table's gemm_batched, whose per-output chain is the F16 one's (quant/float.h: 16 lanes, steps
// of 16, the same reduction), runs on f32 operands instead of converting every weight vector
// once per block of 4 tokens. Other types and shapes go to matmul().
// Thread-compatible: one call at a time per ThreadPool and ActBuffer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/tensor.h"

namespace sniper {

// Bytes of one thread's slice of widened weight rows (the rows of a chunk stay in L2).
inline constexpr size_t kWidenedChunkBytes = size_t{1} << 19;

// y [n_tok][w.n_rows()] = matmul(w, x, y, n_tok, buf, pool, tier), the same bits. buf holds the
// widened activations and one kWidenedChunkBytes slice per thread (matmul_widened_bytes).
void matmul_widened(const QTensor& w, const float* x, float* y, int64_t n_tok, ActBuffer& buf, ThreadPool& pool,
                    IsaTier tier = selected_tier());

// The most bytes of buf matmul_widened uses for n_tok tokens of n inputs on n_threads threads.
size_t matmul_widened_bytes(int64_t n, int64_t n_tok, int n_threads);

}  // namespace sniper
