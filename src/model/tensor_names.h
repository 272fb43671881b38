// SPDX-License-Identifier: MIT
// GGUF tensor names, as llama.cpp writes them ("blk.<block>.attn_q.weight"). Which tensors a
// model reads, and their shapes and roles, are declared by the blocks' tables
// (model/tensor_table.h); these are the names code outside the tables refers to.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sniper {

// "blk.<block>.<suffix>"
std::string layer_tensor_name(int64_t block, std::string_view suffix);

inline constexpr const char* kTokenEmbdName = "token_embd.weight";
inline constexpr const char* kOutputNormName = "output_norm.weight";
inline constexpr const char* kOutputName = "output.weight";
inline constexpr const char* kRopeFreqsName = "rope_freqs.weight";
// gemma4 E-models' per-layer embedding table ([n_layers * per_layer_dim] x vocab rows).
inline constexpr const char* kPerLayerTokenEmbdName = "per_layer_token_embd.weight";

}  // namespace sniper
