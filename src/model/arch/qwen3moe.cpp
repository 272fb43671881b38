// SPDX-License-Identifier: MIT
// qwen3moe: Qwen3-30B-A3B and relatives: qwen3 attention with routed experts (softmax over all
// experts, top-k, selected weights renormalised to sum 1; the files carry no
// expert_weights_norm key, the renormalisation is part of the architecture), no shared expert.
#include "model/arch/arch.h"

namespace sniper {

namespace {
Status finish_qwen3moe(const GgufFile& file, ModelConfig& config) {
  auto ff = file.get_int(config.arch + ".expert_feed_forward_length");
  if (!ff.ok()) return ff.error();
  if (*ff <= 0 || *ff > (int64_t{1} << 20)) {
    return make_error("%s.expert_feed_forward_length is %ld but must be in [1, 1048576]", config.arch.c_str(),
                      static_cast<long>(*ff));
  }
  config.expert_hidden_dim = *ff;
  return ok_status();
}
}  // namespace

extern const ArchSpec kQwen3MoeArch = {
    // registered in registry.cpp
    .name = "qwen3moe", .rope_style = RopeStyle::kNeox, .qkv_bias = false,         .qk_norm = true,
    .allow_moe = true,  .requires_moe = true,           .finish = finish_qwen3moe,
};

}  // namespace sniper
