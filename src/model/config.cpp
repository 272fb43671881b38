// SPDX-License-Identifier: MIT
// GGUF metadata -> ModelConfig. Keys are "<arch>.<name>" as llama.cpp writes them.
#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/ssm_conv.h"
#include "model/arch/arch.h"
#include "model/tensor_names.h"

namespace sniper {

Result<int64_t> int_in_range(const GgufFile& file, const std::string& key, int64_t lo, int64_t hi) {
  auto v = file.get_int(key);
  if (!v.ok()) return v.error();
  if (*v < lo || *v > hi) {
    return make_error("%s is %ld but must be in [%ld, %ld]", key.c_str(), static_cast<long>(*v), static_cast<long>(lo),
                      static_cast<long>(hi));
  }
  return *v;
}

namespace {

Result<int64_t> int_in_range_or(const GgufFile& file, const std::string& key, int64_t fallback, int64_t lo,
                                int64_t hi) {
  if (!file.has(key)) return fallback;
  return int_in_range(file, key, lo, hi);
}

// As int_in_range_or, but a per-layer array (gemma4's head_count_kv, feed_forward_length) gives
// its largest item (the architecture's finish() reads the items per layer).
Result<int64_t> int_or_array_max(const GgufFile& file, const std::string& key, int64_t fallback, int64_t lo,
                                 int64_t hi) {
  const GgufValue* v = file.find(key);
  if (v == nullptr || v->array_size() == 0 || v->is_integer()) return int_in_range_or(file, key, fallback, lo, hi);
  auto items = file.get_int_array(key);
  if (!items.ok()) return items.error();
  if ((*items)->empty()) return make_error("%s is an empty array", key.c_str());
  int64_t m = lo;
  for (int64_t x : **items) {
    if (x < lo || x > hi) {
      return make_error("%s has an item %ld but each must be in [%ld, %ld]", key.c_str(), static_cast<long>(x),
                        static_cast<long>(lo), static_cast<long>(hi));
    }
    m = std::max(m, x);
  }
  return m;
}

}  // namespace

const char* mixer_kind_name(MixerKind kind) {
  switch (kind) {
    case MixerKind::kAttention: return "attention";
    case MixerKind::kDeltaNet: return "delta-net";
  }
  return "?";
}

const char* ffn_kind_name(FfnKind kind) {
  switch (kind) {
    case FfnKind::kDense: return "dense";
    case FfnKind::kMoe: return "moe";
  }
  return "?";
}

Status finish_layer_plan(ModelConfig& c) {
  const std::string p = c.arch + ".";
  if (c.layers.empty()) {
    LayerPlan plan;
    plan.mixer = MixerKind::kAttention;
    plan.ffn = c.is_moe() ? FfnKind::kMoe : FfnKind::kDense;
    plan.n_heads = c.n_heads;
    plan.n_kv_heads = c.n_kv_heads;
    plan.head_dim = c.head_dim;
    plan.qkv_bias = c.qkv_bias;
    plan.qk_norm = c.qk_norm;
    c.layers.assign(static_cast<size_t>(c.n_layers), plan);
  }
  if (static_cast<int64_t>(c.layers.size()) != c.n_layers) {
    return make_error("the layer plan has %zu layers but %sblock_count is %ld", c.layers.size(), p.c_str(),
                      static_cast<long>(c.n_layers));
  }
  for (LayerPlan& lp : c.layers) {
    if (lp.ffn == FfnKind::kDense && lp.ffn_dim == 0) lp.ffn_dim = c.hidden_dim;
    if (lp.mixer != MixerKind::kAttention) continue;
    if (lp.rope_dims == 0) lp.rope_dims = c.rope_dims;
    if (lp.rope_base == 0.0f) lp.rope_base = c.rope_base;
    if (lp.attn_scale == 0.0f && lp.head_dim > 0) lp.attn_scale = 1.0f / std::sqrt(static_cast<float>(lp.head_dim));
  }
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LayerPlan& lp = c.layer(l);
    if (lp.ffn == FfnKind::kMoe && !c.is_moe()) {
      return make_error("layer %ld has routed experts but %sexpert_count is 0", static_cast<long>(l), p.c_str());
    }
    if ((lp.ffn == FfnKind::kDense || lp.shared_expert == SharedExpert::kUngated) && lp.ffn_dim <= 0) {
      return make_error("layer %ld has a dense FFN but %sfeed_forward_length is missing or 0", static_cast<long>(l),
                        p.c_str());
    }
    if (lp.shared_expert != SharedExpert::kNone && lp.ffn != FfnKind::kMoe) {
      return make_error("layer %ld has a shared expert but no routed experts", static_cast<long>(l));
    }
    if (lp.shared_expert == SharedExpert::kGated && c.shared_expert_hidden_dim <= 0) {
      return make_error(
          "layer %ld has a shared expert but %sexpert_shared_feed_forward_length is missing or 0 (or the "
          "layer has no routed experts)",
          static_cast<long>(l), p.c_str());
    }
    if (lp.mixer == MixerKind::kDeltaNet) {
      const DeltaNetConfig& d = c.delta_net;
      if (d.n_k_heads < 1 || d.n_v_heads < 1 || d.head_dim < 1 || d.n_v_heads % d.n_k_heads != 0) {
        return make_error(
            "layer %ld is a delta-net layer but %sssm.time_step_rank (%ld) must be a positive multiple of "
            "ssm.group_count (%ld) and ssm.state_size (%ld) positive",
            static_cast<long>(l), p.c_str(), static_cast<long>(d.n_v_heads), static_cast<long>(d.n_k_heads),
            static_cast<long>(d.head_dim));
      }
      if (d.conv_kernel != kSsmConvWidth) {
        return make_error("layer %ld: %sssm.conv_kernel is %ld but only %ld is supported", static_cast<long>(l),
                          p.c_str(), static_cast<long>(d.conv_kernel), static_cast<long>(kSsmConvWidth));
      }
      continue;
    }
    if (lp.mixer != MixerKind::kAttention) continue;
    if (lp.n_heads < 1 || lp.n_kv_heads < 1 || lp.head_dim < 1 || lp.n_heads % lp.n_kv_heads != 0) {
      return make_error(
          "layer %ld: %sattention.head_count %ld must be a positive multiple of attention.head_count_kv %ld "
          "(head_dim %ld)",
          static_cast<long>(l), p.c_str(), static_cast<long>(lp.n_heads), static_cast<long>(lp.n_kv_heads),
          static_cast<long>(lp.head_dim));
    }
    if (lp.rope_dims < 2 || lp.rope_dims > lp.head_dim || lp.rope_dims % 2 != 0) {
      return make_error("layer %ld: %srope.dimension_count %ld must be even and in [2, the layer's head_dim %ld]",
                        static_cast<long>(l), p.c_str(), static_cast<long>(lp.rope_dims),
                        static_cast<long>(lp.head_dim));
    }
    if (lp.sliding_window < 0) {
      return make_error("layer %ld: %sattention.sliding_window is %ld but must be >= 0", static_cast<long>(l),
                        p.c_str(), static_cast<long>(lp.sliding_window));
    }
    if (lp.kv_shared_with >= 0) {
      if (lp.kv_shared_with >= l || c.layer(lp.kv_shared_with).mixer != lp.mixer ||
          c.layer(lp.kv_shared_with).kv_shared_with >= 0) {
        return make_error(
            "layer %ld shares the KV of layer %ld, which must be an earlier attention layer with its own KV",
            static_cast<long>(l), static_cast<long>(lp.kv_shared_with));
      }
      const LayerPlan& src = c.layer(lp.kv_shared_with);
      if (src.n_kv_heads != lp.n_kv_heads || src.head_dim != lp.head_dim || src.sliding_window != lp.sliding_window) {
        return make_error("layer %ld shares the KV of layer %ld but their kv heads, head_dim or window differ",
                          static_cast<long>(l), static_cast<long>(lp.kv_shared_with));
      }
    }
  }
  return ok_status();
}

void widen_rings_for_chunks(ModelConfig& config, int64_t n_tok) {
  for (LayerPlan& lp : config.layers) {
    if (lp.sliding_window <= 0 || lp.mixer != MixerKind::kAttention) continue;
    lp.ring_slots = std::max(2 * lp.sliding_window, lp.sliding_window + n_tok - 1);
  }
}

std::vector<LayerStateSpec> layer_state_specs(const ModelConfig& c) {
  std::vector<LayerStateSpec> specs(c.layers.size());
  for (size_t l = 0; l < c.layers.size(); ++l) {
    const LayerPlan& lp = c.layers[l];
    LayerStateSpec& s = specs[l];
    switch (lp.mixer) {
      case MixerKind::kAttention:
        if (lp.kv_shared_with >= 0) {
          s.kind = LayerStateKind::kSharedKv;
          s.shared_with = lp.kv_shared_with;
        } else {
          s.kind = LayerStateKind::kKv;
        }
        s.n_kv_heads = lp.n_kv_heads;
        s.head_dim = lp.head_dim;
        // A sliding layer's ring also holds the chunk its shared-KV readers attend over.
        s.window = sliding_ring_slots(lp);
        break;
      case MixerKind::kDeltaNet:
        s.kind = LayerStateKind::kRecurrent;
        s.conv_floats = c.delta_net.conv_state_floats();
        s.recurrent_floats = c.delta_net.recurrent_state_floats();
        break;
    }
  }
  return specs;
}

Result<ModelConfig> load_model_config(const GgufFile& file) {
  ModelConfig c;
  auto arch = file.get_string("general.architecture");
  if (!arch.ok()) return arch.error();
  c.arch = *arch;
  const ArchSpec* spec = find_arch(c.arch);
  if (spec == nullptr) {
    std::string known;
    for (const ArchSpec* s : registered_archs()) known += std::string(known.empty() ? "" : ", ") + s->name;
    return make_error("general.architecture is '%s', which is not supported (supported: %s)", c.arch.c_str(),
                      known.c_str());
  }
  auto name = file.get_string_or("general.name", "");
  if (!name.ok()) return name.error();
  c.name = *name;
  const std::string p = c.arch + ".";
  constexpr int64_t kMaxDim = int64_t{1} << 20;

  SNIPER_ASSIGN_OR_RETURN(c.dim, int_in_range(file, p + "embedding_length", 1, kMaxDim));
  SNIPER_ASSIGN_OR_RETURN(c.n_layers, int_in_range(file, p + "block_count", 1, 4096));
  SNIPER_ASSIGN_OR_RETURN(c.n_heads, int_in_range(file, p + "attention.head_count", 1, 4096));
  SNIPER_ASSIGN_OR_RETURN(c.n_kv_heads, int_or_array_max(file, p + "attention.head_count_kv", c.n_heads, 1, c.n_heads));
  if (c.n_heads % c.n_kv_heads != 0) {
    return make_error("%sattention.head_count (%ld) must be a multiple of head_count_kv (%ld)", p.c_str(),
                      static_cast<long>(c.n_heads), static_cast<long>(c.n_kv_heads));
  }
  const int64_t default_head_dim = c.dim % c.n_heads == 0 ? c.dim / c.n_heads : 0;
  SNIPER_ASSIGN_OR_RETURN(c.head_dim, int_in_range_or(file, p + "attention.key_length", default_head_dim, 1, 4096));
  if (c.head_dim <= 0) {
    return make_error("%sattention.key_length is missing and embedding_length %ld is not a multiple of head_count %ld",
                      p.c_str(), static_cast<long>(c.dim), static_cast<long>(c.n_heads));
  }
  SNIPER_ASSIGN_OR_RETURN(int64_t value_length,
                          int_in_range_or(file, p + "attention.value_length", c.head_dim, 1, 4096));
  if (value_length != c.head_dim) {
    return make_error("%sattention.value_length is %ld but only value_length == key_length (%ld) is supported",
                      p.c_str(), static_cast<long>(value_length), static_cast<long>(c.head_dim));
  }
  SNIPER_ASSIGN_OR_RETURN(c.hidden_dim, int_or_array_max(file, p + "feed_forward_length", 0, 0, kMaxDim * 8));
  SNIPER_ASSIGN_OR_RETURN(c.n_ctx_train, int_in_range_or(file, p + "context_length", 4096, 1, int64_t{1} << 24));

  auto eps = file.get_float(p + "attention.layer_norm_rms_epsilon");
  if (!eps.ok()) return eps.error();
  if (!(*eps > 0.0 && *eps < 1.0)) {
    return make_error("%sattention.layer_norm_rms_epsilon is %g but must be in (0, 1)", p.c_str(), *eps);
  }
  c.norm_eps = static_cast<float>(*eps);
  auto base = file.get_float_or(p + "rope.freq_base", 10000.0);
  if (!base.ok()) return base.error();
  if (!(*base > 1.0 && std::isfinite(*base))) {
    return make_error("%srope.freq_base is %g but must be a finite number > 1", p.c_str(), *base);
  }
  c.rope_base = static_cast<float>(*base);
  SNIPER_ASSIGN_OR_RETURN(c.rope_dims, int_in_range_or(file, p + "rope.dimension_count", c.head_dim, 2, c.head_dim));
  if (c.rope_dims % 2 != 0) {
    return make_error("%srope.dimension_count is %ld but must be even", p.c_str(), static_cast<long>(c.rope_dims));
  }
  auto scaling = file.get_string_or(p + "rope.scaling.type", "none");
  if (!scaling.ok()) return scaling.error();
  if (*scaling == "linear") {
    auto factor = file.get_float(p + "rope.scaling.factor");
    if (!factor.ok()) return factor.error();
    if (!(*factor >= 1.0 && *factor <= 1024.0)) {
      return make_error("%srope.scaling.factor is %g but must be in [1, 1024]", p.c_str(), *factor);
    }
    c.rope_freq_scale = static_cast<float>(1.0 / *factor);
  } else if (*scaling != "none") {
    return make_error("%srope.scaling.type is '%s'; supported: none, linear", p.c_str(), scaling->c_str());
  }
  c.rope_style = spec->rope_style;
  c.qkv_bias = spec->qkv_bias;
  c.qk_norm = spec->qk_norm;

  SNIPER_ASSIGN_OR_RETURN(c.n_experts, int_in_range_or(file, p + "expert_count", 0, 0, 4096));
  if (c.n_experts > 0) {
    if (!spec->allow_moe) {
      return make_error("%sexpert_count is %ld but architecture '%s' has no experts", p.c_str(),
                        static_cast<long>(c.n_experts), c.arch.c_str());
    }
    SNIPER_ASSIGN_OR_RETURN(c.n_experts_active, int_in_range(file, p + "expert_used_count", 1, c.n_experts));
    c.expert_hidden_dim = c.hidden_dim;
  } else if (spec->requires_moe) {
    return make_error("%sexpert_count is missing or 0 but architecture '%s' requires experts", p.c_str(),
                      c.arch.c_str());
  }
  if (spec->finish != nullptr) SNIPER_TRY(spec->finish(file, c));
  if (c.n_experts > 0 && c.expert_hidden_dim <= 0) {
    return make_error("%sfeed_forward_length must be > 0 for an MoE model", p.c_str());
  }
  if (c.n_experts == 0 && c.hidden_dim <= 0) {
    return make_error("%sfeed_forward_length is missing or 0", p.c_str());
  }
  SNIPER_TRY(finish_layer_plan(c));
  // The tensor forms the file chose where the tables allow two (model/tensor_table.h): gate and
  // up fused into one tensor, experts packed one tensor per matrix (sniper pack).
  auto packed = file.get_bool_or("sniper.packed_experts", false);
  if (!packed.ok()) return packed.error();
  c.packed_experts = *packed && c.is_moe();
  for (int64_t l = 0; l < c.n_layers; ++l) {
    LayerPlan& lp = c.layers[static_cast<size_t>(l)];
    lp.ffn_fused_gate_up = file.find_tensor(layer_tensor_name(l, "ffn_gate_up.weight")) != nullptr;
    if (lp.ffn == FfnKind::kMoe) {
      lp.expert_fused_gate_up = file.find_tensor(layer_tensor_name(l, "ffn_gate_up_exps.weight")) != nullptr;
    }
  }

  // Vocabulary size comes from the embedding table (validated when weights bind).
  const GgufTensorInfo* embd = file.find_tensor("token_embd.weight");
  if (embd == nullptr) return make_error("tensor 'token_embd.weight' is missing");
  if (embd->ne[0] != c.dim) {
    return make_error("tensor 'token_embd.weight' has row length %ld but embedding_length is %ld",
                      static_cast<long>(embd->ne[0]), static_cast<long>(c.dim));
  }
  c.vocab_size = embd->ne[1];
  c.tied_embeddings = file.find_tensor("output.weight") == nullptr;
  return c;
}

}  // namespace sniper
