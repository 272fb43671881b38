// SPDX-License-Identifier: MIT
// llama.cpp's quantization-mix rules for the tensors synthetic models contain.
#include "synth/synth_mix.h"

#include <cctype>

namespace sniper {

namespace {

struct TypeName {
  const char* name;
  GgmlType type;
  int file_type;  // llama.cpp's LLAMA_FTYPE_* whose name is this type, or -1
};
constexpr TypeName kPlainTypes[] = {
    {"f32", GgmlType::kF32, 0},    {"f16", GgmlType::kF16, 1},        {"bf16", GgmlType::kBF16, 32},
    {"q8_0", GgmlType::kQ8_0, 7},  {"q4_0", GgmlType::kQ4_0, 2},      {"q4_1", GgmlType::kQ4_1, 3},
    {"q5_0", GgmlType::kQ5_0, 8},  {"q5_1", GgmlType::kQ5_1, 9},      {"q2_k", GgmlType::kQ2_K, 10},
    {"q3_k", GgmlType::kQ3_K, -1}, {"q4_k", GgmlType::kQ4_K, -1},     {"q5_k", GgmlType::kQ5_K, -1},
    {"q6_k", GgmlType::kQ6_K, 18}, {"iq4_nl", GgmlType::kIQ4_NL, 25}, {"iq4_xs", GgmlType::kIQ4_XS, 30},
};

constexpr int kFtypeQ3_K_M = 12;
constexpr int kFtypeQ4_K_M = 15;
constexpr int kFtypeQ5_K_M = 17;

struct MixName {
  const char* name;
  GgmlType base;
  int ftype;
};
constexpr MixName kMixes[] = {
    {"q3_k_m", GgmlType::kQ3_K, kFtypeQ3_K_M},
    {"q4_k_m", GgmlType::kQ4_K, kFtypeQ4_K_M},
    {"q5_k_m", GgmlType::kQ5_K, kFtypeQ5_K_M},
};

// The mix rule alone (no row-length fallback).
GgmlType mix_rule(const SynthTypePlan& plan, SynthMatrix matrix, const SynthTensorPos& pos, int64_t n_experts,
                  int64_t row_len, int64_t n_gqa) {
  const GgmlType base = plan.base;
  const int64_t i = pos.layer_idx, n = pos.n_layers;
  // A tied token_embd is quantized like the output head.
  const bool head = matrix == SynthMatrix::kOutput || matrix == SynthMatrix::kTokenEmbdTied;
  if (plan.mix != kFtypeQ3_K_M && plan.mix != kFtypeQ4_K_M && plan.mix != kFtypeQ5_K_M) {
    // Output head: Q8_0 when its row is not whole blocks of the type it would get.
    if (head && row_len % get_type_info(base).block_size != 0) return GgmlType::kQ8_0;
    return synth_iq_mix_rule(plan.mix, base, head ? SynthMatrix::kOutput : matrix, pos, n_experts, n_gqa);
  }
  const bool eight_experts = n_experts == 8;
  switch (matrix) {
    case SynthMatrix::kTokenEmbd:
    case SynthMatrix::kOther: return base;
    case SynthMatrix::kOutput:
    case SynthMatrix::kTokenEmbdTied:
      // Output head: Q6_K unless the row is not whole base blocks (then Q8_0).
      return row_len % get_type_info(base).block_size != 0 ? GgmlType::kQ8_0 : GgmlType::kQ6_K;
    case SynthMatrix::kAttnV: {
      // attn_v and attn_qkv, counted together (pos.wv_idx of pos.n_wv).
      GgmlType t = base;
      if (plan.mix == kFtypeQ3_K_M) t = pos.wv_idx < 2 ? GgmlType::kQ5_K : GgmlType::kQ4_K;
      if ((plan.mix == kFtypeQ4_K_M || plan.mix == kFtypeQ5_K_M) && synth_use_more_bits(pos.wv_idx, pos.n_wv)) {
        t = GgmlType::kQ6_K;
      }
      // "for the 8-expert model, bumping this to Q8_0 trades just ~128MB"
      if (eight_experts) t = GgmlType::kQ8_0;
      return t;
    }
    case SynthMatrix::kAttnK: return eight_experts ? GgmlType::kQ8_0 : base;
    case SynthMatrix::kAttnOutput:
      if (eight_experts) return plan.mix == kFtypeQ5_K_M ? base : GgmlType::kQ5_K;
      return plan.mix == kFtypeQ3_K_M ? GgmlType::kQ4_K : base;
    case SynthMatrix::kFfnDown:
      if (plan.mix == kFtypeQ3_K_M) return i < n / 16 ? GgmlType::kQ5_K : GgmlType::kQ4_K;
      return synth_use_more_bits(i, n) ? GgmlType::kQ6_K : base;
    case SynthMatrix::kAttnQ:
    case SynthMatrix::kFfnGate:
    case SynthMatrix::kFfnUp: return base;
  }
  return base;
}

// llama.cpp's convert_incompatible_tensor fallback.
GgmlType fit_row(GgmlType t, int64_t row_len) {
  if (row_len % get_type_info(t).block_size == 0) return t;
  switch (t) {
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kIQ4_XS:
    case GgmlType::kIQ1_S:
    case GgmlType::kIQ1_M:
    case GgmlType::kIQ2_XXS:
    case GgmlType::kIQ2_XS:
    case GgmlType::kIQ2_S:
    case GgmlType::kIQ3_XXS:
    case GgmlType::kIQ3_S: t = GgmlType::kIQ4_NL; break;
    case GgmlType::kTQ1_0:
    case GgmlType::kTQ2_0: t = GgmlType::kQ4_0; break;
    case GgmlType::kQ4_K: t = GgmlType::kQ5_0; break;
    case GgmlType::kQ5_K: t = GgmlType::kQ5_1; break;
    case GgmlType::kQ6_K: t = GgmlType::kQ8_0; break;
    default: break;
  }
  return row_len % get_type_info(t).block_size == 0 ? t : GgmlType::kF16;
}

}  // namespace

bool synth_use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

Result<SynthTypePlan> resolve_synth_type(const std::string& given) {
  std::string name = given;
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t n_iq = 0;
  const SynthIqFileType* iq = synth_iq_file_types(&n_iq);
  for (size_t k = 0; k < n_iq; ++k) {
    if (name == iq[k].name) return SynthTypePlan{name, iq[k].base, iq[k].ftype, iq[k].ftype};
  }
  for (const TypeName& t : kPlainTypes) {
    if (name == t.name) return SynthTypePlan{name, t.type, 0, t.file_type};
  }
  for (const MixName& m : kMixes) {
    if (name == m.name) return SynthTypePlan{name, m.base, m.ftype, m.ftype};
  }
  std::string known;
  for (const TypeName& t : kPlainTypes) known += std::string(known.empty() ? "" : ", ") + t.name;
  for (const MixName& m : kMixes) known += std::string(", ") + m.name;
  for (size_t k = 0; k < n_iq; ++k) known += std::string(", ") + iq[k].name;
  return make_error("--type is '%s' but must be one of: %s", given.c_str(), known.c_str());
}

GgmlType synth_matrix_type(const SynthTypePlan& plan, SynthMatrix matrix, int64_t layer_idx, int64_t n_layers,
                           int64_t n_experts, int64_t row_len, int64_t n_gqa) {
  return synth_tensor_type(plan, matrix, SynthTensorPos::layer(layer_idx, n_layers), n_experts, row_len, n_gqa);
}

GgmlType synth_tensor_type(const SynthTypePlan& plan, SynthMatrix matrix, const SynthTensorPos& pos, int64_t n_experts,
                           int64_t row_len, int64_t n_gqa) {
  const GgmlType t = plan.mix == 0 ? plan.base : mix_rule(plan, matrix, pos, n_experts, row_len, n_gqa);
  return fit_row(t, row_len);
}

}  // namespace sniper
