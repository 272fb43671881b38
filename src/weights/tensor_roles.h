// SPDX-License-Identifier: MIT
// What a tensor is for, from its GGUF name alone: the byte roles streaming lives by
// (always-needed, embeddings, routed experts, dense FFN, attention projections).
#pragma once

#include <cstdint>
#include <string_view>

namespace sniper {

// gemma4 E-models' per-layer embedding table ([n_layers * per_layer_dim] x vocab rows).
inline constexpr const char* kPerLayerTokenEmbdName = "per_layer_token_embd.weight";

enum class TensorRole {
  kAlways,     // norms, routers, output head, biases, rope factors, shared experts (*_shexp),
               // the delta-net's small tensors (ssm_conv1d, ssm_a, ssm_dt, ssm_alpha/beta/ba, ssm_norm)
  kEmbedding,  // token_embd: one row per token
  kExpert,     // routed experts: ffn_*_exps, or a packed file's blk.L.ffn_*.E.weight
  kDenseFfn,   // blk.L.ffn_{gate,up,down}.weight
  kAttention,  // a layer's mixer projections: blk.L.attn_{q,k,v,output}.weight, and the delta-net's
               // blk.L.attn_qkv / attn_gate / ssm_out.weight
};

TensorRole tensor_role(std::string_view name);

// True for one expert's matrix in a packed file: "blk.L.ffn_gate.E.weight".
bool is_packed_expert_name(std::string_view name);

// L of "blk.L.*", or -1.
int64_t tensor_layer(std::string_view name);

}  // namespace sniper
