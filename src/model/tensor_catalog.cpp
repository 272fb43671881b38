// SPDX-License-Identifier: MIT
#include "model/tensor_catalog.h"

#include <span>

#include "base/check.h"
#include "model/blocks/attention.h"
#include "model/blocks/delta_net.h"
#include "model/blocks/dense_ffn.h"
#include "model/blocks/moe_ffn.h"
#include "model/blocks/per_layer_embedding.h"
#include "model/layer_stack.h"
#include "model/mtp_head.h"
#include "model/tensor_names.h"
#include "model/transformer.h"

namespace sniper {

const char* tensor_role_name(TensorRole role) {
  switch (role) {
    case TensorRole::kAlways: return "always";
    case TensorRole::kEmbedding: return "embedding";
    case TensorRole::kExpert: return "expert";
    case TensorRole::kDenseFfn: return "dense-ffn";
    case TensorRole::kAttention: return "attention";
    case TensorRole::kUnread: return "unread";
  }
  return "?";
}

namespace {

void append_model_uses(const ModelConfig& c, std::span<const ModelTensorSpec> table, std::vector<TensorUse>& out) {
  for (const ModelTensorSpec& s : table) {
    if (s.used != nullptr && !s.used(c)) continue;
    TensorUse u;
    u.name = s.name;
    u.shape = s.shape(c);
    u.role = s.role;
    u.type = s.type;
    u.optional = s.optional;
    u.model_member = s.member;
    out.push_back(std::move(u));
  }
}

// The tables of the pieces layer lp runs.
void layer_tables(const ModelConfig& c, const LayerPlan& lp, std::vector<std::span<const LayerTensorSpec>>& tables) {
  tables.push_back(LayerStack::tensor_table());
  switch (lp.mixer) {
    case MixerKind::kAttention: tables.push_back(AttentionBlock::tensor_table()); break;
    case MixerKind::kDeltaNet: tables.push_back(DeltaNetBlock::tensor_table()); break;
  }
  switch (lp.ffn) {
    case FfnKind::kDense: tables.push_back(DenseFfn::tensor_table()); break;
    case FfnKind::kMoe:
      tables.push_back(MoeFfn::tensor_table());
      tables.push_back(DenseFfn::tensor_table());  // the ungated shared expert's MLP and the post norm
      break;
  }
  if (c.per_layer_dim > 0) tables.push_back(PerLayerEmbedding::layer_tensor_table());
  if (c.mtp_head) tables.push_back(MtpHead::tensor_table());
}

}  // namespace

void append_layer_tensor_uses(const ModelConfig& c, int64_t layer, int64_t block, std::vector<TensorUse>& out) {
  const LayerPlan& lp = c.layer(layer);
  std::vector<std::span<const LayerTensorSpec>> tables;
  layer_tables(c, lp, tables);
  for (std::span<const LayerTensorSpec> table : tables) {
    for (const LayerTensorSpec& s : table) {
      if (s.used != nullptr && !s.used(c, lp)) continue;
      TensorUse u;
      u.shape = s.shape(c, lp);
      u.role = s.role;
      u.type = s.type;
      u.optional = s.optional;
      u.block = block;
      u.layer = layer;
      u.part = s.part;
      u.layer_member = s.member;
      const std::string_view suffix = s.suffix;
      const size_t at = suffix.find("{E}");
      if (at == std::string_view::npos) {
        u.name = layer_tensor_name(block, suffix);
        out.push_back(std::move(u));
        continue;
      }
      for (int64_t e = 0; e < c.n_experts; ++e) {
        TensorUse ue = u;
        ue.expert = static_cast<int32_t>(e);
        ue.name = layer_tensor_name(
            block, std::string(suffix.substr(0, at)) + std::to_string(e) + std::string(suffix.substr(at + 3)));
        out.push_back(std::move(ue));
      }
    }
  }
}

std::vector<TensorUse> tensor_uses(const ModelConfig& c, int64_t first_file_layer) {
  std::vector<TensorUse> out;
  append_model_uses(c, Transformer::tensor_table(), out);
  if (c.per_layer_dim > 0) append_model_uses(c, PerLayerEmbedding::model_tensor_table(), out);
  for (int64_t l = 0; l < c.n_layers; ++l) append_layer_tensor_uses(c, l, l + first_file_layer, out);
  return out;
}

TensorCatalog::TensorCatalog(const ModelConfig& c) : uses_(tensor_uses(c)) {
  if (c.n_nextn_layers > 0) {
    auto mc = mtp_config(c);
    if (mc.ok()) {
      for (int64_t i = 0; i < c.n_nextn_layers; ++i) append_layer_tensor_uses(*mc, 0, c.n_layers + i, uses_);
    }
  }
  index_.reserve(uses_.size());
  for (size_t i = 0; i < uses_.size(); ++i) {
    const bool fresh = index_.emplace(uses_[i].name, i).second;
    CHECK(fresh, "two tensor table entries claim '%s' for one config", uses_[i].name.c_str());
  }
}

const TensorUse* TensorCatalog::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &uses_[it->second];
}

std::vector<std::string> TensorCatalog::unclaimed(const GgufFile& file) const {
  std::vector<std::string> out;
  for (const GgufTensorInfo& t : file.tensors()) {
    if (find(t.name) == nullptr) out.push_back(t.name);
  }
  return out;
}

}  // namespace sniper
