// SPDX-License-Identifier: MIT
#include "kernels/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/fp16.h"
#include "kernels/hadamard.h"
#include "kernels/kernel_registry.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "quant/iq4_nl.h"
#include "quant/q8_0.h"

namespace sniper {

namespace {

constexpr int64_t kTile = 64;  // cells whose scores are computed in one pass over K

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

struct FlashScratch {
  float* qf;       // [group][head_dim] the rotated query, or the f16-rounded one widened
  uint8_t* qq;     // [group][q_row] the query in K's vec_dot_type
  float* scores;   // [group][kTile]
  float* acc32;    // [group][head_dim] f32 accumulators (non-f16 V)
  fp16_t* acc16;   // [group][head_dim] f16 accumulators (f16 V)
  float* v32;      // [head_dim] one V row decoded
  float* m;        // [group] running maximum
  float* sum;      // [group] running sum
};

size_t q_row_bytes(const AttentionLayout& layout) {
  return row_bytes(get_kernels(layout.k_type).vec_dot_type, layout.head_dim);
}

FlashScratch carve(const AttentionLayout& layout, int64_t group, uint8_t* p) {
  const size_t hd = static_cast<size_t>(layout.head_dim), g = static_cast<size_t>(group);
  FlashScratch s;
  s.qf = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * hd * g);
  s.qq = p;
  p += align64(q_row_bytes(layout) * g);
  s.scores = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * static_cast<size_t>(kTile) * g);
  s.acc32 = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * hd * g);
  s.acc16 = reinterpret_cast<fp16_t*>(p);
  p += align64(sizeof(fp16_t) * hd * g);
  s.v32 = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * hd);
  s.m = reinterpret_cast<float*>(p);
  p += align64(sizeof(float) * g);
  s.sum = reinterpret_cast<float*>(p);
  return s;
}

}  // namespace

size_t flash_attention_scratch_bytes(const AttentionLayout& layout, int64_t group) {
  const size_t hd = static_cast<size_t>(layout.head_dim), g = static_cast<size_t>(group);
  return align64(sizeof(float) * hd * g) + align64(q_row_bytes(layout) * g) +
         align64(sizeof(float) * static_cast<size_t>(kTile) * g) + align64(sizeof(float) * hd * g) +
         align64(sizeof(fp16_t) * hd * g) + align64(sizeof(float) * hd) + 2 * align64(sizeof(float) * g);
}

void flash_attend_group(const AttentionLayout& layout, const float* q, const uint8_t* k_rows, const uint8_t* v_rows,
                        int64_t kv_head, int64_t group, int64_t n_kv, float scale, float* out, uint8_t* scratch,
                        IsaTier tier) {
  DCHECK(layout.flash && !layout.v_transposed && group >= 1 && n_kv >= 1);
  const int64_t hd = layout.head_dim;
  const KernelTable& kk = *find_kernels(layout.k_type, tier);
  const KernelTable& kv = *find_kernels(layout.v_type, tier);
  const RowOps& ops = find_row_ops(tier);
  const FlashScratch s = carve(layout, group, scratch);
  const size_t q_row = q_row_bytes(layout);
  const bool avx512 = tier >= IsaTier::kAvx512;
  // f16 K at the AVX-512 tier: the dedicated grouped kernel takes the f16-rounded query widened.
  const bool kq_f16_wide = avx512 && layout.k_type == GgmlType::kF16;
  for (int64_t g = 0; g < group; ++g) {
    const float* qg = q + g * hd;
    if (layout.k_rot > 0) {
      std::memcpy(s.qf + g * hd, qg, sizeof(float) * static_cast<size_t>(hd));
      hadamard_rotate(s.qf + g * hd, hd, layout.k_rot);
      qg = s.qf + g * hd;
    }
    kk.quantize_act(qg, s.qq + q_row * static_cast<size_t>(g), hd);
    if (kq_f16_wide) ops.round_fp16_row(q + g * hd, s.qf + g * hd, hd);
  }
  const bool v_f16 = layout.v_type == GgmlType::kF16;
  for (int64_t g = 0; g < group; ++g) {
    s.m[g] = -INFINITY;
    s.sum[g] = 0.0f;
  }
  if (v_f16) {
    std::fill(s.acc16, s.acc16 + group * hd, fp16_t{0});
  } else {
    std::fill(s.acc32, s.acc32 + group * hd, 0.0f);
  }
  const uint8_t* k = k_rows + layout.head_stride * static_cast<size_t>(kv_head);
  const uint8_t* v = v_rows + layout.v_head_stride * static_cast<size_t>(kv_head);
  for (int64_t c0 = 0; c0 < n_kv; c0 += kTile) {
    const int64_t nt = std::min(kTile, n_kv - c0);
    const uint8_t* kt = k + layout.row_bytes * static_cast<size_t>(c0);
    bool done = false;
    if (layout.k_type == GgmlType::kQ8_0 && avx512) {
      done = kernels_internal::attention_kq_q8_0_avx512(hd, nt, group, kt, layout.row_bytes, s.qq, q_row, s.scores, kTile);
    } else if (kq_f16_wide) {
      done = kernels_internal::attention_kq_f16_avx512(hd, nt, group, kt, layout.row_bytes, s.qf, s.scores, kTile,
                                                       /*tiny=*/false);
    }
    if (!done && layout.k_type == GgmlType::kIQ4_NL) {
      // The KernelTable's iq4_nl dot is tinyBLAS's order; one_chunk calls the single-row kernel.
      for (int64_t t = 0; t < nt; ++t) {
        const auto* krow = reinterpret_cast<const BlockIQ4_NL*>(kt + layout.row_bytes * static_cast<size_t>(t));
        for (int64_t g = 0; g < group; ++g) {
          s.scores[g * kTile + t] = vec_dot_iq4_nl_q8_0_row_ref(
              hd, krow, reinterpret_cast<const BlockQ8_0*>(s.qq + q_row * static_cast<size_t>(g)));
        }
      }
      done = true;
    }
    if (!done) kk.gemm(hd, nt, group, kt, layout.row_bytes, s.qq, q_row, s.scores, kTile);
    for (int64_t t = 0; t < nt; ++t) {
      const uint8_t* vrow = v + layout.v_row_bytes * static_cast<size_t>(c0 + t);
      if (!v_f16) kv.dequant_row(vrow, s.v32, hd);
      for (int64_t g = 0; g < group; ++g) {
        const float sc = s.scores[g * kTile + t] * scale;
        float ms = 1.0f, vs = 1.0f;
        if (sc > s.m[g]) {
          const float m_old = s.m[g];
          s.m[g] = sc;
          ms = std::exp(m_old - sc);
          // The accumulator is still zero while m_old is -inf: scaling it changes nothing.
          if (m_old != -INFINITY) {
            if (v_f16) {
              ops.scale_f16(s.acc16 + g * hd, ms, hd);
            } else {
              ops.scale_f32(s.acc32 + g * hd, ms, hd);
            }
          }
        } else {
          vs = std::exp(sc - s.m[g]);
        }
        if (v_f16) {
          ops.mad_f16(s.acc16 + g * hd, reinterpret_cast<const fp16_t*>(vrow), vs, hd);
        } else {
          ops.mad_f32(s.acc32 + g * hd, s.v32, vs, hd);
        }
        // ggml's `S = S*ms + vs`, which its build contracts to one FMA.
        s.sum[g] = std::fma(s.sum[g], ms, vs);
      }
    }
  }
  for (int64_t g = 0; g < group; ++g) {
    float* o = out + g * hd;
    if (v_f16) {
      for (int64_t d = 0; d < hd; ++d) o[d] = fp16_to_fp32(s.acc16[g * hd + d]);
    } else {
      std::memcpy(o, s.acc32 + g * hd, sizeof(float) * static_cast<size_t>(hd));
    }
    const float inv = s.sum[g] == 0.0f ? 0.0f : 1.0f / s.sum[g];
    ops.scale_f32(o, inv, hd);
    if (layout.v_rot > 0) hadamard_rotate(o, hd, layout.v_rot);
  }
}

}  // namespace sniper
