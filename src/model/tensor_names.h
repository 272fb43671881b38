// SPDX-License-Identifier: MIT
// GGUF tensor names, as llama.cpp writes them ("blk.<layer_idx>.attn_q.weight").
#pragma once

#include <cstdint>
#include <string>

namespace sniper {

// Per-layer tensor kinds.
enum class LayerTensor {
  kAttnNorm,
  kAttnQ,
  kAttnK,
  kAttnV,
  kAttnOutput,
  kAttnQBias,
  kAttnKBias,
  kAttnVBias,
  kAttnQNorm,
  kAttnKNorm,
  kFfnNorm,
  kFfnGate,
  kFfnUp,
  kFfnDown,
  kFfnGateInp,
  kFfnGateExps,
  kFfnUpExps,
  kFfnDownExps,
  kPostAttnNorm,  // qwen35 family: the FFN's input norm is named post_attention_norm
  // Gated delta-net (qwen35 family).
  kAttnQkv,
  kAttnGate,
  kSsmConv1d,
  kSsmDtBias,
  kSsmA,
  kSsmBeta,
  kSsmAlpha,
  kSsmBa,
  kSsmNorm,
  kSsmOut,
  // Shared expert (qwen35moe, qwen3next).
  kFfnGateInpShexp,
  kFfnGateShexp,
  kFfnUpShexp,
  kFfnDownShexp,
};

// "blk.<layer_idx>.<suffix>"
std::string layer_tensor_name(int64_t layer_idx, LayerTensor kind);

inline constexpr const char* kTokenEmbdName = "token_embd.weight";
inline constexpr const char* kOutputNormName = "output_norm.weight";
inline constexpr const char* kOutputName = "output.weight";
inline constexpr const char* kRopeFreqsName = "rope_freqs.weight";

}  // namespace sniper
