// SPDX-License-Identifier: MIT
// qwen2: Qwen2 / Qwen2.5 dense models: biases on the q/k/v projections, NeoX rope.
#include "model/arch/arch.h"

namespace sniper {

extern const ArchSpec kQwen2Arch = {
    // registered in registry.cpp
    .name = "qwen2",    .rope_style = RopeStyle::kNeox, .qkv_bias = true,  .qk_norm = false,
    .allow_moe = false, .requires_moe = false,          .finish = nullptr,
};

}  // namespace sniper
