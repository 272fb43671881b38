// SPDX-License-Identifier: MIT
// Binding of named tensors to the ModelWeights struct, with shape and type validation.
#include "model/model_weights.h"

#include <string>

#include "base/check.h"
#include "model/tensor_names.h"
#include "quant/quant.h"

namespace sniper {

namespace {

std::string shape_string(const std::array<int64_t, 4>& ne) {
  std::string s = "[";
  int n = 4;
  while (n > 1 && ne[static_cast<size_t>(n - 1)] == 1) --n;
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(ne[static_cast<size_t>(i)]);
  return s + "]";
}

class Binder {
 public:
  explicit Binder(const WeightStore& store) : store_(store) {}

  // Binds `name` expecting shape `ne` (trailing 1s omitted). f32_only: the math needs f32.
  Result<QTensor> get(const std::string& name, std::array<int64_t, 4> ne, bool f32_only) const {
    const QTensor* t = store_.find_tensor(name);
    if (t == nullptr) return make_error("tensor '%s' is missing", name.c_str());
    return check(name, *t, ne, f32_only);
  }

  Result<QTensor> find(const std::string& name, std::array<int64_t, 4> ne, bool f32_only) const {
    const QTensor* t = store_.find_tensor(name);
    if (t == nullptr) return QTensor{};
    return check(name, *t, ne, f32_only);
  }

 private:
  static Result<QTensor> check(const std::string& name, const QTensor& t, std::array<int64_t, 4> ne, bool f32_only) {
    if (t.ne != ne) {
      return make_error("tensor '%s' has shape %s but the model config implies %s", name.c_str(),
                        shape_string(t.ne).c_str(), shape_string(ne).c_str());
    }
    if (f32_only && t.type != GgmlType::kF32) {
      return make_error("tensor '%s' has type %s but must be f32", name.c_str(), get_type_info(t.type).name);
    }
    if (!is_supported_weight_type(t.type)) {
      return make_error("tensor '%s' has type %s, which this engine cannot multiply", name.c_str(),
                        get_type_info(t.type).name);
    }
    return t;
  }
  const WeightStore& store_;
};

std::string blk(int64_t l, const char* suffix) { return "blk." + std::to_string(l) + "." + suffix; }

// A gemma4 layer (model/arch/gemma4.cpp): per-layer head shape and FFN width, K/V only on layers
// with their own KV (attn_v optional: V = K), the post norms, the experts' fused gate_up and
// scales, the per-layer embedding branch.
Status bind_gemma4_layer(const ModelConfig& c, const Binder& b, int64_t l, LayerWeights& lw) {
  const LayerPlan& lp = c.layer(l);
  const int64_t hd = lp.head_dim, q_dim = lp.q_dim(), kv_dim = lp.kv_dim(), dim = c.dim;
  SNIPER_ASSIGN_OR_RETURN(lw.attn_norm, b.get(blk(l, "attn_norm.weight"), {dim, 1, 1, 1}, true));
  SNIPER_ASSIGN_OR_RETURN(lw.wq, b.get(blk(l, "attn_q.weight"), {dim, q_dim, 1, 1}, false));
  SNIPER_ASSIGN_OR_RETURN(lw.wo, b.get(blk(l, "attn_output.weight"), {q_dim, dim, 1, 1}, false));
  SNIPER_ASSIGN_OR_RETURN(lw.q_norm, b.get(blk(l, "attn_q_norm.weight"), {hd, 1, 1, 1}, true));
  if (lp.kv_shared_with < 0) {
    SNIPER_ASSIGN_OR_RETURN(lw.wk, b.get(blk(l, "attn_k.weight"), {dim, kv_dim, 1, 1}, false));
    SNIPER_ASSIGN_OR_RETURN(lw.wv, b.find(blk(l, "attn_v.weight"), {dim, kv_dim, 1, 1}, false));
    SNIPER_ASSIGN_OR_RETURN(lw.k_norm, b.get(blk(l, "attn_k_norm.weight"), {hd, 1, 1, 1}, true));
  }
  SNIPER_ASSIGN_OR_RETURN(lw.post_attn_norm, b.get(blk(l, "post_attention_norm.weight"), {dim, 1, 1, 1}, true));
  SNIPER_ASSIGN_OR_RETURN(lw.out_scale, b.find(blk(l, "layer_output_scale.weight"), {1, 1, 1, 1}, true));
  const int64_t ff = lp.ffn_dim;
  SNIPER_ASSIGN_OR_RETURN(lw.ffn_norm, b.get(blk(l, "ffn_norm.weight"), {dim, 1, 1, 1}, true));
  SNIPER_ASSIGN_OR_RETURN(lw.ffn_gate, b.get(blk(l, "ffn_gate.weight"), {dim, ff, 1, 1}, false));
  SNIPER_ASSIGN_OR_RETURN(lw.ffn_up, b.get(blk(l, "ffn_up.weight"), {dim, ff, 1, 1}, false));
  SNIPER_ASSIGN_OR_RETURN(lw.ffn_down, b.get(blk(l, "ffn_down.weight"), {ff, dim, 1, 1}, false));
  SNIPER_ASSIGN_OR_RETURN(lw.post_ffw_norm, b.get(blk(l, "post_ffw_norm.weight"), {dim, 1, 1, 1}, true));
  if (lp.ffn == FfnKind::kMoe) {
    const int64_t eff = c.expert_hidden_dim, ne = c.n_experts;
    SNIPER_ASSIGN_OR_RETURN(lw.router, b.get(blk(l, "ffn_gate_inp.weight"), {dim, ne, 1, 1}, false));
    SNIPER_ASSIGN_OR_RETURN(lw.router_scale, b.get(blk(l, "ffn_gate_inp.scale"), {dim, 1, 1, 1}, true));
    SNIPER_ASSIGN_OR_RETURN(lw.pre_ffw_norm_2, b.get(blk(l, "pre_ffw_norm_2.weight"), {dim, 1, 1, 1}, true));
    SNIPER_ASSIGN_OR_RETURN(lw.post_ffw_norm_1, b.get(blk(l, "post_ffw_norm_1.weight"), {dim, 1, 1, 1}, true));
    SNIPER_ASSIGN_OR_RETURN(lw.post_ffw_norm_2, b.get(blk(l, "post_ffw_norm_2.weight"), {dim, 1, 1, 1}, true));
    SNIPER_ASSIGN_OR_RETURN(lw.gate_up_exps, b.get(blk(l, "ffn_gate_up_exps.weight"), {dim, 2 * eff, ne, 1}, false));
    SNIPER_ASSIGN_OR_RETURN(lw.down_exps, b.get(blk(l, "ffn_down_exps.weight"), {eff, dim, ne, 1}, false));
    SNIPER_ASSIGN_OR_RETURN(lw.down_exps_scale, b.get(blk(l, "ffn_down_exps.scale"), {ne, 1, 1, 1}, true));
  }
  if (c.per_layer_dim > 0) {
    SNIPER_ASSIGN_OR_RETURN(lw.inp_gate, b.get(blk(l, "inp_gate.weight"), {dim, c.per_layer_dim, 1, 1}, false));
    SNIPER_ASSIGN_OR_RETURN(lw.proj, b.get(blk(l, "proj.weight"), {c.per_layer_dim, dim, 1, 1}, false));
    SNIPER_ASSIGN_OR_RETURN(lw.post_norm, b.get(blk(l, "post_norm.weight"), {dim, 1, 1, 1}, true));
  }
  return ok_status();
}

}  // namespace

Result<ModelWeights> bind_model_weights(const ModelConfig& c, const WeightStore& store, int64_t first_file_layer) {
  Binder b(store);
  ModelWeights w;
  SNIPER_ASSIGN_OR_RETURN(w.token_embd, b.get(kTokenEmbdName, {c.dim, c.vocab_size, 1, 1}, false));
  SNIPER_ASSIGN_OR_RETURN(w.output_norm, b.get(kOutputNormName, {c.dim, 1, 1, 1}, true));
  if (c.tied_embeddings) {
    w.output = w.token_embd;
  } else {
    SNIPER_ASSIGN_OR_RETURN(w.output, b.get(kOutputName, {c.dim, c.vocab_size, 1, 1}, false));
  }
  SNIPER_ASSIGN_OR_RETURN(w.rope_freqs, b.find(kRopeFreqsName, {c.rope_dims / 2, 1, 1, 1}, true));
  if (c.per_layer_dim > 0) {
    const int64_t n = c.n_layers * c.per_layer_dim;
    SNIPER_ASSIGN_OR_RETURN(w.per_layer_token_embd,
                            b.get("per_layer_token_embd.weight", {n, c.vocab_size, 1, 1}, false));
    SNIPER_ASSIGN_OR_RETURN(w.per_layer_model_proj, b.get("per_layer_model_proj.weight", {c.dim, n, 1, 1}, false));
    SNIPER_ASSIGN_OR_RETURN(w.per_layer_proj_norm,
                            b.get("per_layer_proj_norm.weight", {c.per_layer_dim, 1, 1, 1}, true));
  }
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    const LayerPlan& lp = c.layer(l);
    if (lp.mixer == MixerKind::kAttention && lp.attn_post_norm) {
      CHECK(first_file_layer == 0, "gemma4 layers are bound from their own block numbers");
      SNIPER_TRY(bind_gemma4_layer(c, b, l, lw));
      continue;
    }
    const int64_t f = l + first_file_layer;  // the block's number in the file
    auto name = [f](LayerTensor k) { return layer_tensor_name(f, k); };
    SNIPER_ASSIGN_OR_RETURN(lw.attn_norm, b.get(name(LayerTensor::kAttnNorm), {c.dim, 1, 1, 1}, true));
    if (lp.mixer == MixerKind::kAttention) {
      const int64_t q_dim = lp.q_dim(), kv_dim = lp.kv_dim(), hd = lp.head_dim;
      const int64_t q_rows = lp.attn_output_gate ? 2 * q_dim : q_dim;
      SNIPER_ASSIGN_OR_RETURN(lw.wq, b.get(name(LayerTensor::kAttnQ), {c.dim, q_rows, 1, 1}, false));
      SNIPER_ASSIGN_OR_RETURN(lw.wk, b.get(name(LayerTensor::kAttnK), {c.dim, kv_dim, 1, 1}, false));
      SNIPER_ASSIGN_OR_RETURN(lw.wv, b.get(name(LayerTensor::kAttnV), {c.dim, kv_dim, 1, 1}, false));
      SNIPER_ASSIGN_OR_RETURN(lw.wo, b.get(name(LayerTensor::kAttnOutput), {q_dim, c.dim, 1, 1}, false));
      if (c.qkv_bias) {
        SNIPER_ASSIGN_OR_RETURN(lw.bq, b.get(name(LayerTensor::kAttnQBias), {q_dim, 1, 1, 1}, true));
        SNIPER_ASSIGN_OR_RETURN(lw.bk, b.get(name(LayerTensor::kAttnKBias), {kv_dim, 1, 1, 1}, true));
        SNIPER_ASSIGN_OR_RETURN(lw.bv, b.get(name(LayerTensor::kAttnVBias), {kv_dim, 1, 1, 1}, true));
      }
      if (c.qk_norm) {
        SNIPER_ASSIGN_OR_RETURN(lw.q_norm, b.get(name(LayerTensor::kAttnQNorm), {hd, 1, 1, 1}, true));
        SNIPER_ASSIGN_OR_RETURN(lw.k_norm, b.get(name(LayerTensor::kAttnKNorm), {hd, 1, 1, 1}, true));
      }
    } else {
      const DeltaNetConfig& d = c.delta_net;
      const int64_t nv = d.n_v_heads;
      SNIPER_ASSIGN_OR_RETURN(lw.ssm_qkv, b.get(name(LayerTensor::kAttnQkv), {c.dim, d.conv_channels(), 1, 1}, false));
      SNIPER_ASSIGN_OR_RETURN(lw.ssm_gate, b.get(name(LayerTensor::kAttnGate), {c.dim, d.v_dim(), 1, 1}, false));
      SNIPER_ASSIGN_OR_RETURN(lw.ssm_conv1d,
                              b.get(name(LayerTensor::kSsmConv1d), {d.conv_kernel, d.conv_channels(), 1, 1}, true));
      SNIPER_ASSIGN_OR_RETURN(lw.ssm_dt_bias, b.get(name(LayerTensor::kSsmDtBias), {nv, 1, 1, 1}, true));
      SNIPER_ASSIGN_OR_RETURN(lw.ssm_a, b.get(name(LayerTensor::kSsmA), {nv, 1, 1, 1}, true));
      if (d.fused_ba) {
        SNIPER_ASSIGN_OR_RETURN(lw.ssm_ba, b.get(name(LayerTensor::kSsmBa), {c.dim, 2 * nv, 1, 1}, false));
      } else {
        SNIPER_ASSIGN_OR_RETURN(lw.ssm_beta, b.get(name(LayerTensor::kSsmBeta), {c.dim, nv, 1, 1}, false));
        SNIPER_ASSIGN_OR_RETURN(lw.ssm_alpha, b.get(name(LayerTensor::kSsmAlpha), {c.dim, nv, 1, 1}, false));
      }
      SNIPER_ASSIGN_OR_RETURN(lw.ssm_norm, b.get(name(LayerTensor::kSsmNorm), {d.head_dim, 1, 1, 1}, true));
      SNIPER_ASSIGN_OR_RETURN(lw.ssm_out, b.get(name(LayerTensor::kSsmOut), {d.v_dim(), c.dim, 1, 1}, false));
    }
    SNIPER_ASSIGN_OR_RETURN(lw.ffn_norm, b.get(name(c.ffn_norm_tensor), {c.dim, 1, 1, 1}, true));
    if (lp.ffn == FfnKind::kMoe) {
      const int64_t ff = c.expert_hidden_dim, ne = c.n_experts;
      SNIPER_ASSIGN_OR_RETURN(lw.router, b.get(name(LayerTensor::kFfnGateInp), {c.dim, ne, 1, 1}, false));
      if (lp.shared_expert == SharedExpert::kGated) {
        const int64_t sff = c.shared_expert_hidden_dim;
        SNIPER_ASSIGN_OR_RETURN(lw.shexp_gate_inp, b.get(name(LayerTensor::kFfnGateInpShexp), {c.dim, 1, 1, 1}, true));
        SNIPER_ASSIGN_OR_RETURN(lw.shexp_gate, b.get(name(LayerTensor::kFfnGateShexp), {c.dim, sff, 1, 1}, false));
        SNIPER_ASSIGN_OR_RETURN(lw.shexp_up, b.get(name(LayerTensor::kFfnUpShexp), {c.dim, sff, 1, 1}, false));
        SNIPER_ASSIGN_OR_RETURN(lw.shexp_down, b.get(name(LayerTensor::kFfnDownShexp), {sff, c.dim, 1, 1}, false));
      }
      if (store.find_tensor(name(LayerTensor::kFfnGateExps)) == nullptr &&
          store.find_tensor("blk." + std::to_string(f) + ".ffn_gate.0.weight") != nullptr) {
        // A packed file: one tensor per expert matrix, bound by bind_packed_experts().
        continue;
      }
      SNIPER_ASSIGN_OR_RETURN(lw.gate_exps, b.get(name(LayerTensor::kFfnGateExps), {c.dim, ff, ne, 1}, false));
      SNIPER_ASSIGN_OR_RETURN(lw.up_exps, b.get(name(LayerTensor::kFfnUpExps), {c.dim, ff, ne, 1}, false));
      SNIPER_ASSIGN_OR_RETURN(lw.down_exps, b.get(name(LayerTensor::kFfnDownExps), {ff, c.dim, ne, 1}, false));
    } else {
      const int64_t ff = lp.ffn_dim;
      SNIPER_ASSIGN_OR_RETURN(lw.ffn_gate, b.get(name(LayerTensor::kFfnGate), {c.dim, ff, 1, 1}, false));
      SNIPER_ASSIGN_OR_RETURN(lw.ffn_up, b.get(name(LayerTensor::kFfnUp), {c.dim, ff, 1, 1}, false));
      SNIPER_ASSIGN_OR_RETURN(lw.ffn_down, b.get(name(LayerTensor::kFfnDown), {ff, c.dim, 1, 1}, false));
    }
  }
  return w;
}

std::vector<std::vector<ExpertView>> resident_expert_views(const ModelConfig& c, const ModelWeights& w) {
  std::vector<std::vector<ExpertView>> views(w.layers.size());
  const int64_t ff = c.expert_hidden_dim;
  for (size_t l = 0; l < w.layers.size(); ++l) {
    if (c.layers[l].ffn != FfnKind::kMoe) continue;
    const LayerWeights& lw = w.layers[l];
    const bool fused = c.layers[l].expert_fused_gate_up;
    CHECK((fused ? lw.gate_up_exps.data : lw.gate_exps.data) != nullptr && lw.down_exps.data != nullptr,
          "layer %zu: experts are not resident and no expert source was given", l);
    for (int64_t e = 0; e < c.n_experts; ++e) {
      if (fused) {
        const QTensor gu = lw.gate_up_exps.matrix(e);
        ExpertView v{gu, gu, lw.down_exps.matrix(e)};
        v.gate.ne[1] = v.up.ne[1] = ff;
        v.up.data = gu.data + gu.row_bytes * static_cast<size_t>(ff);
        views[l].push_back(v);
      } else {
        views[l].push_back({lw.gate_exps.matrix(e), lw.up_exps.matrix(e), lw.down_exps.matrix(e)});
      }
    }
  }
  return views;
}

Result<std::vector<std::vector<ExpertView>>> bind_expert_views(const ModelConfig& c, const WeightStore& store) {
  Binder b(store);
  std::vector<std::vector<ExpertView>> views(static_cast<size_t>(c.n_layers));
  const int64_t ff = c.expert_hidden_dim;
  static const char* kSplit[3] = {"ffn_gate", "ffn_up", "ffn_down"};
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (c.layer(l).ffn != FfnKind::kMoe) continue;
    if (const QTensor* gu = store.find_tensor(blk(l, "ffn_gate_up_exps.weight")); gu != nullptr) {
      // gemma4: gate and up are the two halves of each expert's fused matrix.
      const QTensor* d = store.find_tensor(layer_tensor_name(l, LayerTensor::kFfnDownExps));
      if (d == nullptr) return make_error("layer %ld: ffn_down_exps is missing", static_cast<long>(l));
      for (int64_t e = 0; e < c.n_experts; ++e) {
        const QTensor m = gu->matrix(e);
        ExpertView v{m, m, d->matrix(e)};
        v.gate.ne[1] = v.up.ne[1] = ff;
        v.up.data = m.data + m.row_bytes * static_cast<size_t>(ff);
        views[static_cast<size_t>(l)].push_back(v);
      }
      continue;
    }
    const std::string merged = layer_tensor_name(l, LayerTensor::kFfnGateExps);
    if (const QTensor* g = store.find_tensor(merged); g != nullptr) {
      const QTensor* u = store.find_tensor(layer_tensor_name(l, LayerTensor::kFfnUpExps));
      const QTensor* d = store.find_tensor(layer_tensor_name(l, LayerTensor::kFfnDownExps));
      if (u == nullptr || d == nullptr)
        return make_error("layer %ld: ffn_up_exps or ffn_down_exps is missing", static_cast<long>(l));
      for (int64_t e = 0; e < c.n_experts; ++e)
        views[static_cast<size_t>(l)].push_back({g->matrix(e), u->matrix(e), d->matrix(e)});
      continue;
    }
    for (int64_t e = 0; e < c.n_experts; ++e) {
      ExpertView v;
      QTensor* parts[3] = {&v.gate, &v.up, &v.down};
      for (int p = 0; p < 3; ++p) {
        const std::string n = "blk." + std::to_string(l) + "." + kSplit[p] + "." + std::to_string(e) + ".weight";
        const std::array<int64_t, 4> shape =
            p < 2 ? std::array<int64_t, 4>{c.dim, ff, 1, 1} : std::array<int64_t, 4>{ff, c.dim, 1, 1};
        SNIPER_ASSIGN_OR_RETURN(*parts[p], b.get(n, shape, false));
      }
      views[static_cast<size_t>(l)].push_back(v);
    }
  }
  return views;
}

}  // namespace sniper
