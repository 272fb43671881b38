// SPDX-License-Identifier: MIT
// llama.cpp's per-tensor type rules (llama_tensor_get_type_impl in src/llama-quant.cpp of the
// snapshot under ../shared/tools) for the i-quant, ternary and 2-bit file types, restricted to
// the tensors synthetic models have. The importance matrix these file types are quantized with
// is assumed present (llama-quantize refuses IQ1/IQ2/IQ3_XXS/Q2_K_S without one), which matters
// only for IQ3_XXS's attn_v (IQ3_XXS, not IQ3_S) and ffn_down (unchanged). The output head
// (Q5_K or Q6_K) and token embedding rules come first, as in llama.cpp.
#include <initializer_list>
#include <iterator>

#include "synth/synth_mix.h"

namespace sniper {

namespace {

// LLAMA_FTYPE_MOSTLY_* numbers (llama.h).
constexpr int kIQ2_XXS = 19, kIQ2_XS = 20, kQ2_K_S = 21, kIQ3_XS = 22, kIQ3_XXS = 23, kIQ1_S = 24, kIQ3_S = 26,
              kIQ3_M = 27, kIQ2_S = 28, kIQ2_M = 29, kIQ1_M = 31, kTQ1_0 = 36, kTQ2_0 = 37;

constexpr SynthIqFileType kIqFileTypes[] = {
    {"iq1_s", kIQ1_S, GgmlType::kIQ1_S},       {"iq1_m", kIQ1_M, GgmlType::kIQ1_M},
    {"iq2_xxs", kIQ2_XXS, GgmlType::kIQ2_XXS}, {"iq2_xs", kIQ2_XS, GgmlType::kIQ2_XS},
    {"iq2_s", kIQ2_S, GgmlType::kIQ2_XS},      {"iq2_m", kIQ2_M, GgmlType::kIQ2_S},
    {"iq3_xxs", kIQ3_XXS, GgmlType::kIQ3_XXS}, {"iq3_xs", kIQ3_XS, GgmlType::kIQ3_S},
    {"iq3_s", kIQ3_S, GgmlType::kIQ3_S},       {"iq3_m", kIQ3_M, GgmlType::kIQ3_S},
    {"q2_k_s", kQ2_K_S, GgmlType::kQ2_K},      {"tq1_0", kTQ1_0, GgmlType::kTQ1_0},
    {"tq2_0", kTQ2_0, GgmlType::kTQ2_0},
};

bool one_of(int f, std::initializer_list<int> set) {
  for (int x : set) {
    if (x == f) return true;
  }
  return false;
}

}  // namespace

const SynthIqFileType* synth_iq_file_types(size_t* count) {
  *count = std::size(kIqFileTypes);
  return kIqFileTypes;
}

GgmlType synth_iq_mix_rule(int f, GgmlType base, SynthMatrix matrix, const SynthTensorPos& pos, int64_t n_experts,
                           int64_t n_gqa) {
  const int64_t i = pos.layer_idx, n = pos.n_layers;
  if (matrix == SynthMatrix::kOutput) {
    return one_of(f, {kIQ2_XXS, kIQ2_XS, kIQ3_XXS, kIQ1_S, kIQ2_S, kIQ2_M, kIQ1_M}) ? GgmlType::kQ5_K : GgmlType::kQ6_K;
  }
  if (matrix == SynthMatrix::kTokenEmbd) {
    if (one_of(f, {kIQ2_XXS, kIQ2_XS, kIQ1_S, kIQ1_M})) return GgmlType::kQ2_K;
    if (one_of(f, {kIQ2_S, kIQ2_M, kIQ3_XXS})) return GgmlType::kIQ3_S;
    if (one_of(f, {kTQ1_0, kTQ2_0})) return GgmlType::kQ4_K;
    return base;
  }
  const bool iq2_s_m = f == kIQ2_S || f == kIQ2_M;
  if (one_of(f, {kIQ2_XXS, kIQ2_XS, kIQ1_S, kIQ2_S, kIQ2_M, kIQ1_M})) {
    switch (matrix) {
      case SynthMatrix::kAttnV:
        if (n_gqa >= 4 || n_experts >= 4) return GgmlType::kQ4_K;
        return iq2_s_m ? GgmlType::kIQ3_S : GgmlType::kQ2_K;
      case SynthMatrix::kAttnK: return n_experts == 8 ? GgmlType::kQ4_K : base;
      case SynthMatrix::kFfnDown:
        // llama.cpp compares its running ffn_down counter (not the layer) with n_layers / 8.
        if (pos.down_idx < n / 8) return iq2_s_m ? GgmlType::kIQ3_S : GgmlType::kQ2_K;
        return base;
      case SynthMatrix::kAttnOutput:
        if (n_experts == 8) return GgmlType::kQ5_K;
        if (f == kIQ1_S || f == kIQ1_M) return GgmlType::kIQ2_XXS;
        return iq2_s_m ? GgmlType::kIQ3_S : base;
      default: return base;
    }
  }
  switch (matrix) {
    case SynthMatrix::kAttnV: {
      GgmlType t = base;
      if (f == kQ2_K_S && n_gqa >= 4) t = GgmlType::kQ4_K;
      else if (f == kIQ3_XXS) t = n_gqa >= 4 ? GgmlType::kQ4_K : GgmlType::kIQ3_XXS;  // with imatrix
      else if ((f == kIQ3_XS || f == kIQ3_S) && n_gqa >= 4) t = GgmlType::kQ4_K;
      else if (f == kIQ3_M) t = GgmlType::kQ4_K;
      if (n_experts == 8) t = GgmlType::kQ8_0;
      return t;
    }
    case SynthMatrix::kAttnK:
      if (n_experts == 8) return GgmlType::kQ8_0;
      if (f == kIQ3_XS) return GgmlType::kIQ3_XXS;
      if (f == kIQ3_XXS) return GgmlType::kIQ2_S;
      return base;
    case SynthMatrix::kAttnQ:
      if (f == kIQ3_XS) return GgmlType::kIQ3_XXS;
      if (f == kIQ3_XXS) return GgmlType::kIQ2_S;
      return base;
    case SynthMatrix::kFfnDown:
      if (f == kQ2_K_S && i < n / 8) return GgmlType::kQ4_K;
      if (f == kIQ3_M && (i < n / 8 || (n_experts == 8 && synth_use_more_bits(i, n)))) return GgmlType::kQ4_K;
      return base;
    case SynthMatrix::kAttnOutput:
      if (n_experts == 8) return one_of(f, {kIQ3_XS, kIQ3_XXS, kIQ3_S, kIQ3_M}) ? GgmlType::kQ5_K : base;
      if (f == kIQ3_XXS) return GgmlType::kIQ3_S;
      if (f == kIQ3_M) return GgmlType::kQ4_K;
      return base;
    case SynthMatrix::kFfnGate:
    case SynthMatrix::kFfnUp:
      if (f == kIQ3_XS && i >= n / 8 && i < 7 * n / 8) return GgmlType::kIQ3_XXS;
      return base;
    default: return base;
  }
}

}  // namespace sniper
