// SPDX-License-Identifier: MIT
#include "weights/tensor_roles.h"

#include <cctype>

namespace sniper {

bool is_packed_expert_name(std::string_view name) {
  for (std::string_view kind : {".ffn_gate.", ".ffn_up.", ".ffn_down."}) {
    const size_t at = name.find(kind);
    if (at == std::string_view::npos) continue;
    const size_t digit = at + kind.size();
    return digit < name.size() && std::isdigit(static_cast<unsigned char>(name[digit]));
  }
  return false;
}

TensorRole tensor_role(std::string_view name) {
  if (name == "token_embd.weight") return TensorRole::kEmbedding;
  if (name == kPerLayerTokenEmbdName) return TensorRole::kEmbedding;  // gemma4: read by rows when streamed
  // gemma4's per-expert down scales ([n_experts] f32) are small and read by every token.
  if (name.ends_with("_exps.scale")) return TensorRole::kAlways;
  if (name.find("_exps.") != std::string_view::npos || is_packed_expert_name(name)) return TensorRole::kExpert;
  // Shared experts (ffn_{gate,up,down}_shexp, ffn_gate_inp_shexp) run for every token: resident.
  if (name.find("_shexp.") != std::string_view::npos) return TensorRole::kAlways;
  // The delta-net's projections are its layer's mixer weights, like attention's: a dense hybrid
  // (qwen35 27B: a third of the file) streams them when even its FFN does not fit. Its small
  // tensors (conv, gates' a/dt/alpha/beta, norm) stay resident.
  for (std::string_view mixer : {".attn_qkv.", ".attn_gate.", ".ssm_out."}) {
    if (name.find(mixer) != std::string_view::npos) return TensorRole::kAttention;
  }
  if (name.find(".ssm_") != std::string_view::npos) return TensorRole::kAlways;
  for (std::string_view ffn : {".ffn_gate.", ".ffn_up.", ".ffn_down."}) {
    if (name.find(ffn) != std::string_view::npos) return TensorRole::kDenseFfn;
  }
  for (std::string_view attn : {".attn_q.", ".attn_k.", ".attn_v.", ".attn_output."}) {
    if (name.find(attn) != std::string_view::npos) return TensorRole::kAttention;
  }
  return TensorRole::kAlways;
}

int64_t tensor_layer(std::string_view name) {
  if (name.substr(0, 4) != "blk.") return -1;
  int64_t v = 0;
  size_t i = 4;
  if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
  for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i) v = v * 10 + (name[i] - '0');
  return v;
}

}  // namespace sniper
