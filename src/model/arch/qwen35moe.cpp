// SPDX-License-Identifier: MIT
// qwen35moe: Qwen3.5-35B-A3B and relatives: the Qwen3.5 hybrid plan (arch/qwen35_family.cpp:
// 3 delta-net layers then one gated attention layer, IMRoPE), routed experts (softmax, top-k,
// renormalised) plus a sigmoid-gated shared expert; value head j of a delta-net reads key head
// j % group_count (tiled).
#include "model/arch/arch.h"

namespace sniper {

namespace {
Status finish_qwen35moe(const GgufFile& file, ModelConfig& config) {
  return finish_qwen35_family(file, config,
                              {.moe = true, .grouped_heads = false, .fused_ba = false, .rope_sections = true});
}
}  // namespace

extern const ArchSpec kQwen35MoeArch = {
    // registered in registry.cpp
    .name = "qwen35moe", .rope_style = RopeStyle::kNeox, .qkv_bias = false,          .qk_norm = true,
    .allow_moe = true,   .requires_moe = true,           .finish = finish_qwen35moe,
};

}  // namespace sniper
