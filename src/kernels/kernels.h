// SPDX-License-Identifier: MIT
// The kernel dispatch table: one KernelTable per (weight type, ISA tier), filled once at
// startup. Model code multiplies through matmul() (kernels/matmul.h) and never sees intrinsics.
// Kernels never allocate; callers pass scratch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/cpu_features.h"
#include "gguf/format.h"

namespace sniper {

struct KernelTable {
  GgmlType type;          // weight type
  GgmlType vec_dot_type;  // activation type consumed by vec_dot / gemm
  IsaTier tier;           // tier this table was built for (entries may fall back to lower tiers)

  // Decodes n elements (n % block_size == 0).
  void (*dequant_row)(const void* src, float* dst, int64_t n);
  // Quantizes n floats into vec_dot_type blocks (activation side).
  void (*quantize_act)(const float* src, void* dst, int64_t n);
  // *out = dot(w, a) over n elements.
  void (*vec_dot)(int64_t n, float* out, const void* w, const void* a);
  // For r < n_rows, t < n_tok: out[t * out_stride + r] = dot(w row r, a row t).
  // w rows are w_row_bytes apart, a rows a_row_bytes apart (already in vec_dot_type).
  // Every output of gemm is computed exactly as vec_dot computes it.
  void (*gemm)(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
               size_t a_row_bytes, float* out, int64_t out_stride);
  // Same contract as gemm, but each output in the order of ggml's llamafile tinyBLAS gemm,
  // which the reference engine uses for batches of >= 2 tokens when n % batched_k_multiple == 0
  // and the whole weight has a multiple of 4 rows (kernels/matmul.cpp decides). nullptr for
  // types whose batched order equals vec_dot's (the quantized types).
  void (*gemm_batched)(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
                       size_t a_row_bytes, float* out, int64_t out_stride);
  int64_t batched_k_multiple;  // meaningful when gemm_batched != nullptr
  // Quantized weights at some SIMD tiers (nullptr otherwise): the gemm contract for batches of
  // n_tok >= rows_min_tokens, a faster layout for large batches; every output is computed
  // exactly as vec_dot computes it (its scalar twin is named where the entry is set), since the
  // reference engine runs vec_dot for K-quant batches of any size. n / block size must be at
  // most rows_max_blocks.
  void (*gemm_rows)(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
                    size_t a_row_bytes, float* out, int64_t out_stride);
  int64_t rows_min_tokens;  // meaningful when gemm_rows != nullptr
  int64_t rows_max_blocks;
  int64_t rows_group;  // rows per call that keep every lane of gemm_rows busy
  // F16 weights at the SIMD tiers only (nullptr otherwise): gemm and gemm_batched with f32
  // activations that hold f16 values (what quantize_act produces, widened once by the caller,
  // e.g. attention's query and softmax rows), so the kernel does not widen them on every use.
  // Outputs are bit-identical to gemm / gemm_batched on the f16 activations.
  void (*gemm_wide)(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
                    size_t a_row_bytes, float* out, int64_t out_stride);
  void (*gemm_batched_wide)(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
                            size_t a_row_bytes, float* out, int64_t out_stride);
};

// Returns the table for `type` at `tier` (lower-tier entries fill gaps), or nullptr when the
// type is not supported or the host cannot run `tier` (!host_runs(tier)). Tables are
// built once and live for the whole process. Thread-safe.
const KernelTable* find_kernels(GgmlType type, IsaTier tier);

// find_kernels(type, selected_tier()); CHECKs that the type is supported. The first call logs
// the chosen ISA tier at info level. Thread-safe.
const KernelTable& get_kernels(GgmlType type);

// The activation quantizer for an activation type (F32, F16, BF16, Q8_0, Q8_1, Q8_K) at `tier`:
// the quantize_act entry of a weight type whose vec_dot_type is `act_type`. Returns nullptr when
// no supported weight type consumes `act_type` or the host lacks `tier`. Thread-safe.
using QuantizeActFn = void (*)(const float* src, void* dst, int64_t n);
QuantizeActFn find_act_quantizer(GgmlType act_type, IsaTier tier);

}  // namespace sniper
