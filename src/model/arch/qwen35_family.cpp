// SPDX-License-Identifier: MIT
// The Qwen3.5 / Qwen3-Next hybrid layer plan, shared by qwen35, qwen35moe and qwen3next: layer l
// is full attention when (l + 1) % full_attention_interval == 0 (q with a per-head output gate,
// q/k RMS norms, NeoX rope over the first rope.dimension_count dims), else a gated delta-net
// (ssm.* keys). The FFN's input norm is post_attention_norm; the FFN is dense SwiGLU (qwen35)
// or routed experts plus a sigmoid-gated shared expert (qwen35moe, qwen3next). MTP blocks
// (nextn_predict_layers) are left out of the plan; model/mtp_head.h runs the first one as a
// draft head.
#include <string>

#include "model/arch/arch.h"

namespace sniper {

Status finish_qwen35_family(const GgufFile& file, ModelConfig& c, const Qwen35Family& family) {
  const std::string p = c.arch + ".";
  constexpr int64_t kMaxDim = int64_t{1} << 20;
  // Real checkpoints may append next-token-prediction (MTP) blocks after the main stack
  // (block_count counts them); the forward pass runs the main stack only.
  auto nextn = file.get_int_or(p + "nextn_predict_layers", 0);
  if (!nextn.ok()) return nextn.error();
  if (*nextn < 0 || *nextn >= c.n_layers) {
    return make_error("%snextn_predict_layers is %ld but must be in [0, block_count - 1 = %ld]", p.c_str(),
                      static_cast<long>(*nextn), static_cast<long>(c.n_layers - 1));
  }
  c.n_layers -= *nextn;
  c.n_nextn_layers = *nextn;
  if (family.moe) {
    SNIPER_ASSIGN_OR_RETURN(c.expert_hidden_dim, int_in_range(file, p + "expert_feed_forward_length", 1, kMaxDim));
    SNIPER_ASSIGN_OR_RETURN(c.shared_expert_hidden_dim,
                            int_in_range(file, p + "expert_shared_feed_forward_length", 1, kMaxDim));
  }
  DeltaNetConfig& d = c.delta_net;
  SNIPER_ASSIGN_OR_RETURN(d.conv_kernel, int_in_range(file, p + "ssm.conv_kernel", 2, 64));
  SNIPER_ASSIGN_OR_RETURN(d.head_dim, int_in_range(file, p + "ssm.state_size", 1, 4096));
  SNIPER_ASSIGN_OR_RETURN(d.n_k_heads, int_in_range(file, p + "ssm.group_count", 1, 4096));
  SNIPER_ASSIGN_OR_RETURN(d.n_v_heads, int_in_range(file, p + "ssm.time_step_rank", 1, 4096));
  if (d.n_v_heads % d.n_k_heads != 0) {
    return make_error("%sssm.time_step_rank (%ld value heads) must be a multiple of ssm.group_count (%ld key heads)",
                      p.c_str(), static_cast<long>(d.n_v_heads), static_cast<long>(d.n_k_heads));
  }
  SNIPER_ASSIGN_OR_RETURN(int64_t inner, int_in_range(file, p + "ssm.inner_size", 1, kMaxDim));
  if (inner != d.v_dim()) {
    return make_error("%sssm.inner_size is %ld but ssm.time_step_rank * ssm.state_size is %ld", p.c_str(),
                      static_cast<long>(inner), static_cast<long>(d.v_dim()));
  }
  d.grouped_heads = family.grouped_heads;
  d.fused_ba = family.fused_ba;
  SNIPER_ASSIGN_OR_RETURN(int64_t interval, int_in_range(file, p + "full_attention_interval", 1, c.n_layers));
  if (family.rope_sections) {
    // IMRoPE: every rotated pair takes the time, height or width position by its section; for
    // text all three are the token position, so it is NeoX rope over rope.dimension_count dims.
    auto sections = file.get_int_array(p + "rope.dimension_sections");
    if (!sections.ok()) return sections.error();
    if ((*sections)->size() != 4) {
      return make_error("%srope.dimension_sections has %zu entries but must have 4", p.c_str(), (*sections)->size());
    }
    int64_t sum = 0;
    for (int64_t s : **sections) {
      if (s < 0 || s > c.rope_dims) {
        return make_error("%srope.dimension_sections holds %ld but entries must be in [0, %ld]", p.c_str(),
                          static_cast<long>(s), static_cast<long>(c.rope_dims));
      }
      sum += s;
    }
    if (sum > c.rope_dims / 2 || sum == 0) {
      return make_error("%srope.dimension_sections sum to %ld but must be in [1, rope.dimension_count / 2 = %ld]",
                        p.c_str(), static_cast<long>(sum), static_cast<long>(c.rope_dims / 2));
    }
    for (size_t i = 0; i < 4; ++i) c.rope_sections[i] = static_cast<int32_t>((**sections)[i]);
  }
  c.ffn_norm_post_attention = true;
  c.layers.assign(static_cast<size_t>(c.n_layers), LayerPlan{});
  for (int64_t l = 0; l < c.n_layers; ++l) {
    LayerPlan& lp = c.layers[static_cast<size_t>(l)];
    lp.mixer = (l + 1) % interval == 0 ? MixerKind::kAttention : MixerKind::kDeltaNet;
    lp.n_heads = c.n_heads;
    lp.n_kv_heads = c.n_kv_heads;
    lp.head_dim = c.head_dim;
    lp.attn_output_gate = true;
    lp.qk_norm = c.qk_norm;
    lp.ffn = family.moe ? FfnKind::kMoe : FfnKind::kDense;
    lp.shared_expert = family.moe ? SharedExpert::kGated : SharedExpert::kNone;
  }
  return ok_status();
}

}  // namespace sniper
