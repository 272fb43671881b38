// SPDX-License-Identifier: MIT
// qwen3: Qwen3 dense models: per-head RMS norm on q and k before rope, NeoX rope, no biases.
#include "model/arch/arch.h"

namespace sniper {

extern const ArchSpec kQwen3Arch = {
    // registered in registry.cpp
    .name = "qwen3",    .rope_style = RopeStyle::kNeox, .qkv_bias = false, .qk_norm = true,
    .allow_moe = false, .requires_moe = false,          .finish = nullptr,
};

}  // namespace sniper
