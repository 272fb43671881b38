// SPDX-License-Identifier: MIT
// Tensors that describe themselves. Every piece of the model that reads weights declares a table
// of them: each block for its layer's tensors (AttentionBlock, DeltaNetBlock, DenseFfn, MoeFfn,
// PerLayerEmbedding), the layer step for its norms (LayerStack), the Transformer for the model-
// level tensors and the MTP head for its nextn tensors. An entry gives the name pattern, the
// expected shape as a function of the config and the layer plan, the byte role streaming lives
// by, the type constraint, whether the tensor may be absent, when the layer reads it and where it
// binds. model/tensor_catalog.h resolves the tables for a config into the model's tensor list,
// from which the binding (model/model_weights.cpp), the roles (engine/plan.cpp: what streams,
// what stays resident), the layer streamer's groups and `sniper inspect` are derived; a tensor
// in the file that no table claims is listed by inspect and warned about once at load.
// Tables are constexpr arrays in the declaring block's .cpp; see docs/model-layer.md.
#pragma once

#include <array>
#include <cstdint>

#include "model/config.h"

namespace sniper {

struct LayerWeights;
struct ModelWeights;
struct QTensor;

// ggml order: the fastest dimension first, trailing dimensions 1.
using TensorShape = std::array<int64_t, 4>;

// What a tensor's bytes are for, which decides where they live (engine/plan.h).
enum class TensorRole : uint8_t {
  kAlways,     // read for every token and small: norms, routers, biases, scales, shared experts, output head
  kEmbedding,  // a table read one row per token (token_embd, per_layer_token_embd): streamable by rows
  kExpert,     // a routed expert's matrices: streamed through the expert cache
  kDenseFfn,   // a dense FFN's matrices: streamed layer by layer when the model does not fit
  kAttention,  // a mixer's projections: streamed layer by layer when even the dense FFN does not fit
  kUnread,     // may be in the file but nothing reads it in this plan (a shared-KV layer's own K/V): not loaded
};
const char* tensor_role_name(TensorRole role);

enum class TensorType : uint8_t {
  kMatrix,  // any type the matmul kernels multiply (quant/quant.h is_supported_weight_type)
  kF32,     // f32 only: the math reads it as floats (norms, biases, scales)
};

// Which part of a routed expert a kExpert tensor holds (the expert cache's slot regions).
enum class ExpertPart : uint8_t { kNone, kGate, kUp, kGateUp, kDown };

// One tensor of a layer: named "blk.<file block>." + suffix. A suffix with "{E}" names one
// matrix per expert (a packed file, weights/pack_experts.h): "ffn_gate.{E}.weight".
struct LayerTensorSpec {
  const char* suffix;
  QTensor LayerWeights::*member;  // where binding puts it (null for per-expert matrices: LayerWeights::experts)
  TensorShape (*shape)(const ModelConfig& config, const LayerPlan& plan);
  TensorRole role;
  TensorType type;
  bool optional;                                                   // may be absent (the binding leaves it empty)
  bool (*used)(const ModelConfig& config, const LayerPlan& plan);  // whether the layer reads it; null: always
  ExpertPart part = ExpertPart::kNone;
};

// One model-level tensor, named `name`.
struct ModelTensorSpec {
  const char* name;
  QTensor ModelWeights::*member;
  TensorShape (*shape)(const ModelConfig& config);
  TensorRole role;
  TensorType type;
  bool optional;
  bool (*used)(const ModelConfig& config);  // null: always
};

// Shapes in table entries: [ne0, ne1, ne2].
constexpr TensorShape tensor_shape(int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1) { return {ne0, ne1, ne2, 1}; }

}  // namespace sniper
