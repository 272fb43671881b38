// SPDX-License-Identifier: MIT
// Causal attention of one query head over a KV cache, with the reference engine's rounding:
// K and V are stored as f16 (or q8_0), Q is rounded to the K type for Q.K, and the softmax
// output is rounded to f16 before it weights V. Thread-compatible (scratch is per call).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/format.h"

namespace sniper {

struct AttentionLayout {
  GgmlType kv_type = GgmlType::kF16;  // kF16 or kQ8_0
  int64_t head_dim = 0;
  size_t row_bytes = 0;  // bytes per cached position (all kv heads)
  size_t head_bytes = 0; // bytes per kv head within a row
};

// Bytes of scratch attend_head needs for n_kv positions.
size_t attention_scratch_bytes(const AttentionLayout& layout, int64_t n_kv);

// out[head_dim] = softmax(scale * q.K[0..n_kv)) . V[0..n_kv) for one query head whose kv head
// starts `kv_head * head_bytes` into each cached row. q is f32 [head_dim]. scratch must hold
// attention_scratch_bytes(layout, n_kv) bytes, 64-byte aligned.
void attend_head(const AttentionLayout& layout, const float* q, const uint8_t* k_rows, const uint8_t* v_rows,
                 int64_t kv_head, int64_t n_kv, float scale, float* out, uint8_t* scratch);

}  // namespace sniper
