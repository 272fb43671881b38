// SPDX-License-Identifier: MIT
// gemma4: Gemma 4 (26B-A4B MoE, 31B dense, E2B/E4B with per-layer embeddings and shared-KV
// layers). Maps the metadata to the layer plan of the shared blocks: attention with q/k norms,
// an unweighted v norm, V = K where attn_v is absent, scale 1, a post norm and per-layer rope;
// GELU FFNs with a post norm; MoE layers whose router reads the scaled residual, whose experts
// have their own input norm and per-expert scales, beside an ungated dense MLP, every part
// post-normed (model/blocks/attention.h, dense_ffn.h, moe_ffn.h, per_layer_embedding.h).
//   layer l sliding  <=> attention.sliding_window_pattern[l]: head_dim key_length_swa, rope
//                        rope.dimension_count_swa / rope.freq_base_swa, window sliding_window;
//   full layers:         head_dim key_length, rope rope.dimension_count / rope.freq_base with
//                        rope_freqs;
//   head_count_kv and feed_forward_length: one value, or one per layer;
//   attention.shared_kv_layers = s: layers l >= n_kv = block_count - s read the KV of layer
//                        n_kv - 2 (sliding) or n_kv - 1 (full), llama.cpp's rule;
//   embeddings * sqrt(embedding_length); final_logit_softcapping (optional); experts when
//   expert_count > 0 (expert_feed_forward_length).
#include <cmath>
#include <string>

#include "model/arch/arch.h"

namespace sniper {

namespace {

// A per-layer integer key: one value for every layer, or an array of block_count items.
Result<int64_t> layer_int(const GgufFile& file, const std::string& key, int64_t layer, int64_t n_layers, int64_t lo,
                          int64_t hi) {
  const GgufValue* v = file.find(key);
  if (v == nullptr) return make_error("%s is missing", key.c_str());
  int64_t x = 0;
  if (v->is_integer()) {
    SNIPER_ASSIGN_OR_RETURN(x, file.get_int(key));
  } else {
    auto items = file.get_int_array(key);
    if (!items.ok()) return items.error();
    if (static_cast<int64_t>((*items)->size()) != n_layers) {
      return make_error("%s has %zu items but block_count is %ld", key.c_str(), (*items)->size(),
                        static_cast<long>(n_layers));
    }
    x = (**items)[static_cast<size_t>(layer)];
  }
  if (x < lo || x > hi) {
    return make_error("%s is %ld for layer %ld but must be in [%ld, %ld]", key.c_str(), static_cast<long>(x),
                      static_cast<long>(layer), static_cast<long>(lo), static_cast<long>(hi));
  }
  return x;
}

Status finish_gemma4(const GgufFile& file, ModelConfig& c) {
  const std::string p = c.arch + ".";
  const int64_t L = c.n_layers;
  auto pattern = file.get_int_array(p + "attention.sliding_window_pattern");
  if (!pattern.ok()) return pattern.error();
  if (static_cast<int64_t>((*pattern)->size()) != L) {
    return make_error("%sattention.sliding_window_pattern has %zu items but block_count is %ld", p.c_str(),
                      (*pattern)->size(), static_cast<long>(L));
  }
  SNIPER_ASSIGN_OR_RETURN(const int64_t window,
                          int_in_range(file, p + "attention.sliding_window", 1, int64_t{1} << 24));
  SNIPER_ASSIGN_OR_RETURN(const int64_t hd_swa, int_in_range(file, p + "attention.key_length_swa", 1, 4096));
  SNIPER_ASSIGN_OR_RETURN(const int64_t vd_swa, int_in_range(file, p + "attention.value_length_swa", 1, 4096));
  if (vd_swa != hd_swa) {
    return make_error("%sattention.value_length_swa is %ld but must equal key_length_swa %ld", p.c_str(),
                      static_cast<long>(vd_swa), static_cast<long>(hd_swa));
  }
  auto rot_swa = file.get_int_or(p + "rope.dimension_count_swa", hd_swa);
  if (!rot_swa.ok()) return rot_swa.error();
  auto base_swa = file.get_float_or(p + "rope.freq_base_swa", c.rope_base);
  if (!base_swa.ok()) return base_swa.error();
  if (!(*base_swa > 1.0 && std::isfinite(*base_swa))) {
    return make_error("%srope.freq_base_swa is %g but must be a finite number > 1", p.c_str(), *base_swa);
  }
  SNIPER_ASSIGN_OR_RETURN(const int64_t n_shared, int_in_range(file, p + "attention.shared_kv_layers", 0, L - 1));
  SNIPER_ASSIGN_OR_RETURN(c.per_layer_dim, int_in_range(file, p + "embedding_length_per_layer_input", 0, 1 << 16));
  auto cap = file.get_float_or(p + "final_logit_softcapping", 0.0);
  if (!cap.ok()) return cap.error();
  if (!(*cap >= 0.0 && std::isfinite(*cap))) {
    return make_error("%sfinal_logit_softcapping is %g but must be a finite number >= 0", p.c_str(), *cap);
  }
  c.final_softcap = static_cast<float>(*cap);
  c.embd_scale = std::sqrt(static_cast<float>(c.dim));
  if (c.n_experts > 0) {
    SNIPER_ASSIGN_OR_RETURN(c.expert_hidden_dim, int_in_range(file, p + "expert_feed_forward_length", 1, 1 << 20));
  }

  const int64_t n_kv = L - n_shared;
  c.layers.assign(static_cast<size_t>(L), LayerPlan{});
  for (int64_t l = 0; l < L; ++l) {
    LayerPlan& lp = c.layers[static_cast<size_t>(l)];
    const bool sliding = (**pattern)[static_cast<size_t>(l)] != 0;
    lp.mixer = MixerKind::kAttention;
    lp.qk_norm = true;
    lp.v_norm = true;
    lp.v_optional = true;
    lp.attn_post_norm = true;
    lp.attn_scale = 1.0f;
    lp.ffn = c.n_experts > 0 ? FfnKind::kMoe : FfnKind::kDense;
    lp.ffn_act = Activation::kGelu;
    lp.ffn_post_norm = true;
    if (c.n_experts > 0) {  // the MLP beside the experts, each part post-normed
      lp.router_input = RouterInput::kScaledResidual;
      lp.expert_input_norm = true;
      lp.expert_scale = true;
      lp.shared_expert = SharedExpert::kUngated;
      lp.routed_post_norm = true;
      lp.shared_post_norm = true;
    }
    SNIPER_ASSIGN_OR_RETURN(lp.n_heads, layer_int(file, p + "attention.head_count", l, L, 1, 4096));
    SNIPER_ASSIGN_OR_RETURN(lp.n_kv_heads, layer_int(file, p + "attention.head_count_kv", l, L, 1, 4096));
    if (lp.n_heads % lp.n_kv_heads != 0) {
      return make_error("layer %ld: %sattention.head_count %ld is not a multiple of attention.head_count_kv %ld",
                        static_cast<long>(l), p.c_str(), static_cast<long>(lp.n_heads),
                        static_cast<long>(lp.n_kv_heads));
    }
    SNIPER_ASSIGN_OR_RETURN(lp.ffn_dim, layer_int(file, p + "feed_forward_length", l, L, 1, int64_t{1} << 23));
    lp.head_dim = sliding ? hd_swa : c.head_dim;
    lp.sliding_window = sliding ? window : 0;
    lp.rope_dims = sliding ? *rot_swa : c.rope_dims;
    if (lp.rope_dims < 2 || lp.rope_dims > lp.head_dim || lp.rope_dims % 2 != 0) {
      return make_error("layer %ld: %s is %ld but must be even and in [2, %ld]", static_cast<long>(l),
                        (p + (sliding ? "rope.dimension_count_swa" : "rope.dimension_count")).c_str(),
                        static_cast<long>(lp.rope_dims), static_cast<long>(lp.head_dim));
    }
    lp.rope_base = sliding ? static_cast<float>(*base_swa) : c.rope_base;
    lp.rope_freqs = !sliding;
    if (l >= n_kv) {
      lp.kv_shared_with = sliding ? n_kv - 2 : n_kv - 1;
      if (lp.kv_shared_with < 0) {
        return make_error("layer %ld: %sattention.shared_kv_layers %ld leaves no layer of its kind to share with",
                          static_cast<long>(l), p.c_str(), static_cast<long>(n_shared));
      }
    }
  }
  return ok_status();
}

}  // namespace

extern const ArchSpec kGemma4Arch = {
    // registered in registry.cpp
    .name = "gemma4",  .rope_style = RopeStyle::kNeox, .qkv_bias = false,       .qk_norm = true,
    .allow_moe = true, .requires_moe = false,          .finish = finish_gemma4,
};

}  // namespace sniper
