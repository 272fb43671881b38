// SPDX-License-Identifier: MIT
// Synthetic Qwen3.5 (qwen35 dense, qwen35moe) and Qwen3-Next (qwen3next) models: the metadata
// keys and tensors llama.cpp's converter writes for them (see ../shared/reference/
// ARCHITECTURES.md and the syn-qwen35*/syn-qwen3next fixtures). Layer l is gated full attention
// when (l + 1) % full_attention_interval == 0, else a gated delta net:
//   attn_qkv [dim, 2 nk d + nv d]  attn_gate [dim, nv d]  ssm_conv1d [conv, 2 nk d + nv d]
//   ssm_dt.bias [nv]  ssm_a [nv]  ssm_beta / ssm_alpha [dim, nv] (qwen3next: ssm_ba [dim, 2 nv])
//   ssm_norm [d]  ssm_out [nv d, dim]
// (nk = ssm.group_count, nv = ssm.time_step_rank, d = ssm.state_size); attention layers carry
// attn_q [dim, 2 n_heads head_dim] (query and output gate), attn_k, attn_v, attn_output and the
// q/k norms. Every layer ends with post_attention_norm and a SwiGLU FFN (qwen35) or routed
// experts plus a sigmoid-gated shared expert (ffn_gate_inp_shexp [dim]).
// Special values as the fixtures draw them: ssm_conv1d uniform(-0.5, 0.5), ssm_dt.bias
// uniform(-1, 1), ssm_a = -A with A log-uniform in [0.05, 0.5] (decay exp(g) roughly in
// [0.4, 0.99]), so the recurrent state carries information along the sequence.
// Quantization (llama_tensor_get_type_impl): attn_qkv is attn_v-like (Q4_K_M: Q6_K where
// use_more_bits over the attn_v/attn_qkv counter); attn_gate, ssm_out, ssm_alpha, ssm_beta and
// ssm_ba take the file type's default; ssm_conv1d, ssm_a, ssm_dt.bias, the norms, ffn_gate_inp
// and ffn_gate_inp_shexp stay F32; the shared expert's ffn_*_shexp follow the ffn_gate / ffn_up /
// ffn_down rules.
// With nextn_layers, that many multi-token-prediction blocks follow the main stack (block_count
// counts them; nextn_predict_layers): each a gated full-attention layer with the main layers'
// FFN, plus nextn.eh_proj [2 dim, dim] (the default type) and the f32 nextn.enorm, nextn.hnorm
// and nextn.shared_head_norm; the embedding and head are the model's.
#include <string>
#include <vector>

#include "model/tensor_names.h"
#include "synth/synth_plan.h"

namespace sniper {

namespace {

bool is_moe_arch(const std::string& arch) { return arch == "qwen35moe" || arch == "qwen3next"; }

int64_t rope_dims(const SynthSpec& s) { return s.n_rot > 0 ? s.n_rot : s.head_dim; }

// IMRoPE sections of Qwen3.5: [11, 11, 10, 0] for n_rot 64, scaled (sum n_rot / 2).
std::vector<int32_t> rope_sections(int64_t n_rot) {
  const int64_t total = n_rot / 2;
  const int64_t a = (total * 11 + 16) / 32;
  return {static_cast<int32_t>(a), static_cast<int32_t>(a), static_cast<int32_t>(total - 2 * a), 0};
}

}  // namespace

bool synth_is_hybrid_arch(const std::string& arch) {
  return arch == "qwen35" || arch == "qwen35moe" || arch == "qwen3next";
}

Status validate_hybrid_spec(const SynthSpec& s) {
  auto check = [](const char* name, int64_t v, int64_t lo, int64_t hi) -> Status {
    if (v < lo || v > hi) {
      return make_error("%s is %ld but must be in [%ld, %ld]", name, static_cast<long>(v), static_cast<long>(lo),
                        static_cast<long>(hi));
    }
    return ok_status();
  };
  SNIPER_TRY(check("--ssm-state", s.ssm_state, 2, 4096));
  SNIPER_TRY(check("--ssm-k-heads", s.ssm_k_heads, 1, 4096));
  SNIPER_TRY(check("--ssm-v-heads", s.ssm_v_heads, s.ssm_k_heads, 4096));
  if (s.ssm_v_heads % s.ssm_k_heads != 0) {
    return make_error("--ssm-v-heads (%ld) must be a multiple of --ssm-k-heads (%ld)", static_cast<long>(s.ssm_v_heads),
                      static_cast<long>(s.ssm_k_heads));
  }
  SNIPER_TRY(check("--ssm-conv", s.ssm_conv, 2, 64));
  SNIPER_TRY(check("--full-attn-interval", s.full_attention_interval, 1, s.n_layers));
  SNIPER_TRY(check("--nextn", s.nextn_layers, 0, 4));
  const int64_t n_rot = rope_dims(s);
  SNIPER_TRY(check("--rope-dims", n_rot, 2, s.head_dim));
  if (n_rot % 2 != 0) return make_error("--rope-dims is %ld but must be even", static_cast<long>(n_rot));
  if (s.arch != "qwen3next" && n_rot < 4) {
    return make_error("--rope-dims is %ld but IMRoPE sections need at least 4", static_cast<long>(n_rot));
  }
  if (is_moe_arch(s.arch)) SNIPER_TRY(check("--shared-ff", s.shared_expert_hidden_dim, 1, 1 << 20));
  return ok_status();
}

void add_hybrid_metadata(const SynthSpec& s, GgufWriter& w) {
  const std::string p = s.arch + ".";
  const bool moe = is_moe_arch(s.arch);
  auto u32 = [&](const char* key, int64_t v) { w.set_u32(p + key, static_cast<uint32_t>(v)); };
  u32("block_count", s.n_layers + s.nextn_layers);
  if (s.nextn_layers > 0) u32("nextn_predict_layers", s.nextn_layers);
  u32("context_length", s.n_ctx);
  u32("embedding_length", s.dim);
  if (s.arch != "qwen35moe") u32("feed_forward_length", s.hidden_dim);
  u32("attention.head_count", s.n_heads);
  u32("attention.head_count_kv", s.n_kv_heads);
  if (s.arch != "qwen3next") w.set_i32_array(p + "rope.dimension_sections", rope_sections(rope_dims(s)));
  w.set_f32(p + "rope.freq_base", s.rope_base);
  w.set_f32(p + "attention.layer_norm_rms_epsilon", s.norm_eps);
  if (moe) {
    u32("expert_count", s.n_experts);
    u32("expert_used_count", s.n_experts_active);
  }
  u32("attention.key_length", s.head_dim);
  u32("attention.value_length", s.head_dim);
  if (moe) {
    u32("expert_feed_forward_length", s.expert_hidden_dim);
    u32("expert_shared_feed_forward_length", s.shared_expert_hidden_dim);
  }
  u32("ssm.conv_kernel", s.ssm_conv);
  u32("ssm.state_size", s.ssm_state);
  u32("ssm.group_count", s.ssm_k_heads);
  u32("ssm.time_step_rank", s.ssm_v_heads);
  u32("ssm.inner_size", s.ssm_v_heads * s.ssm_state);
  u32("full_attention_interval", s.full_attention_interval);
  u32("rope.dimension_count", rope_dims(s));
}

std::vector<PlannedTensor> plan_hybrid(const SynthSpec& s, const SynthTypePlan& tp, int64_t vocab) {
  const bool moe = is_moe_arch(s.arch);
  const int64_t n_gqa = s.n_heads / s.n_kv_heads;
  const float res_std = synth_residual_std(s.n_layers);
  const int64_t d = s.ssm_state, nk = s.ssm_k_heads, nv = s.ssm_v_heads;
  const int64_t qkv_dim = 2 * nk * d + nv * d, v_dim = nv * d;
  const int64_t q_dim = s.n_heads * s.head_dim, kv_dim = s.n_kv_heads * s.head_dim;
  SynthPlanBuilder b(s, tp);
  const SynthTensorPos top{};
  b.matrix(kTokenEmbdName, SynthMatrix::kTokenEmbd, top, {s.dim, vocab}, kSynthEmbeddingStd, n_gqa);
  b.norm(kOutputNormName, s.dim);
  b.matrix(kOutputName, SynthMatrix::kOutput, top, {s.dim, vocab}, kSynthWeightStd, n_gqa);
  int64_t down_idx = 0;  // llama.cpp's running ffn_down counter (file order: _exps before _shexp)
  const int64_t n_blocks = s.n_layers + s.nextn_layers;
  for (int64_t l = 0; l < n_blocks; ++l) {
    const std::string blk = "blk." + std::to_string(l) + ".";
    const bool mtp = l >= s.n_layers;
    // One attn_v-like tensor (attn_qkv or attn_v) per layer, so its counter is the layer.
    const SynthTensorPos pos{l, n_blocks, l, n_blocks, down_idx};
    b.norm(blk + "attn_norm.weight", s.dim);
    b.norm(blk + "post_attention_norm.weight", s.dim);
    if (mtp) {
      b.matrix(blk + "nextn.eh_proj.weight", SynthMatrix::kOther, pos, {2 * s.dim, s.dim}, kSynthWeightStd, n_gqa);
      b.norm(blk + "nextn.enorm.weight", s.dim);
      b.norm(blk + "nextn.hnorm.weight", s.dim);
      b.norm(blk + "nextn.shared_head_norm.weight", s.dim);
    }
    if (!mtp && (l + 1) % s.full_attention_interval != 0) {
      b.matrix(blk + "attn_qkv.weight", SynthMatrix::kAttnV, pos, {s.dim, qkv_dim}, kSynthWeightStd, n_gqa);
      b.matrix(blk + "attn_gate.weight", SynthMatrix::kOther, pos, {s.dim, v_dim}, kSynthWeightStd, n_gqa);
      b.f32(blk + "ssm_conv1d.weight", {s.ssm_conv, qkv_dim}, SynthInit::kUniform, -0.5f, 0.5f);
      b.f32(blk + "ssm_dt.bias", {nv}, SynthInit::kUniform, -1.0f, 1.0f);
      b.f32(blk + "ssm_a", {nv}, SynthInit::kNegLogUniform, 0.05f, 0.5f);
      if (s.arch == "qwen3next") {
        b.matrix(blk + "ssm_ba.weight", SynthMatrix::kOther, pos, {s.dim, 2 * nv}, kSynthWeightStd, n_gqa);
      } else {
        b.matrix(blk + "ssm_beta.weight", SynthMatrix::kOther, pos, {s.dim, nv}, kSynthWeightStd, n_gqa);
        b.matrix(blk + "ssm_alpha.weight", SynthMatrix::kOther, pos, {s.dim, nv}, kSynthWeightStd, n_gqa);
      }
      b.norm(blk + "ssm_norm.weight", d);
      b.matrix(blk + "ssm_out.weight", SynthMatrix::kOther, pos, {v_dim, s.dim}, res_std, n_gqa);
    } else {
      b.matrix(blk + "attn_q.weight", SynthMatrix::kAttnQ, pos, {s.dim, 2 * q_dim}, kSynthWeightStd, n_gqa);
      b.matrix(blk + "attn_k.weight", SynthMatrix::kAttnK, pos, {s.dim, kv_dim}, kSynthWeightStd, n_gqa);
      b.matrix(blk + "attn_v.weight", SynthMatrix::kAttnV, pos, {s.dim, kv_dim}, kSynthWeightStd, n_gqa);
      b.matrix(blk + "attn_output.weight", SynthMatrix::kAttnOutput, pos, {q_dim, s.dim}, res_std, n_gqa);
      b.norm(blk + "attn_q_norm.weight", s.head_dim);
      b.norm(blk + "attn_k_norm.weight", s.head_dim);
    }
    if (moe) {
      const int64_t ff = s.expert_hidden_dim, sh = s.shared_expert_hidden_dim, e = s.n_experts;
      // llama.cpp never quantizes the router; the shared-expert gate is one f32 row.
      b.f32(blk + "ffn_gate_inp.weight", {s.dim, e}, SynthInit::kWeight);
      b.f32(blk + "ffn_gate_inp_shexp.weight", {s.dim}, SynthInit::kWeight);
      b.matrix(blk + "ffn_gate_exps.weight", SynthMatrix::kFfnGate, pos, {s.dim, ff, e}, kSynthWeightStd, n_gqa);
      b.matrix(blk + "ffn_up_exps.weight", SynthMatrix::kFfnUp, pos, {s.dim, ff, e}, kSynthWeightStd, n_gqa);
      SynthTensorPos down = pos;
      down.down_idx = down_idx++;
      b.matrix(blk + "ffn_down_exps.weight", SynthMatrix::kFfnDown, down, {ff, s.dim, e}, res_std, n_gqa);
      b.matrix(blk + "ffn_gate_shexp.weight", SynthMatrix::kFfnGate, pos, {s.dim, sh}, kSynthWeightStd, n_gqa);
      b.matrix(blk + "ffn_up_shexp.weight", SynthMatrix::kFfnUp, pos, {s.dim, sh}, kSynthWeightStd, n_gqa);
      down.down_idx = down_idx++;
      b.matrix(blk + "ffn_down_shexp.weight", SynthMatrix::kFfnDown, down, {sh, s.dim}, res_std, n_gqa);
    } else {
      b.matrix(blk + "ffn_gate.weight", SynthMatrix::kFfnGate, pos, {s.dim, s.hidden_dim}, kSynthWeightStd, n_gqa);
      b.matrix(blk + "ffn_up.weight", SynthMatrix::kFfnUp, pos, {s.dim, s.hidden_dim}, kSynthWeightStd, n_gqa);
      SynthTensorPos down = pos;
      down.down_idx = down_idx++;
      b.matrix(blk + "ffn_down.weight", SynthMatrix::kFfnDown, down, {s.hidden_dim, s.dim}, res_std, n_gqa);
    }
  }
  return b.take_sorted();
}

}  // namespace sniper
