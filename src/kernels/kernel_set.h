// SPDX-License-Identifier: MIT
// The dispatch record: one KernelSet per ISA tier the host can run, holding every kernel entry
// the engine dispatches on (the weight types' KernelTables and their activation quantizers, the
// row operations, GELU, the gated delta net, LayerNorm, and the attention products that have a faster form
// than the KernelTable's gemm). A set is built once, on first use: the ref tier's set is filled
// from the scalar `_ref` entries (kernels/ref), and each tier above starts from the tier below
// and lets its architecture's code patch the entries it implements (kernels/kernel_registry.h).
// Generic code reads entries from the set of the tier it was given and never names an ISA.
// Sets are immutable afterwards; reading them is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/cpu_features.h"
#include "gguf/format.h"
#include "kernels/activations.h"
#include "kernels/delta_net.h"
#include "kernels/kernels.h"
#include "kernels/layer_norm.h"
#include "kernels/ops.h"

namespace sniper {

// Attention products with a faster form than the KernelTable's gemm at some tiers; nullptr where
// the tier has none (the caller then runs the gemm path, which gives the same bits).
struct AttentionKernels {
  // K scores over a q8_0 cache, bitwise the Q8_0 table's gemm of the same call:
  // scores[g * s_stride + j] = dot(K row j, q8_0 query row g at q + g * q_row_bytes) over n
  // elements, j < n_rows, g < n_heads. Returns false (nothing written) when it does not handle
  // the shape (n % 32 != 0 or n > 256).
  bool (*kq_q8_0)(int64_t n, int64_t n_rows, int64_t n_heads, const uint8_t* k, size_t k_row_bytes, const uint8_t* q,
                  size_t q_row_bytes, float* scores, int64_t s_stride);
  // K scores over an f16 cache from f32 queries holding f16 values, bitwise the F16 table's
  // gemm_wide (tiny: gemm_batched_wide). Returns false (nothing written) for a head_dim it does
  // not handle (it handles 64, 128 and 256).
  bool (*kq_f16)(int64_t hd, int64_t n_rows, int64_t n_heads, const uint8_t* k, size_t k_row_bytes, const float* q,
                 float* scores, int64_t s_stride, bool tiny);
  // out[g * hd + d] = dot(V^T row d, p + g * p_stride) over n elements (n % 64 == 0; n % 16 == 0
  // when tiny) in ggml_vec_dot_f16's main-loop order (tiny: tinyBLAS's); state holds
  // kernels_internal::kqv_state_floats(hd, n_heads) floats, 64-byte aligned. Present together
  // with kq_f16.
  void (*kqv_f16)(int64_t n, int64_t hd, int64_t n_heads, const uint8_t* vt, size_t vt_row_bytes, const float* p,
                  int64_t p_stride, float* out, float* state, bool tiny);
  // Flash attention's K scores over an iq4_nl cache: like kq_q8_0 over n elements
  // (n % 32 == 0, n <= 512), each bitwise vec_dot_iq4_nl_q8_0_row_ref.
  void (*kq_iq4_nl)(int64_t n, int64_t n_rows, int64_t n_heads, const uint8_t* k, size_t k_row_bytes, const uint8_t* q,
                    size_t q_row_bytes, float* scores, int64_t s_stride);
};

struct KernelSet {
  IsaTier tier;
  KernelTable weights[kGgmlTypeSlots];          // by GgmlType value; valid where present
  bool present[kGgmlTypeSlots];                 // the weight type has kernels
  QuantizeActFn act_quantizer[kGgmlTypeSlots];  // by activation type; nullptr where none
  RowOps rows;
  GeluOps gelu;
  DeltaNetFn delta_net;
  LayerNormFn layer_norm;
  AttentionKernels attention;
};

// The set of `tier`, or nullptr when the host cannot run it. Thread-safe.
const KernelSet* find_kernel_set(IsaTier tier);

// find_kernel_set(tier); CHECKs that the host can run the tier. Thread-safe.
const KernelSet& get_kernel_set(IsaTier tier);

}  // namespace sniper
