// SPDX-License-Identifier: MIT
// ModelWeights: the QTensor views a forward pass reads, bound by name from a WeightStore as the
// blocks' tensor tables declare them (model/tensor_table.h) and checked against the ModelConfig
// (shape, type supported, f32 where the math needs f32). A tensor the layer does not read, or an
// optional one the file lacks, has data == nullptr and row_bytes == 0; a streamed one has its
// shape and type but data == nullptr.
#pragma once

#include <vector>

#include "base/result.h"
#include "kernels/tensor.h"
#include "model/config.h"
#include "model/tensor_catalog.h"
#include "weights/expert_source.h"
#include "weights/weight_store.h"

namespace sniper {

struct LayerWeights {
  QTensor attn_norm;   // [dim] f32
  QTensor wq;          // [dim -> n_heads*head_dim] (x2 with attn_output_gate: per head [q | gate])
  QTensor wk;          // [dim -> n_kv_heads*head_dim]
  QTensor wv;          // [dim -> n_kv_heads*head_dim]
  QTensor wo;          // [n_heads*head_dim -> dim]
  QTensor bq, bk, bv;  // [q_dim], [kv_dim], [kv_dim] f32 (LayerPlan::qkv_bias)
  QTensor q_norm;      // [head_dim] f32 (LayerPlan::qk_norm)
  QTensor k_norm;      // [head_dim] f32 (LayerPlan::qk_norm)
  // Gated delta-net (MixerKind::kDeltaNet; nk/nv key/value heads of d, C = conv channels).
  QTensor ssm_qkv;         // attn_qkv [dim -> C = 2*nk*d + nv*d] (rows q | k | v)
  QTensor ssm_gate;        // attn_gate [dim -> nv*d] (z)
  QTensor ssm_conv1d;      // [conv_kernel] x C f32
  QTensor ssm_dt_bias;     // [nv] f32
  QTensor ssm_a;           // [nv] f32 (-exp(A_log))
  QTensor ssm_beta;        // [dim -> nv] (unless fused_ba)
  QTensor ssm_alpha;       // [dim -> nv] (unless fused_ba)
  QTensor ssm_ba;          // [dim -> 2*nv] per key head [b | a] (fused_ba)
  QTensor ssm_norm;        // [d] f32
  QTensor ssm_out;         // [nv*d -> dim]
  QTensor ffn_norm;        // [dim] f32 (ffn_norm, or post_attention_norm: ModelConfig::ffn_norm_post_attention)
  QTensor ffn_gate;        // dense MLP: [dim -> ffn_dim]
  QTensor ffn_up;          // dense MLP: [dim -> ffn_dim]
  QTensor ffn_down;        // dense MLP: [ffn_dim -> dim]
  QTensor ffn_gate_up;     // dense MLP, LayerPlan::ffn_fused_gate_up: [dim -> 2 * ffn_dim] (gate rows, then up rows)
  QTensor router;          // moe: ffn_gate_inp [dim -> n_experts]
  QTensor gate_exps;       // moe: [dim -> expert_hidden_dim] x n_experts
  QTensor up_exps;         // moe: [dim -> expert_hidden_dim] x n_experts
  QTensor down_exps;       // moe: [expert_hidden_dim -> dim] x n_experts
  QTensor shexp_gate_inp;  // shared expert: [dim] f32, its gate's logit = dot(this, x)
  QTensor shexp_gate;      // shared expert: [dim -> shared_expert_hidden_dim]
  QTensor shexp_up;        // shared expert: [dim -> shared_expert_hidden_dim]
  QTensor shexp_down;      // shared expert: [shared_expert_hidden_dim -> dim]
  // The post norms and MoE variants of the layer plan (gemma4 uses them all):
  QTensor post_attn_norm;   // [dim] f32 post_attention_norm (LayerPlan::attn_post_norm)
  QTensor post_ffw_norm;    // [dim] f32 the FFN output's norm (ffn_post_norm)
  QTensor post_ffw_norm_1;  // [dim] f32 MoE layers: the shared MLP's norm (shared_post_norm)
  QTensor pre_ffw_norm_2;   // [dim] f32 MoE layers: the experts' input norm (expert_input_norm)
  QTensor post_ffw_norm_2;  // [dim] f32 MoE layers: the routed sum's norm (routed_post_norm)
  QTensor router_scale;     // [dim] f32 ffn_gate_inp.scale (RouterInput::kScaledResidual)
  QTensor gate_up_exps;     // [dim -> 2 * expert_hidden_dim] x n_experts, gate rows then up (expert_fused_gate_up)
  QTensor down_exps_scale;  // [n_experts] f32 ffn_down_exps.scale (expert_scale)
  QTensor inp_gate;         // per-layer embeddings: [dim -> per_layer_dim]
  QTensor proj;             // per-layer embeddings: [per_layer_dim -> dim]
  QTensor post_norm;        // per-layer embeddings: [dim] f32
  QTensor out_scale;        // [1] f32 layer_output_scale (optional)
  // An MTP head's block (ModelConfig::mtp_head, model/mtp_head.h): blk.N.nextn.*.
  QTensor nextn_eh_proj;    // [2 dim -> dim]
  QTensor nextn_enorm;      // [dim] f32
  QTensor nextn_hnorm;      // [dim] f32
  QTensor nextn_embed;      // optional [dim] x vocab_size rows (else token_embd)
  QTensor nextn_head_norm;  // optional [dim] f32 (else output_norm)
  QTensor nextn_head;       // optional [dim -> vocab_size] (else output)
};

struct ModelWeights {
  QTensor token_embd;            // [dim] x vocab_size rows
  QTensor output_norm;           // [dim] f32
  QTensor output;                // [dim -> vocab_size] (token_embd when tied)
  QTensor rope_freqs;            // optional [rope_dims/2] f32 frequency factors
  QTensor per_layer_token_embd;  // per_layer_dim > 0: [n_layers * per_layer_dim] x vocab_size rows
  QTensor per_layer_model_proj;  // per_layer_dim > 0: [dim -> n_layers * per_layer_dim]
  QTensor per_layer_proj_norm;   // per_layer_dim > 0: [per_layer_dim] f32
  std::vector<LayerWeights> layers;
  // A packed file's experts (ModelConfig::packed_experts): [layer][expert] views of its
  // blk.L.ffn_{gate,up,down}.E.weight tensors (empty otherwise).
  std::vector<std::vector<ExpertView>> packed_experts;
};

// Binds and validates every tensor the config's tables declare (model/tensor_catalog.h
// tensor_uses). Errors name the tensor, the expected and the actual shape or type, or say that a
// required tensor is missing. Layer l of the config is the file's block l + first_file_layer
// (an MTP head's one-layer config binds the block after the main stack; model/mtp_head.h).
Result<ModelWeights> bind_model_weights(const ModelConfig& config, const WeightStore& store,
                                        int64_t first_file_layer = 0);

// Where use u binds in w: a model or layer member, or a packed expert's matrix; nullptr when
// w has no place for it (a kUnread tensor, or a packed expert of a file bound unpacked).
const QTensor* find_bound_tensor(const ModelWeights& w, const TensorUse& u);

// The bound experts as views[layer][expert]: slices of the 3-D ffn_*_exps tensors (gate and up:
// the halves of ffn_gate_up_exps[e] where the layer fuses them), or a packed file's per-expert
// tensors. Errors: a layer's experts are not resident.
Result<std::vector<std::vector<ExpertView>>> resident_expert_views(const ModelConfig& config,
                                                                   const ModelWeights& weights);

}  // namespace sniper
