// SPDX-License-Identifier: MIT
// ModelConfig: the hyper-parameters of a transformer, read from GGUF metadata by the
// architecture's spec (model/arch/). Every value the forward pass needs is here; anything
// missing or out of range in the file is an Error at load time, never a silent default.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "gguf/reader.h"
#include "kernels/ops.h"
#include "kv/sequence_state.h"

namespace sniper {

// The token mixer of a layer (model/blocks/): what it reads from and keeps in the sequence state.
// Blocks are named by mechanism; what differs between architectures is a LayerPlan field.
enum class MixerKind : uint8_t {
  kAttention,  // softmax attention over the layer's KV rows or window ring (model/blocks/attention.cpp)
  kDeltaNet,   // gated delta-net linear attention with a recurrent state (model/blocks/delta_net.cpp)
};

// The feed-forward block of a layer.
enum class FfnKind : uint8_t {
  kDense,  // a gated MLP: down(act(gate x) * up x)  (model/blocks/dense_ffn.cpp)
  kMoe,    // routed experts, optionally beside a shared expert (model/blocks/moe_ffn.cpp)
};

// The gated MLPs' activation: out = act(gate) * up.
enum class Activation : uint8_t {
  kSilu,  // SwiGLU (kernels/ops.h silu_mul)
  kGelu,  // GeGLU with ggml's f16-table GELU (kernels/activations.h geglu)
};

// What an MoE layer's router multiplies.
enum class RouterInput : uint8_t {
  kFfnInput,        // the FFN's normed input xb
  kScaledResidual,  // rms(x) * (1 / sqrt(dim)) * ffn_gate_inp.scale, x the residual entering the FFN (gemma4)
};

// The expert every token of an MoE layer runs beside the routed ones.
enum class SharedExpert : uint8_t {
  kNone,
  kGated,    // sigmoid(ffn_gate_inp_shexp . xb) * MLP(xb): ffn_{gate,up,down}_shexp, shared_expert_hidden_dim wide
  kUngated,  // MLP(xb): the dense FFN's own tensors ffn_{gate,up,down}, ffn_dim wide (gemma4's MLP beside its experts)
};

const char* mixer_kind_name(MixerKind kind);
const char* ffn_kind_name(FfnKind kind);

// One layer of the layer plan: which blocks it runs and how they are parameterised (hybrid
// models differ per layer). An architecture's finish() may fill ModelConfig::layers; when it
// does not, every layer gets kAttention with the model-wide head shape and kMoe / kDense by
// expert_count. finish_layer_plan() resolves the fields marked "resolved" (0 = the model's value).
struct LayerPlan {
  MixerKind mixer = MixerKind::kAttention;
  FfnKind ffn = FfnKind::kDense;
  // Attention (kAttention), model/blocks/attention.h:
  int64_t n_heads = 0;            // query heads
  int64_t n_kv_heads = 0;         // kv heads (divides n_heads)
  int64_t head_dim = 0;           // per-head width of q, k and v
  int64_t sliding_window = 0;     // 0 = every earlier position, else the last N (a ring of sliding_ring_slots)
  int64_t kv_shared_with = -1;    // >= 0 reads that earlier layer's KV instead of computing its own
  bool attn_output_gate = false;  // attn_q rows per head are [q | gate]; out = Wo (att * sigmoid(gate))
  bool qkv_bias = false;          // attn_{q,k,v}.bias are added to the projections
  bool qk_norm = false;           // per-head RMS norms of q and k (attn_{q,k}_norm)
  bool v_norm = false;            // per-head RMS norm of v without a weight
  bool v_optional = false;        // attn_v may be absent: V is then K's projection (before k's norm)
  bool attn_post_norm = false;    // out = rms(Wo att) * post_attention_norm
  float attn_scale = 0.0f;        // resolved: scores are q.k * attn_scale (0: 1 / sqrt(head_dim))
  int64_t rope_dims = 0;          // resolved: rotated dims per head (0: the model's rope_dims)
  float rope_base = 0.0f;         // resolved: the rope base (0: the model's rope_base)
  bool rope_freqs = true;         // theta is divided by rope_freqs.weight when the file has it
  int64_t ring_slots = 0;         // sliding layers: ring positions (0: 2 * sliding_window; more to hold a
                                  // whole chunk that attends both ways, see widen_rings_for_chunks)
  // FFN (kDense, kMoe), model/blocks/dense_ffn.h, moe_ffn.h:
  int64_t ffn_dim = 0;                     // resolved: the dense MLP's width (0: hidden_dim)
  Activation ffn_act = Activation::kSilu;  // the dense MLP's, the experts' and the shared expert's
  bool ffn_fused_gate_up = false;  // the dense MLP's gate and up are one tensor, ffn_gate_up (set from the file)
  bool ffn_post_norm = false;      // out = rms(out) * post_ffw_norm
  // MoE (kMoe):
  RouterInput router_input = RouterInput::kFfnInput;
  bool expert_input_norm = false;     // experts read rms(x) * pre_ffw_norm_2 instead of xb
  bool expert_scale = false;          // expert e's output is scaled by ffn_down_exps.scale[e]
  bool expert_fused_gate_up = false;  // experts' gate and up are halves of ffn_gate_up_exps (set from the file)
  SharedExpert shared_expert = SharedExpert::kNone;
  bool routed_post_norm = false;  // the routed sum is rms(sum) * post_ffw_norm_2
  bool shared_post_norm = false;  // the shared expert's output is rms(shared) * post_ffw_norm_1

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
};

// The gated delta-net's shape (the ssm.* keys of the qwen35 family).
struct DeltaNetConfig {
  int64_t n_k_heads = 0;       // ssm.group_count: query / key heads
  int64_t n_v_heads = 0;       // ssm.time_step_rank: value heads (a multiple of n_k_heads)
  int64_t head_dim = 0;        // ssm.state_size: width of every q, k and v head
  int64_t conv_kernel = 0;     // ssm.conv_kernel: taps of the causal depthwise conv
  bool grouped_heads = false;  // value head j reads key head j / (nv / nk) (qwen3next); else j % nk
  bool fused_ba = false;       // beta and alpha come from one ssm_ba projection (qwen3next)

  int64_t qk_dim() const { return n_k_heads * head_dim; }
  int64_t v_dim() const { return n_v_heads * head_dim; }
  int64_t conv_channels() const { return 2 * qk_dim() + v_dim(); }
  int64_t conv_state_floats() const { return (conv_kernel - 1) * conv_channels(); }
  int64_t recurrent_state_floats() const { return n_v_heads * head_dim * head_dim; }
};
// A sliding attention layer keeps a ring of 2 * sliding_window positions (0: no window):
// a forward chunk of up to sliding_window + 1 tokens then still finds every key of its first
// token after the chunk's own rows were stored (the shared-KV layers read them later in the same
// forward). Transformer::forward splits longer chunks.
// LayerPlan::ring_slots overrides the size: a media chunk that attends both ways (an image for
// gemma4v) runs in one forward however long it is, so its ring must hold window - 1 earlier
// positions and the whole chunk (widen_rings_for_chunks).
inline int64_t sliding_ring_slots(const LayerPlan& lp) {
  return lp.ring_slots > 0 ? lp.ring_slots : 2 * lp.sliding_window;
}

struct ModelConfig {
  std::string arch;               // general.architecture, e.g. "qwen3moe"
  std::string name;               // general.name, if any
  int64_t dim = 0;                // embedding_length
  int64_t n_layers = 0;           // block_count
  int64_t n_heads = 0;            // attention.head_count
  int64_t n_kv_heads = 0;         // attention.head_count_kv
  int64_t head_dim = 0;           // attention.key_length (or dim / n_heads)
  int64_t hidden_dim = 0;         // feed_forward_length (dense FFN)
  int64_t vocab_size = 0;         // rows of token_embd
  int64_t n_ctx_train = 0;        // context_length
  int64_t n_experts = 0;          // expert_count (0: dense)
  int64_t n_experts_active = 0;   // expert_used_count
  int64_t expert_hidden_dim = 0;  // expert_feed_forward_length (or hidden_dim)
  bool moe_norm_topk = true;      // renormalise the selected experts' weights to sum 1
  float norm_eps = 1e-5f;         // attention.layer_norm_rms_epsilon
  float rope_base = 10000.0f;     // rope.freq_base
  float rope_freq_scale = 1.0f;   // 1 / rope.scaling.factor for linear scaling
  // M-RoPE (Qwen3.5's rope.dimension_sections, interleaved): the pairs' sections of the t, h, w and
  // e positions; all zero for other models. Text tokens have t = h = w = e (plain NeoX rope); an
  // image's tokens get 2D positions (ChunkInput::rope_pos).
  int32_t rope_sections[4] = {0, 0, 0, 0};
  bool has_mrope() const { return rope_sections[0] + rope_sections[1] + rope_sections[2] + rope_sections[3] > 0; }
  int64_t rope_dims = 0;  // rope.dimension_count (<= head_dim)
  RopeStyle rope_style = RopeStyle::kNorm;
  bool qkv_bias = false;                 // the default plan's LayerPlan::qkv_bias (qwen2)
  bool qk_norm = false;                  // the default plan's LayerPlan::qk_norm (qwen3)
  bool tied_embeddings = false;          // no output.weight: the head reuses token_embd
  int64_t shared_expert_hidden_dim = 0;  // expert_shared_feed_forward_length (layers with shared_expert)
  DeltaNetConfig delta_net;              // kDeltaNet layers' shape
  bool ffn_norm_post_attention = false;  // the FFN's input norm is named post_attention_norm (qwen35)
  bool packed_experts = false;           // one tensor per expert matrix (sniper.packed_experts)
  float embd_scale = 0.0f;               // > 0: token embeddings are multiplied by it (gemma4: sqrt(dim))
  float final_softcap = 0.0f;            // > 0: logits = cap * tanh(logits / cap) (final_logit_softcapping)
  int64_t per_layer_dim = 0;             // > 0: per-layer embedding inputs of this width (gemma4 E-models)
  std::vector<LayerPlan> layers;         // [n_layers] the layer plan (validated by load_model_config)
  // Multi-token-prediction blocks after the main stack (nextn_predict_layers; not in n_layers
  // or layers): blocks n_layers .. n_layers + n_nextn_layers - 1 of the file (model/mtp_head.h).
  int64_t n_nextn_layers = 0;
  bool mtp_head = false;  // this is an MTP head's one-layer config (mtp_config): its layer carries the nextn tensors

  bool is_moe() const { return n_experts > 0; }
  const LayerPlan& layer(int64_t layer_idx) const { return layers[static_cast<size_t>(layer_idx)]; }
  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
};

// Fills `layers` with the default plan (every layer attention with the model-wide heads, the
// FFN by expert_count) when it is empty, then checks it: one entry per layer, head counts that
// divide, shared-KV layers pointing at an earlier attention layer of the same shape. Errors name
// the layer and the key the value came from.
[[nodiscard]] Status finish_layer_plan(ModelConfig& config);

// Sizes the sliding layers' rings so that a chunk of up to n_tok tokens that attends both ways
// (a media chunk) runs in one forward: ring_slots = max(2 * window, window + n_tok - 1). A no-op
// for models without sliding layers, or when n_tok <= window + 1.
void widen_rings_for_chunks(ModelConfig& config, int64_t n_tok);

// The sequence state each layer keeps (kv/sequence_state.h), from the layer plan.
std::vector<LayerStateSpec> layer_state_specs(const ModelConfig& config);

// Reads the integer metadata value `key` and checks it against [lo, hi]. Errors name the key, the
// value and the range (or say that the key is missing). Thread-safe.
[[nodiscard]] Result<int64_t> int_in_range(const GgufFile& file, const std::string& key, int64_t lo, int64_t hi);

// Reads the config from a GGUF file through the registered spec of its general.architecture.
// Errors name the missing or invalid key and its allowed range.
Result<ModelConfig> load_model_config(const GgufFile& file);

}  // namespace sniper
