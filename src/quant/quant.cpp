// SPDX-License-Identifier: MIT
// Type-generic dispatch to the scalar reference codecs (see quant.h). One table row per type
// we can quantize; the typed *_ref functions are adapted to void* signatures by templates so
// the table stays a single list with no per-function switch statements.
// Invariant: a row's vec_dot_type has a row of its own with a quantizer.
#include "quant/quant.h"

#include "base/check.h"
#include "quant/block_count.h"
#include "quant/float.h"
#include "quant/iq1.h"
#include "quant/iq2.h"
#include "quant/iq3.h"
#include "quant/iq4_nl.h"
#include "quant/iq4_xs.h"
#include "quant/iq_repack.h"
#include "quant/q2_k.h"
#include "quant/q3_k.h"
#include "quant/q4_0.h"
#include "quant/q4_1.h"
#include "quant/q4_k.h"
#include "quant/q5_0.h"
#include "quant/q5_1.h"
#include "quant/q5_k.h"
#include "quant/q6_k.h"
#include "quant/q8_0.h"
#include "quant/q8_1.h"
#include "quant/q8_k.h"
#include "quant/tq.h"

namespace sniper {

namespace {

using QuantizeFn = void (*)(const float* src, void* dst, int64_t n);
using DequantizeFn = void (*)(const void* src, float* dst, int64_t n);
using VecDotFn = float (*)(int64_t n, const void* w, const void* a);

template <typename Block, void (*F)(const float*, Block*, int64_t)>
void quantize_as(const float* src, void* dst, int64_t n) {
  F(src, static_cast<Block*>(dst), n);
}

template <typename Block, void (*F)(const Block*, float*, int64_t)>
void dequantize_as(const void* src, float* dst, int64_t n) {
  F(static_cast<const Block*>(src), dst, n);
}

template <typename W, typename A, float (*F)(int64_t, const W*, const A*)>
float vec_dot_as(int64_t n, const void* w, const void* a) {
  return F(n, static_cast<const W*>(w), static_cast<const A*>(a));
}

struct RefCodec {
  GgmlType type;
  bool is_weight;         // usable as a weight type (has a vec_dot)
  GgmlType vec_dot_type;  // activation type (meaningful only when is_weight)
  QuantizeFn quantize;    // nullptr for types we read but do not write (the i-quants, TQ*)
  DequantizeFn dequantize;
  VecDotFn vec_dot;  // nullptr for activation-only types
};

#define SNIPER_WEIGHT_ROW(TYPE, ACT, BLOCK, ABLOCK, QFN, DFN, VFN)                             \
  RefCodec {                                                                                   \
    GgmlType::TYPE, true, GgmlType::ACT, &quantize_as<BLOCK, QFN>, &dequantize_as<BLOCK, DFN>, \
        &vec_dot_as<BLOCK, ABLOCK, VFN>                                                        \
  }
#define SNIPER_READ_ROW(TYPE, ACT, BLOCK, ABLOCK, DFN, VFN) \
  RefCodec { GgmlType::TYPE, true, GgmlType::ACT, nullptr, &dequantize_as<BLOCK, DFN>, &vec_dot_as<BLOCK, ABLOCK, VFN> }
#define SNIPER_ACT_ROW(TYPE, BLOCK, QFN, DFN) \
  RefCodec { GgmlType::TYPE, false, GgmlType::TYPE, &quantize_as<BLOCK, QFN>, &dequantize_as<BLOCK, DFN>, nullptr }

constexpr RefCodec kCodecs[] = {
    SNIPER_WEIGHT_ROW(kF32, kF32, float, float, quantize_row_f32_ref, dequantize_row_f32_ref, vec_dot_f32_ref),
    SNIPER_WEIGHT_ROW(kF16, kF16, fp16_t, fp16_t, quantize_row_f16_ref, dequantize_row_f16_ref, vec_dot_f16_ref),
    SNIPER_WEIGHT_ROW(kBF16, kBF16, bf16_t, bf16_t, quantize_row_bf16_ref, dequantize_row_bf16_ref, vec_dot_bf16_ref),
    SNIPER_WEIGHT_ROW(kQ4_0, kQ8_0, BlockQ4_0, BlockQ8_0, quantize_row_q4_0_ref, dequantize_row_q4_0_ref,
                      vec_dot_q4_0_q8_0_ref),
    SNIPER_WEIGHT_ROW(kQ4_1, kQ8_1, BlockQ4_1, BlockQ8_1, quantize_row_q4_1_ref, dequantize_row_q4_1_ref,
                      vec_dot_q4_1_q8_1_ref),
    SNIPER_WEIGHT_ROW(kQ5_0, kQ8_0, BlockQ5_0, BlockQ8_0, quantize_row_q5_0_ref, dequantize_row_q5_0_ref,
                      vec_dot_q5_0_q8_0_ref),
    SNIPER_WEIGHT_ROW(kQ5_1, kQ8_1, BlockQ5_1, BlockQ8_1, quantize_row_q5_1_ref, dequantize_row_q5_1_ref,
                      vec_dot_q5_1_q8_1_ref),
    SNIPER_WEIGHT_ROW(kQ8_0, kQ8_0, BlockQ8_0, BlockQ8_0, quantize_row_q8_0_ref, dequantize_row_q8_0_ref,
                      vec_dot_q8_0_q8_0_ref),
    SNIPER_WEIGHT_ROW(kQ2_K, kQ8_K, BlockQ2_K, BlockQ8_K, quantize_row_q2_K_ref, dequantize_row_q2_K_ref,
                      vec_dot_q2_K_q8_K_ref),
    SNIPER_WEIGHT_ROW(kQ3_K, kQ8_K, BlockQ3_K, BlockQ8_K, quantize_row_q3_K_ref, dequantize_row_q3_K_ref,
                      vec_dot_q3_K_q8_K_ref),
    SNIPER_WEIGHT_ROW(kQ4_K, kQ8_K, BlockQ4_K, BlockQ8_K, quantize_row_q4_K_ref, dequantize_row_q4_K_ref,
                      vec_dot_q4_K_q8_K_ref),
    SNIPER_WEIGHT_ROW(kQ5_K, kQ8_K, BlockQ5_K, BlockQ8_K, quantize_row_q5_K_ref, dequantize_row_q5_K_ref,
                      vec_dot_q5_K_q8_K_ref),
    SNIPER_WEIGHT_ROW(kQ6_K, kQ8_K, BlockQ6_K, BlockQ8_K, quantize_row_q6_K_ref, dequantize_row_q6_K_ref,
                      vec_dot_q6_K_q8_K_ref),
    SNIPER_WEIGHT_ROW(kIQ4_NL, kQ8_0, BlockIQ4_NL, BlockQ8_0, quantize_row_iq4_nl_ref, dequantize_row_iq4_nl_ref,
                      vec_dot_iq4_nl_q8_0_ref),
    SNIPER_WEIGHT_ROW(kIQ4_XS, kQ8_K, BlockIQ4_XS, BlockQ8_K, quantize_row_iq4_xs_ref, dequantize_row_iq4_xs_ref,
                      vec_dot_iq4_xs_q8_K_ref),
    SNIPER_READ_ROW(kIQ2_XXS, kQ8_K, BlockIQ2_XXS, BlockQ8_K, dequantize_row_iq2_xxs_ref, vec_dot_iq2_xxs_q8_K_ref),
    SNIPER_READ_ROW(kIQ2_XS, kQ8_K, BlockIQ2_XS, BlockQ8_K, dequantize_row_iq2_xs_ref, vec_dot_iq2_xs_q8_K_ref),
    SNIPER_READ_ROW(kIQ2_S, kQ8_K, BlockIQ2_S, BlockQ8_K, dequantize_row_iq2_s_ref, vec_dot_iq2_s_q8_K_ref),
    SNIPER_READ_ROW(kIQ3_XXS, kQ8_K, BlockIQ3_XXS, BlockQ8_K, dequantize_row_iq3_xxs_ref, vec_dot_iq3_xxs_q8_K_ref),
    SNIPER_READ_ROW(kIQ3_S, kQ8_K, BlockIQ3_S, BlockQ8_K, dequantize_row_iq3_s_ref, vec_dot_iq3_s_q8_K_ref),
    SNIPER_READ_ROW(kIQ1_S, kQ8_K, BlockIQ1_S, BlockQ8_K, dequantize_row_iq1_s_ref, vec_dot_iq1_s_q8_K_ref),
    SNIPER_READ_ROW(kIQ1_M, kQ8_K, BlockIQ1_M, BlockQ8_K, dequantize_row_iq1_m_ref, vec_dot_iq1_m_q8_K_ref),
    SNIPER_READ_ROW(kTQ1_0, kQ8_K, BlockTQ1_0, BlockQ8_K, dequantize_row_tq1_0_ref, vec_dot_tq1_0_q8_K_ref),
    SNIPER_READ_ROW(kTQ2_0, kQ8_K, BlockTQ2_0, BlockQ8_K, dequantize_row_tq2_0_ref, vec_dot_tq2_0_q8_K_ref),
    SNIPER_READ_ROW(kIQ2_RP, kQ8_K, BlockIQ2_RP, BlockQ8_K, dequantize_row_iq2_rp_ref, vec_dot_iq2_rp_q8_K_ref),
    SNIPER_READ_ROW(kIQ3_XXS_RP, kQ8_K, BlockIQ3_RP, BlockQ8_K, dequantize_row_iq3_xxs_rp_ref,
                    vec_dot_iq3_xxs_rp_q8_K_ref),
    SNIPER_READ_ROW(kIQ3_S_RP, kQ8_K, BlockIQ3_RP, BlockQ8_K, dequantize_row_iq3_s_rp_ref, vec_dot_iq3_s_rp_q8_K_ref),
    SNIPER_READ_ROW(kIQ1_S_RP, kQ8_K, BlockIQ1_RP, BlockQ8_K, dequantize_row_iq1_s_rp_ref, vec_dot_iq1_s_rp_q8_K_ref),
    SNIPER_READ_ROW(kIQ1_M_RP, kQ8_K, BlockIQ1_RP, BlockQ8_K, dequantize_row_iq1_m_rp_ref, vec_dot_iq1_m_rp_q8_K_ref),
    SNIPER_ACT_ROW(kQ8_1, BlockQ8_1, quantize_row_q8_1_ref, dequantize_row_q8_1_ref),
    SNIPER_ACT_ROW(kQ8_K, BlockQ8_K, quantize_row_q8_K_ref, dequantize_row_q8_K_ref),
};

#undef SNIPER_WEIGHT_ROW
#undef SNIPER_ACT_ROW
#undef SNIPER_READ_ROW

const RefCodec* find_codec(GgmlType type) {
  for (const RefCodec& c : kCodecs) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

const RefCodec& get_codec(GgmlType type) {
  const RefCodec* c = find_codec(type);
  CHECK(c != nullptr, "no reference codec for ggml type %u (%s)", static_cast<unsigned>(type),
        get_type_info(type).name);
  return *c;
}

}  // namespace

bool is_supported_weight_type(GgmlType type) {
  const RefCodec* c = find_codec(type);
  return c != nullptr && c->is_weight;
}

GgmlType vec_dot_type(GgmlType type) {
  const RefCodec& c = get_codec(type);
  CHECK(c.is_weight, "ggml type %s is not a supported weight type", get_type_info(type).name);
  return c.vec_dot_type;
}

bool has_ref_quantizer(GgmlType type) {
  const RefCodec* c = find_codec(type);
  return c != nullptr && c->quantize != nullptr;
}

void quantize_row_ref(GgmlType type, const float* src, void* dst, int64_t n) {
  block_count(n, get_type_info(type).block_size, "quantize_row_ref");
  const RefCodec& c = get_codec(type);
  CHECK(c.quantize != nullptr, "no reference quantizer for %s", get_type_info(type).name);
  c.quantize(src, dst, n);
}

void quantize_act_row_ref(GgmlType act_type, const float* src, void* dst, int64_t n) {
  block_count(n, get_type_info(act_type).block_size, "quantize_act_row_ref");
  switch (act_type) {
    case GgmlType::kQ8_0: quantize_act_q8_0_ref(src, static_cast<BlockQ8_0*>(dst), n); return;
    case GgmlType::kQ8_1: quantize_act_q8_1_ref(src, static_cast<BlockQ8_1*>(dst), n); return;
    default: get_codec(act_type).quantize(src, dst, n); return;
  }
}

void dequantize_row_ref(GgmlType type, const void* src, float* dst, int64_t n) {
  block_count(n, get_type_info(type).block_size, "dequantize_row_ref");
  get_codec(type).dequantize(src, dst, n);
}

float vec_dot_ref(GgmlType type, int64_t n, const void* w, const void* a) {
  const RefCodec& c = get_codec(type);
  CHECK(c.is_weight, "ggml type %s is not a supported weight type", get_type_info(type).name);
  block_count(n, get_type_info(type).block_size, "vec_dot_ref");
  return c.vec_dot(n, w, a);
}

}  // namespace sniper
