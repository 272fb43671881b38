// SPDX-License-Identifier: MIT
#include "model/tensor_names.h"

namespace sniper {

namespace {
const char* suffix(LayerTensor kind) {
  switch (kind) {
    case LayerTensor::kAttnNorm: return "attn_norm.weight";
    case LayerTensor::kAttnQ: return "attn_q.weight";
    case LayerTensor::kAttnK: return "attn_k.weight";
    case LayerTensor::kAttnV: return "attn_v.weight";
    case LayerTensor::kAttnOutput: return "attn_output.weight";
    case LayerTensor::kAttnQBias: return "attn_q.bias";
    case LayerTensor::kAttnKBias: return "attn_k.bias";
    case LayerTensor::kAttnVBias: return "attn_v.bias";
    case LayerTensor::kAttnQNorm: return "attn_q_norm.weight";
    case LayerTensor::kAttnKNorm: return "attn_k_norm.weight";
    case LayerTensor::kFfnNorm: return "ffn_norm.weight";
    case LayerTensor::kFfnGate: return "ffn_gate.weight";
    case LayerTensor::kFfnUp: return "ffn_up.weight";
    case LayerTensor::kFfnDown: return "ffn_down.weight";
    case LayerTensor::kFfnGateInp: return "ffn_gate_inp.weight";
    case LayerTensor::kFfnGateExps: return "ffn_gate_exps.weight";
    case LayerTensor::kFfnUpExps: return "ffn_up_exps.weight";
    case LayerTensor::kFfnDownExps: return "ffn_down_exps.weight";
  }
  return "?";
}
}  // namespace

std::string layer_tensor_name(int64_t layer_idx, LayerTensor kind) {
  return "blk." + std::to_string(layer_idx) + "." + suffix(kind);
}

}  // namespace sniper
