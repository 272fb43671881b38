// SPDX-License-Identifier: MIT
// qwen3next: Qwen3-Next-80B-A3B: the Qwen3.5 hybrid plan (arch/qwen35_family.cpp) with NeoX rope
// (no sections), beta and alpha from one fused ssm_ba projection (per key head [b | a]) and value
// head j reading key head j / (time_step_rank / group_count) (grouped); routed experts plus a
// sigmoid-gated shared expert. feed_forward_length is present but unused.
#include "model/arch/arch.h"

namespace sniper {

namespace {
Status finish_qwen3next(const GgufFile& file, ModelConfig& config) {
  return finish_qwen35_family(file, config,
                              {.moe = true, .grouped_heads = true, .fused_ba = true, .rope_sections = false});
}
}  // namespace

extern const ArchSpec kQwen3NextArch = {
    // registered in registry.cpp
    .name = "qwen3next", .rope_style = RopeStyle::kNeox, .qkv_bias = false,          .qk_norm = true,
    .allow_moe = true,   .requires_moe = true,           .finish = finish_qwen3next,
};

}  // namespace sniper
