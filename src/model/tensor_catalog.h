// SPDX-License-Identifier: MIT
// The tensor tables (model/tensor_table.h) resolved for one config: every tensor the model's
// forward reads, with its name, expected shape, role, type rule and where it binds. A layer's
// tables are those of the pieces it runs: the layer step (LayerStack: its norms), its mixer
// (AttentionBlock or DeltaNetBlock), its FFN (DenseFfn; MoeFfn plus the dense MLP's, which its
// ungated shared expert and post norm read), the per-layer embedding branch when the model has
// one, and the nextn tensors when the config is an MTP head's. The model-level tables are the
// Transformer's (embeddings, output) and PerLayerEmbedding's.
// Everything that needs to know a tensor derives it from here: the binding
// (model/model_weights.cpp), the memory plan's roles (engine/plan.cpp), the layer streamer's
// groups and the fields it fills (engine/model.cpp, model/transformer.cpp), the packer's expert
// set and `sniper inspect`. Thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/reader.h"
#include "model/config.h"
#include "model/tensor_table.h"

namespace sniper {

// One tensor the model reads: a table entry resolved for the model or one layer (and, for a
// packed file's experts, one expert).
struct TensorUse {
  std::string name;
  TensorShape shape{};
  TensorRole role = TensorRole::kAlways;
  TensorType type = TensorType::kMatrix;
  bool optional = false;
  int64_t block = -1;   // the file's block number ("blk.<block>."); -1: a model-level tensor
  int64_t layer = -1;   // the layer of the config's plan it binds to; -1: model-level
  int32_t expert = -1;  // a packed file's per-expert matrix: its expert
  ExpertPart part = ExpertPart::kNone;
  QTensor LayerWeights::*layer_member = nullptr;  // where it binds (layer tensors)
  QTensor ModelWeights::*model_member = nullptr;  // where it binds (model-level tensors)
};

// The model-level tensors of `config`, then those of each layer l of its plan, named for the
// file's block l + first_file_layer.
std::vector<TensorUse> tensor_uses(const ModelConfig& config, int64_t first_file_layer = 0);

// The tensors of layer l of config's plan (named for file block `block`), appended to `out`.
void append_layer_tensor_uses(const ModelConfig& config, int64_t layer, int64_t block, std::vector<TensorUse>& out);

class TensorCatalog {
 public:
  // Every tensor a model file of `config` may hold: tensor_uses(config) and the MTP blocks after
  // the main stack (blocks n_layers .. n_layers + n_nextn_layers - 1, with the MTP head's tables;
  // none when the model has no full-attention layer to take their shape from).
  explicit TensorCatalog(const ModelConfig& config);
  TensorCatalog(const TensorCatalog&) = delete;  // index_ views the names of uses_
  TensorCatalog& operator=(const TensorCatalog&) = delete;
  TensorCatalog(TensorCatalog&&) = default;

  // The use of `name`, or nullptr when no table claims it.
  const TensorUse* find(std::string_view name) const;
  const std::vector<TensorUse>& uses() const { return uses_; }
  // The file's tensors that no table claims, in file order (nothing reads them; not loaded).
  std::vector<std::string> unclaimed(const GgufFile& file) const;

 private:
  std::vector<TensorUse> uses_;
  std::unordered_map<std::string_view, size_t> index_;  // keys view uses_[i].name
};

}  // namespace sniper
