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
    case LayerTensor::kPostAttnNorm: return "post_attention_norm.weight";
    case LayerTensor::kAttnQkv: return "attn_qkv.weight";
    case LayerTensor::kAttnGate: return "attn_gate.weight";
    case LayerTensor::kSsmConv1d: return "ssm_conv1d.weight";
    case LayerTensor::kSsmDtBias: return "ssm_dt.bias";
    case LayerTensor::kSsmA: return "ssm_a";
    case LayerTensor::kSsmBeta: return "ssm_beta.weight";
    case LayerTensor::kSsmAlpha: return "ssm_alpha.weight";
    case LayerTensor::kSsmBa: return "ssm_ba.weight";
    case LayerTensor::kSsmNorm: return "ssm_norm.weight";
    case LayerTensor::kSsmOut: return "ssm_out.weight";
    case LayerTensor::kFfnGateInpShexp: return "ffn_gate_inp_shexp.weight";
    case LayerTensor::kFfnGateShexp: return "ffn_gate_shexp.weight";
    case LayerTensor::kFfnUpShexp: return "ffn_up_shexp.weight";
    case LayerTensor::kFfnDownShexp: return "ffn_down_shexp.weight";
  }
  return "?";
}
}  // namespace

std::string layer_tensor_name(int64_t layer_idx, LayerTensor kind) {
  return "blk." + std::to_string(layer_idx) + "." + suffix(kind);
}

}  // namespace sniper
