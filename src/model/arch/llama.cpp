// SPDX-License-Identifier: MIT
// llama: Llama 1/2/3, TinyLlama and Mixtral-style MoE (ffn_*_exps tensors, softmax gating
// with the selected weights renormalised). Rope rotates adjacent pairs.
#include "model/arch/arch.h"

namespace sniper {

extern const ArchSpec kLlamaArch = {
    // registered in registry.cpp
    .name = "llama",   .rope_style = RopeStyle::kNorm, .qkv_bias = false, .qk_norm = false,
    .allow_moe = true, .requires_moe = false,          .finish = nullptr,
};

}  // namespace sniper
