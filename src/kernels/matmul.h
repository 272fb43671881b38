// SPDX-License-Identifier: MIT
// Matrix products of quantized weights with f32 activations, the way the reference engine
// computes them: activations are first quantized to the weight type's vec_dot_type (q8_0, q8_K,
// f16, ...), then each output is an exact-integer-within-block dot product.
// Thread-compatible: one call at a time per ThreadPool; kernels never allocate — the caller
// passes an ActBuffer that grows only when a larger shape is first seen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/cpu_features.h"
#include "base/thread_pool.h"
#include "kernels/tensor.h"

namespace sniper {

// Activations quantized to one vec_dot_type: n_tok rows of n elements each.
struct QuantizedActs {
  GgmlType type = GgmlType::kF32;
  int64_t n = 0;
  int64_t n_tok = 0;
  size_t row_bytes = 0;
  const uint8_t* data = nullptr;
};

// Reusable, 64-byte-aligned scratch memory for quantized activations. Thread-compatible.
class ActBuffer {
 public:
  static constexpr size_t kAlignment = 64;
  // Returns at least `bytes` of kAlignment-aligned storage, valid until the next reserve();
  // previous contents are not preserved. Grows only; never shrinks.
  uint8_t* reserve(size_t bytes);
  // Usable bytes available without reallocating.
  size_t capacity() const { return storage_.size() < kAlignment ? 0 : storage_.size() - kAlignment; }

 private:
  std::vector<uint8_t> storage_;  // over-allocated by kAlignment to align the start
};

// Every function below takes an optional kernel tier (default: selected_tier(), i.e. the host's
// best or SNIPER_ISA); tests and benchmarks pass lower tiers to compare. CHECKs the tier is
// runnable on this host.

// Quantizes x [n_tok, n] (row stride x_stride floats) to activation type `type` (F32, F16,
// BF16, Q8_0, Q8_1, Q8_K), into buf. Parallel over tokens. The result points into buf (or, for
// F32 with x_stride == n, straight at x) and is valid until buf is reused.
QuantizedActs quantize_acts(GgmlType type, const float* x, int64_t n, int64_t n_tok, int64_t x_stride, ActBuffer& buf,
                            ThreadPool& pool, IsaTier tier = selected_tier());

// Which per-output float order matmul_q reproduces for float weights (see
// KernelTable::gemm_batched). Quantized batches of at least rows_min_tokens take the table's
// gemm_rows, where it has one, in either order (its outputs are vec_dot's).
enum class MatmulOrder {
  kAuto,    // the reference engine's mul_mat: tinyBLAS order for batches when its shape rules allow
  kVecDot,  // always vec_dot order (the reference engine's mul_mat_id, i.e. MoE experts)
};

// y[t * y_stride + r] = dot(w row r, act row t) for r < w.n_rows(), t < act.n_tok.
// CHECKs act.type == vec_dot_type(w.type) and act.n == w.ne[0]. Parallel over chunks of rows;
// tokens are tiled inside each chunk. Each output element is computed by the same instruction
// sequence whatever the thread count or chunking, so results are bitwise reproducible across
// thread counts.
void matmul_q(const QTensor& w, const QuantizedActs& act, float* y, int64_t y_stride, ThreadPool& pool,
              IsaTier tier = selected_tier(), MatmulOrder order = MatmulOrder::kAuto);

// One product of a matmul_q_multi call: y[t * y_stride + r] = dot(w row r, act row t).
struct MatmulJob {
  const QTensor* w = nullptr;
  QuantizedActs act;
  float* y = nullptr;
  int64_t y_stride = 0;
};

// Runs several independent products in ONE parallel pass: the row chunks of every job are
// handed out together, so small matrices (the k experts of a decode step, the experts of a
// prompt chunk) keep every thread busy with a single synchronisation instead of one per
// product. At most kMaxMatmulJobs jobs. Each job must satisfy matmul_q's preconditions
// (CHECKed); each output is bitwise what matmul_q(..., order) gives.
constexpr size_t kMaxMatmulJobs = 256;
void matmul_q_multi(std::span<const MatmulJob> jobs, ThreadPool& pool, IsaTier tier = selected_tier(),
                    MatmulOrder order = MatmulOrder::kAuto);

// Convenience: quantize x [n_tok, w.ne[0]] then matmul_q into y [n_tok, w.n_rows()] (dense strides).
void matmul(const QTensor& w, const float* x, float* y, int64_t n_tok, ActBuffer& buf, ThreadPool& pool,
            IsaTier tier = selected_tier(), MatmulOrder order = MatmulOrder::kAuto);

}  // namespace sniper
