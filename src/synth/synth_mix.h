// SPDX-License-Identifier: MIT
// Weight types of synthetic models: a plain type (every matrix in that type) or one of
// llama.cpp's *_K_M mixes, with llama.cpp's per-tensor rules (llama_tensor_get_type in
// src/llama-quant.cpp) for the tensors our architectures have, and its fallback for rows that
// are not a whole number of blocks. The rules decide the file size of a preset, so they follow
// llama.cpp exactly for q3_k_m, q4_k_m and q5_k_m (without imatrix; the 70B-only attn_v rule
// is not applied), and for the i-quant / ternary / 2-bit file types IQ1_S IQ1_M IQ2_XXS IQ2_XS
// IQ2_S IQ2_M IQ3_XXS IQ3_XS IQ3_S IQ3_M Q2_K_S TQ1_0 TQ2_0 (as quantized with an importance
// matrix, which the IQ1/IQ2/IQ3_XXS/Q2_K_S types require; see synth_mix_iq.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "gguf/format.h"

namespace sniper {

// A resolved --type value.
struct SynthTypePlan {
  std::string name;    // as given: "q4_k_m", "q8_0", ...
  GgmlType base;       // the type of every matrix a rule does not change
  int mix = 0;         // 0 plain; else the llama.cpp ftype of the mix (12 Q3_K_M, 15 Q4_K_M, 17 Q5_K_M,
                       // 19.. the i-quant file types, see synth_mix_iq.cpp)
  int file_type = -1;  // general.file_type to write (-1: none names this plain type exactly)
};

// The matrices a mix rule can tell apart, by llama.cpp's tensor categories (tensor_get_category
// in llama-quant.cpp): ffn_* covers the dense, merged-expert and shared-expert forms (any name
// containing ffn_gate / ffn_up / ffn_down, so gemma4's ffn_gate_up_exps is kFfnGate); kAttnV
// also stands for attn_qkv (llama.cpp's attn_v-like category, which the Q4_K_M rule reaches
// first); kTokenEmbdTied is token_embd (or per_layer_token_embd) of a model without output.weight,
// which llama.cpp quantizes like the output head; kOther is every other quantizable matrix
// (attn_gate, ssm_out, ssm_alpha, ssm_beta, ssm_ba, gemma4's inp_gate and proj): the default type.
enum class SynthMatrix {
  kTokenEmbd,
  kOutput,
  kAttnQ,
  kAttnK,
  kAttnV,
  kAttnOutput,
  kFfnGate,
  kFfnUp,
  kFfnDown,
  kTokenEmbdTied,
  kOther
};

// Where a matrix sits, as llama.cpp's quantizer counts it. layer_idx / n_layers: the block
// (from the name); wv_idx / n_wv: the ordinal of this attn_v-like tensor (attn_v or attn_qkv)
// among all of them in file order, and their count (the Q4_K_M / Q5_K_M / Q3_K_M attn_v rules
// use these counters, which differ from the layer when some layers have none, as in gemma4);
// down_idx: the ordinal of this ffn_down* tensor among all of them in file order (the
// IQ1/IQ2 mixes compare it with n_layers / 8, so with a shared expert the first n_layers / 16
// layers get the bump). For a plain llama-style stack all three ordinals equal layer_idx.
struct SynthTensorPos {
  int64_t layer_idx = 0;
  int64_t n_layers = 1;
  int64_t wv_idx = 0;
  int64_t n_wv = 1;
  int64_t down_idx = 0;
  // The llama-style position of layer `l` of n (one attn_v and one ffn_down per layer).
  static SynthTensorPos layer(int64_t l, int64_t n) { return {l, n, l, n, l}; }
};

// Resolves a --type name (case-insensitive: "q4_k_m", "IQ2_M"); the Error lists the allowed names.
[[nodiscard]] Result<SynthTypePlan> resolve_synth_type(const std::string& name);

// The type llama.cpp's quantizer gives this matrix: the mix rule for (layer_idx of n_layers,
// n_experts), then the fallback when row_len is not a multiple of the type's block size
// (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K/IQ4_XS -> IQ4_NL, then F16; the output
// head goes to Q8_0). layer_idx is ignored for token_embd/output.
// n_gqa = n_heads / n_kv_heads (the i-quant mixes raise attn_v at n_gqa >= 4).
GgmlType synth_matrix_type(const SynthTypePlan& plan, SynthMatrix matrix, int64_t layer_idx, int64_t n_layers,
                           int64_t n_experts, int64_t row_len, int64_t n_gqa = 1);
// The same with the quantizer's counters given explicitly (hybrid and gemma4 stacks).
GgmlType synth_tensor_type(const SynthTypePlan& plan, SynthMatrix matrix, const SynthTensorPos& pos, int64_t n_experts,
                           int64_t row_len, int64_t n_gqa);

// llama.cpp's use_more_bits(i, n): the first and last eighth of the layers and every third
// layer between them.
bool synth_use_more_bits(int64_t layer_idx, int64_t n_layers);

// Internal to synth/ (synth_mix_iq.cpp): the i-quant file types, by lower-case name.
struct SynthIqFileType {
  const char* name;  // "iq2_m"
  int ftype;         // LLAMA_FTYPE_MOSTLY_*
  GgmlType base;     // its default tensor type
};
const SynthIqFileType* synth_iq_file_types(size_t* count);
// The llama_tensor_get_type_impl rule of i-quant file type `ftype` for this matrix (before the
// row-length fallback).
GgmlType synth_iq_mix_rule(int ftype, GgmlType base, SynthMatrix matrix, const SynthTensorPos& pos, int64_t n_experts,
                           int64_t n_gqa);

}  // namespace sniper
