// SPDX-License-Identifier: MIT
// Attention for one head. Q.K uses the K type's vec_dot kernel (f16 x f16 or q8_0 x q8_0),
// so the SIMD tier chosen for matmuls applies here too.
#include "kernels/attention.h"

#include <cmath>

#include "base/check.h"
#include "base/fp16.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "quant/q8_0.h"

namespace sniper {

namespace {
size_t align64(size_t n) { return (n + 63) / 64 * 64; }
}  // namespace

size_t attention_scratch_bytes(const AttentionLayout& layout, int64_t n_kv) {
  // scores [n_kv] f32 + quantized q [head_bytes] + dequantized v row [head_dim] f32
  return align64(sizeof(float) * static_cast<size_t>(n_kv)) + align64(layout.head_bytes) +
         align64(sizeof(float) * static_cast<size_t>(layout.head_dim));
}

void attend_head(const AttentionLayout& layout, const float* q, const uint8_t* k_rows, const uint8_t* v_rows,
                 int64_t kv_head, int64_t n_kv, float scale, float* out, uint8_t* scratch) {
  const int64_t hd = layout.head_dim;
  float* scores = reinterpret_cast<float*>(scratch);
  uint8_t* q_conv = scratch + align64(sizeof(float) * static_cast<size_t>(n_kv));
  float* v_tmp = reinterpret_cast<float*>(q_conv + align64(layout.head_bytes));
  const KernelTable& kt = get_kernels(layout.kv_type);
  kt.quantize_act(q, q_conv, hd);
  const size_t head_off = layout.head_bytes * static_cast<size_t>(kv_head);
  for (int64_t j = 0; j < n_kv; ++j) {
    float s;
    kt.vec_dot(hd, &s, k_rows + layout.row_bytes * static_cast<size_t>(j) + head_off, q_conv);
    scores[j] = s * scale;
  }
  softmax(scores, n_kv);
  for (int64_t d = 0; d < hd; ++d) out[d] = 0.0f;
  for (int64_t j = 0; j < n_kv; ++j) {
    const float p = round_fp16(scores[j]);
    const uint8_t* v = v_rows + layout.row_bytes * static_cast<size_t>(j) + head_off;
    if (layout.kv_type == GgmlType::kF16) {
      const fp16_t* vh = reinterpret_cast<const fp16_t*>(v);
      for (int64_t d = 0; d < hd; ++d) out[d] += p * fp16_to_fp32(vh[d]);
    } else {
      kt.dequant_row(v, v_tmp, hd);
      axpy(p, v_tmp, out, hd);
    }
  }
}

}  // namespace sniper
