// SPDX-License-Identifier: MIT
// Binding of the tensors the tables declare (model/tensor_catalog.h) to ModelWeights, with shape and
// type validation.
#include "model/model_weights.h"

#include <string>

#include "base/check.h"
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

// Where u binds in w (ModelWeights or const ModelWeights), or nullptr.
template <class Weights>
auto bound_slot(Weights& w, const TensorUse& u) -> decltype(&w.token_embd) {
  if (u.role == TensorRole::kUnread) return nullptr;
  if (u.model_member != nullptr) return &(w.*u.model_member);
  if (u.layer_member != nullptr) return &(w.layers[static_cast<size_t>(u.layer)].*u.layer_member);
  if (u.expert < 0 || static_cast<size_t>(u.layer) >= w.packed_experts.size()) return nullptr;
  auto& v = w.packed_experts[static_cast<size_t>(u.layer)][static_cast<size_t>(u.expert)];
  switch (u.part) {
    case ExpertPart::kGate: return &v.gate;
    case ExpertPart::kUp: return &v.up;
    case ExpertPart::kDown: return &v.down;
    case ExpertPart::kNone:
    case ExpertPart::kGateUp: break;
  }
  return nullptr;
}

}  // namespace

const QTensor* find_bound_tensor(const ModelWeights& w, const TensorUse& u) { return bound_slot(w, u); }

Result<ModelWeights> bind_model_weights(const ModelConfig& c, const WeightStore& store, int64_t first_file_layer) {
  Binder b(store);
  ModelWeights w;
  w.layers.resize(static_cast<size_t>(c.n_layers));
  if (c.packed_experts && c.is_moe()) {
    w.packed_experts.assign(static_cast<size_t>(c.n_layers), std::vector<ExpertView>(static_cast<size_t>(c.n_experts)));
  }
  for (const TensorUse& u : tensor_uses(c, first_file_layer)) {
    QTensor* slot = bound_slot(w, u);
    if (slot == nullptr) continue;  // read by nothing in this plan
    const bool f32_only = u.type == TensorType::kF32;
    if (u.optional) {
      SNIPER_ASSIGN_OR_RETURN(*slot, b.find(u.name, u.shape, f32_only));
    } else {
      SNIPER_ASSIGN_OR_RETURN(*slot, b.get(u.name, u.shape, f32_only));
    }
  }
  if (c.tied_embeddings) w.output = w.token_embd;
  return w;
}

Result<std::vector<std::vector<ExpertView>>> resident_expert_views(const ModelConfig& c, const ModelWeights& w) {
  std::vector<std::vector<ExpertView>> views(w.layers.size());
  const int64_t ff = c.expert_hidden_dim;
  for (size_t l = 0; l < w.layers.size(); ++l) {
    if (c.layers[l].ffn != FfnKind::kMoe) continue;
    if (!w.packed_experts.empty()) {
      for (const ExpertView& v : w.packed_experts[l]) {
        if (v.gate.data == nullptr || v.up.data == nullptr || v.down.data == nullptr) {
          return make_error("layer %zu: the experts are not resident", l);
        }
      }
      views[l] = w.packed_experts[l];
      continue;
    }
    const LayerWeights& lw = w.layers[l];
    const bool fused = c.layers[l].expert_fused_gate_up;
    if ((fused ? lw.gate_up_exps.data : lw.gate_exps.data) == nullptr || lw.down_exps.data == nullptr ||
        (!fused && lw.up_exps.data == nullptr)) {
      return make_error("layer %zu: the experts are not resident", l);
    }
    for (int64_t e = 0; e < c.n_experts; ++e) {
      if (fused) {
        // gate and up are the two halves of each expert's fused matrix.
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

}  // namespace sniper
