// SPDX-License-Identifier: MIT
// The ref tier: KernelTable entries that wrap the scalar `_ref` codecs of quant/ (through the
// type-generic quant.h entry points), plus a plain row-by-token gemm loop, and the ref tier's
// KernelSet around them. These define the correct results every ISA tier is tested against.
#include "base/check.h"
#include "kernels/activations.h"
#include "kernels/delta_net.h"
#include "kernels/kernel_registry.h"
#include "kernels/layer_norm.h"
#include "kernels/ops.h"
#include "quant/float.h"
#include "quant/quant.h"

namespace sniper::kernels_internal {

namespace {

template <GgmlType kType>
void dequant_row_ref(const void* src, float* dst, int64_t n) {
  dequantize_row_ref(kType, src, dst, n);
}

template <GgmlType kActType>
void quantize_act_ref(const float* src, void* dst, int64_t n) {
  quantize_act_row_ref(kActType, src, dst, n);
}

template <GgmlType kType>
void vec_dot_entry_ref(int64_t n, float* out, const void* w, const void* a) {
  *out = vec_dot_ref(kType, n, w, a);
}

template <GgmlType kType>
void gemm_ref(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
              size_t a_row_bytes, float* out, int64_t out_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t r = 0; r < n_rows; ++r) {
      out[t * out_stride + r] =
          vec_dot_ref(kType, n, wb + static_cast<size_t>(r) * w_row_bytes, ab + static_cast<size_t>(t) * a_row_bytes);
    }
  }
}

// One output of the tinyBLAS order for a float weight type.
template <GgmlType kType>
float tinyblas_dot(int64_t n, const uint8_t* w, const uint8_t* a) {
  if constexpr (kType == GgmlType::kF32) {
    return tinyblas_dot_f32_ref(n, reinterpret_cast<const float*>(w), reinterpret_cast<const float*>(a));
  } else if constexpr (kType == GgmlType::kF16) {
    return tinyblas_dot_f16_ref(n, reinterpret_cast<const fp16_t*>(w), reinterpret_cast<const fp16_t*>(a));
  } else {
    return tinyblas_dot_bf16_ref(n, reinterpret_cast<const bf16_t*>(w), reinterpret_cast<const bf16_t*>(a));
  }
}

template <GgmlType kType>
void gemm_batched_ref(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
                      size_t a_row_bytes, float* out, int64_t out_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t r = 0; r < n_rows; ++r) {
      out[t * out_stride + r] =
          tinyblas_dot<kType>(n, wb + static_cast<size_t>(r) * w_row_bytes, ab + static_cast<size_t>(t) * a_row_bytes);
    }
  }
}

template <GgmlType kType>
void fill(KernelTable& t) {
  t.dequant_row = &dequant_row_ref<kType>;
  t.vec_dot = &vec_dot_entry_ref<kType>;
  t.gemm = &gemm_ref<kType>;
  t.gemm_batched = nullptr;
  t.gemm_rows = nullptr;
  t.rows_min_tokens = 0;
  t.rows_max_blocks = 0;
  t.rows_group = 1;
  t.batched_k_multiple = 0;
  if constexpr (kType == GgmlType::kF32 || kType == GgmlType::kF16 || kType == GgmlType::kBF16) {
    t.gemm_batched = &gemm_batched_ref<kType>;
    t.batched_k_multiple = kType == GgmlType::kF32   ? kTinyBlasKF32
                           : kType == GgmlType::kF16 ? kTinyBlasKF16
                                                     : kTinyBlasKBF16;
  }
  switch (t.vec_dot_type) {
    case GgmlType::kF32: t.quantize_act = &quantize_act_ref<GgmlType::kF32>; break;
    case GgmlType::kF16: t.quantize_act = &quantize_act_ref<GgmlType::kF16>; break;
    case GgmlType::kBF16: t.quantize_act = &quantize_act_ref<GgmlType::kBF16>; break;
    case GgmlType::kQ8_0: t.quantize_act = &quantize_act_ref<GgmlType::kQ8_0>; break;
    case GgmlType::kQ8_1: t.quantize_act = &quantize_act_ref<GgmlType::kQ8_1>; break;
    case GgmlType::kQ8_K: t.quantize_act = &quantize_act_ref<GgmlType::kQ8_K>; break;
    default: CHECK(false, "no activation quantizer for vec_dot_type %u", static_cast<unsigned>(t.vec_dot_type));
  }
}

}  // namespace

bool fill_ref_kernels(GgmlType type, KernelTable& t) {
  if (!is_supported_weight_type(type)) return false;
  t.type = type;
  t.vec_dot_type = vec_dot_type(type);
  t.tier = IsaTier::kRef;
  switch (type) {
#define SNIPER_REF_CASE(T) \
  case GgmlType::T: fill<GgmlType::T>(t); return true;
    SNIPER_REF_CASE(kF32)
    SNIPER_REF_CASE(kF16)
    SNIPER_REF_CASE(kBF16)
    SNIPER_REF_CASE(kQ4_0)
    SNIPER_REF_CASE(kQ4_1)
    SNIPER_REF_CASE(kQ5_0)
    SNIPER_REF_CASE(kQ5_1)
    SNIPER_REF_CASE(kQ8_0)
    SNIPER_REF_CASE(kQ2_K)
    SNIPER_REF_CASE(kQ3_K)
    SNIPER_REF_CASE(kQ4_K)
    SNIPER_REF_CASE(kQ5_K)
    SNIPER_REF_CASE(kQ6_K)
    SNIPER_REF_CASE(kIQ4_NL)
    SNIPER_REF_CASE(kIQ4_XS)
    SNIPER_REF_CASE(kIQ2_XXS)
    SNIPER_REF_CASE(kIQ2_XS)
    SNIPER_REF_CASE(kIQ2_S)
    SNIPER_REF_CASE(kIQ3_XXS)
    SNIPER_REF_CASE(kIQ3_S)
    SNIPER_REF_CASE(kIQ1_S)
    SNIPER_REF_CASE(kIQ1_M)
    SNIPER_REF_CASE(kTQ1_0)
    SNIPER_REF_CASE(kTQ2_0)
    SNIPER_REF_CASE(kIQ2_RP)
    SNIPER_REF_CASE(kIQ3_XXS_RP)
    SNIPER_REF_CASE(kIQ3_S_RP)
    SNIPER_REF_CASE(kIQ1_S_RP)
    SNIPER_REF_CASE(kIQ1_M_RP)
#undef SNIPER_REF_CASE
    default: return false;
  }
}

void fill_ref_set(KernelSet& s) {
  s = KernelSet{};
  s.tier = IsaTier::kRef;
  for (uint32_t slot = 0; slot < kGgmlTypeSlots; ++slot) {
    if (find_memory_type_info(slot) == nullptr) continue;
    s.present[slot] = fill_ref_kernels(static_cast<GgmlType>(slot), s.weights[slot]);
  }
  s.rows = ref_row_ops();
  s.gelu = {gelu_ref, geglu_ref, gelu_quick_ref, geglu_quick_ref};
  s.delta_net = delta_net_ref;
  s.layer_norm = layer_norm_ref;
}

}  // namespace sniper::kernels_internal
