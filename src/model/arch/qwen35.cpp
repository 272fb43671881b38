// SPDX-License-Identifier: MIT
// qwen35: the dense Qwen3.5 models (0.8B .. 27B): the Qwen3.5 hybrid plan (arch/qwen35_family.cpp)
// with a dense SwiGLU FFN of feed_forward_length; value head j of a delta-net reads key head
// j % group_count (tiled).
#include "model/arch/arch.h"

namespace sniper {

namespace {
Status finish_qwen35(const GgufFile& file, ModelConfig& config) {
  return finish_qwen35_family(file, config,
                              {.moe = false, .grouped_heads = false, .fused_ba = false, .rope_sections = true});
}
}  // namespace

extern const ArchSpec kQwen35Arch = {
    // registered in registry.cpp
    .name = "qwen35",   .rope_style = RopeStyle::kNeox, .qkv_bias = false,       .qk_norm = true,
    .allow_moe = false, .requires_moe = false,          .finish = finish_qwen35,
};

}  // namespace sniper
