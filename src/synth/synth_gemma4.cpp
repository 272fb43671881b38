// SPDX-License-Identifier: MIT
// Synthetic Gemma 4 models (gemma4): the 26B-A4B-style MoE (a GELU MLP plus routed experts in
// every layer, full layers without attn_v) and the E-models (per-layer embeddings, KV-shared
// last layers), with the metadata keys and tensors llama.cpp's converter writes (see
// ../shared/reference/ARCHITECTURES.md and the syn-gemma4moe-small / syn-gemma4e-small fixtures).
// Layer l is full attention when (l + 1) % swa_period == 0, else sliding-window attention.
// Special values as the fixtures draw them: attn_q_norm / attn_k_norm 0.4 (1 + 0.1 N) (the
// attention scale is 1), the MoE router normal(0, 1) (its input is divided by sqrt(dim)),
// ffn_down_exps.scale and layer_output_scale uniform(0.5, 1.5), per_layer_token_embd
// normal(0, 0.1), rope_freqs 1 for the rotated pairs and 1e30 for the others. The embedding is
// tied (there is no output.weight) and scaled by sqrt(dim) at lookup, so token_embd has std
// 0.02 and output_norm is scaled to give logits of std about 2.5, in the non-linear part of the
// final softcap.
// Quantization (llama_tensor_get_type_impl): token_embd and per_layer_token_embd are quantized
// like the output head (tied embeddings; both match llama.cpp's token_embd names); inp_gate and
// proj take the default type; ffn_gate_up_exps follows the ffn_gate rule; per_layer_model_proj,
// the norms, the router and every 1-D tensor (the .scale tensors, rope_freqs) stay F32.
#include <cmath>
#include <string>
#include <vector>

#include "model/tensor_names.h"
#include "synth/synth_plan.h"

namespace sniper {

namespace {

bool is_full(const SynthSpec& s, int64_t l) { return (l + 1) % s.swa_period == 0; }
int64_t n_kv_full(const SynthSpec& s) { return s.n_kv_heads_full > 0 ? s.n_kv_heads_full : s.n_kv_heads; }
int64_t kv_heads(const SynthSpec& s, int64_t l) { return is_full(s, l) ? n_kv_full(s) : s.n_kv_heads; }
int64_t head_dim(const SynthSpec& s, int64_t l) { return is_full(s, l) ? s.head_dim : s.head_dim_swa; }
bool kv_shared(const SynthSpec& s, int64_t l) { return l >= s.n_layers - s.shared_kv_layers; }
int64_t ffn_dim(const SynthSpec& s, int64_t l) {
  return s.shared_double_ff && kv_shared(s, l) ? 2 * s.hidden_dim : s.hidden_dim;
}
bool has_attn_v(const SynthSpec& s, int64_t l) { return !kv_shared(s, l) && !(s.full_k_eq_v && is_full(s, l)); }

}  // namespace

Status validate_gemma4_spec(const SynthSpec& s) {
  auto check = [](const char* name, int64_t v, int64_t lo, int64_t hi) -> Status {
    if (v < lo || v > hi) {
      return make_error("%s is %ld but must be in [%ld, %ld]", name, static_cast<long>(v), static_cast<long>(lo),
                        static_cast<long>(hi));
    }
    return ok_status();
  };
  SNIPER_TRY(check("--head-dim-swa", s.head_dim_swa, 2, 1024));
  if (s.head_dim_swa % 2 != 0)
    return make_error("--head-dim-swa is %ld but must be even", static_cast<long>(s.head_dim_swa));
  SNIPER_TRY(check("--kv-heads-full", n_kv_full(s), 1, s.n_heads));
  if (s.n_heads % n_kv_full(s) != 0) {
    return make_error("--heads (%ld) must be a multiple of --kv-heads-full (%ld)", static_cast<long>(s.n_heads),
                      static_cast<long>(n_kv_full(s)));
  }
  SNIPER_TRY(check("--swa-period", s.swa_period, 1, s.n_layers));
  SNIPER_TRY(check("--window", s.sliding_window, 1, int64_t{1} << 24));
  SNIPER_TRY(check("--per-layer-dim", s.per_layer_dim, 0, 1 << 16));
  SNIPER_TRY(check("--shared-kv-layers", s.shared_kv_layers, 0, s.n_layers - 2));
  if (s.shared_kv_layers > 0) {
    // llama.cpp's rule (shared sliding layers read layer n_kv - 2, full ones n_kv - 1) equals
    // HF's only when those two are a sliding and a full layer, as in the real E2B / E4B.
    const int64_t n_kv = s.n_layers - s.shared_kv_layers;
    if (is_full(s, n_kv - 2) || !is_full(s, n_kv - 1)) {
      return make_error("--shared-kv-layers %ld: layers %ld and %ld (the last with own KV) must be sliding and full",
                        static_cast<long>(s.shared_kv_layers), static_cast<long>(n_kv - 2),
                        static_cast<long>(n_kv - 1));
    }
  }
  if (!(s.rope_partial > 0.0f && s.rope_partial <= 1.0f)) {
    return make_error("rope_partial is %g but must be in (0, 1]", static_cast<double>(s.rope_partial));
  }
  if (!(s.rope_base_swa > 1.0f))
    return make_error("--rope-base-swa is %g but must be > 1", static_cast<double>(s.rope_base_swa));
  if (!(s.final_softcap >= 0.0f))
    return make_error("final_softcap is %g but must be >= 0", static_cast<double>(s.final_softcap));
  return ok_status();
}

void add_gemma4_metadata(const SynthSpec& s, GgufWriter& w) {
  const std::string p = s.arch + ".";
  auto u32 = [&](const char* key, int64_t v) { w.set_u32(p + key, static_cast<uint32_t>(v)); };
  u32("block_count", s.n_layers);
  u32("context_length", s.n_ctx);
  u32("embedding_length", s.dim);
  if (s.shared_double_ff && s.shared_kv_layers > 0) {
    std::vector<int32_t> ff;
    for (int64_t l = 0; l < s.n_layers; ++l) ff.push_back(static_cast<int32_t>(ffn_dim(s, l)));
    w.set_i32_array(p + "feed_forward_length", ff);
  } else {
    u32("feed_forward_length", s.hidden_dim);
  }
  u32("attention.head_count", s.n_heads);
  if (n_kv_full(s) != s.n_kv_heads) {
    std::vector<int32_t> kv;
    for (int64_t l = 0; l < s.n_layers; ++l) kv.push_back(static_cast<int32_t>(kv_heads(s, l)));
    w.set_i32_array(p + "attention.head_count_kv", kv);
  } else {
    u32("attention.head_count_kv", s.n_kv_heads);
  }
  w.set_f32(p + "rope.freq_base", s.rope_base);
  w.set_f32(p + "rope.freq_base_swa", s.rope_base_swa);
  w.set_f32(p + "attention.layer_norm_rms_epsilon", s.norm_eps);
  if (s.n_experts > 0) {
    u32("expert_count", s.n_experts);
    u32("expert_used_count", s.n_experts_active);
  }
  u32("attention.key_length", s.head_dim);
  u32("attention.value_length", s.head_dim);
  w.set_f32(p + "final_logit_softcapping", s.final_softcap);
  u32("attention.sliding_window", s.sliding_window);
  u32("attention.shared_kv_layers", s.shared_kv_layers);
  u32("embedding_length_per_layer_input", s.per_layer_dim);
  std::vector<int64_t> pattern;
  for (int64_t l = 0; l < s.n_layers; ++l) pattern.push_back(is_full(s, l) ? 0 : 1);
  w.set_value(p + "attention.sliding_window_pattern", GgufValue::make_int_array(GgufValueType::kBool, pattern));
  u32("attention.key_length_swa", s.head_dim_swa);
  u32("attention.value_length_swa", s.head_dim_swa);
  if (s.n_experts > 0) u32("expert_feed_forward_length", s.expert_hidden_dim);
  u32("rope.dimension_count", s.head_dim);
  u32("rope.dimension_count_swa", s.head_dim_swa);
}

std::vector<PlannedTensor> plan_gemma4(const SynthSpec& s, const SynthTypePlan& tp, int64_t vocab) {
  const int64_t L = s.n_layers, n_pl = s.per_layer_dim, e = s.n_experts;
  const int64_t n_gqa = s.n_heads / s.n_kv_heads;  // llama.cpp's hparams.n_gqa() reads layer 0 (sliding)
  const float res_std = synth_residual_std(L);
  int64_t n_wv = 0;
  for (int64_t l = 0; l < L; ++l) n_wv += has_attn_v(s, l);
  SynthPlanBuilder b(s, tp);
  const SynthTensorPos top{};
  // Logits = token_embd . (rms(x) * output_norm): std 0.02 * sqrt(dim) * scale = 2.5.
  const float out_norm = 2.5f / (kSynthWeightStd * std::sqrt(static_cast<float>(s.dim)));
  const int64_t n_rot_pairs = s.head_dim / 2;
  b.f32("rope_freqs.weight", {n_rot_pairs}, SynthInit::kRopeFreqs,
        std::round(s.rope_partial * static_cast<float>(n_rot_pairs)));
  b.matrix(kTokenEmbdName, SynthMatrix::kTokenEmbdTied, top, {s.dim, vocab}, kSynthWeightStd, n_gqa);
  b.norm(kOutputNormName, s.dim, out_norm);
  if (n_pl > 0) {
    b.matrix("per_layer_token_embd.weight", SynthMatrix::kTokenEmbdTied, top, {L * n_pl, vocab}, 0.1f, n_gqa);
    b.f32("per_layer_model_proj.weight", {s.dim, L * n_pl}, SynthInit::kWeight);
    b.norm("per_layer_proj_norm.weight", n_pl);
  }
  int64_t wv_idx = 0, down_idx = 0;
  for (int64_t l = 0; l < L; ++l) {
    const std::string blk = "blk." + std::to_string(l) + ".";
    const int64_t hd = head_dim(s, l), kv = kv_heads(s, l), ff = ffn_dim(s, l);
    SynthTensorPos pos{l, L, wv_idx, n_wv, down_idx};
    b.norm(blk + "attn_norm.weight", s.dim);
    b.matrix(blk + "attn_q.weight", SynthMatrix::kAttnQ, pos, {s.dim, s.n_heads * hd}, kSynthWeightStd, n_gqa);
    b.norm(blk + "attn_q_norm.weight", hd, 0.4f);
    if (!kv_shared(s, l)) {
      b.matrix(blk + "attn_k.weight", SynthMatrix::kAttnK, pos, {s.dim, kv * hd}, kSynthWeightStd, n_gqa);
      b.norm(blk + "attn_k_norm.weight", hd, 0.4f);
      if (has_attn_v(s, l)) {
        b.matrix(blk + "attn_v.weight", SynthMatrix::kAttnV, pos, {s.dim, kv * hd}, kSynthWeightStd, n_gqa);
        ++wv_idx;
      }
    }
    b.matrix(blk + "attn_output.weight", SynthMatrix::kAttnOutput, pos, {s.n_heads * hd, s.dim}, res_std, n_gqa);
    b.norm(blk + "post_attention_norm.weight", s.dim);
    b.f32(blk + "layer_output_scale.weight", {1}, SynthInit::kUniform, 0.5f, 1.5f);
    b.norm(blk + "ffn_norm.weight", s.dim);
    b.matrix(blk + "ffn_gate.weight", SynthMatrix::kFfnGate, pos, {s.dim, ff}, kSynthWeightStd, n_gqa);
    b.matrix(blk + "ffn_up.weight", SynthMatrix::kFfnUp, pos, {s.dim, ff}, kSynthWeightStd, n_gqa);
    pos.down_idx = down_idx++;  // ffn_down sorts before ffn_down_exps
    b.matrix(blk + "ffn_down.weight", SynthMatrix::kFfnDown, pos, {ff, s.dim}, res_std, n_gqa);
    b.norm(blk + "post_ffw_norm.weight", s.dim);
    if (e > 0) {
      const int64_t fe = s.expert_hidden_dim;
      b.f32(blk + "ffn_gate_inp.weight", {s.dim, e}, SynthInit::kWeight, 1.0f, 0.0f, 1.0f);
      b.norm(blk + "ffn_gate_inp.scale", s.dim);
      b.norm(blk + "pre_ffw_norm_2.weight", s.dim);
      b.norm(blk + "post_ffw_norm_1.weight", s.dim);
      b.norm(blk + "post_ffw_norm_2.weight", s.dim);
      b.matrix(blk + "ffn_gate_up_exps.weight", SynthMatrix::kFfnGate, pos, {s.dim, 2 * fe, e}, kSynthWeightStd, n_gqa);
      pos.down_idx = down_idx++;
      b.matrix(blk + "ffn_down_exps.weight", SynthMatrix::kFfnDown, pos, {fe, s.dim, e}, res_std, n_gqa);
      b.f32(blk + "ffn_down_exps.scale", {e}, SynthInit::kUniform, 0.5f, 1.5f);
    }
    if (n_pl > 0) {
      b.matrix(blk + "inp_gate.weight", SynthMatrix::kOther, pos, {s.dim, n_pl}, kSynthWeightStd, n_gqa);
      b.matrix(blk + "proj.weight", SynthMatrix::kOther, pos, {n_pl, s.dim}, res_std, n_gqa);
      b.norm(blk + "post_norm.weight", s.dim);
    }
  }
  return b.take_sorted();
}

}  // namespace sniper
