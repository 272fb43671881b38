// SPDX-License-Identifier: MIT
// ModelConfig: the hyper-parameters of a transformer, read from GGUF metadata by the
// architecture's spec (model/arch/). Every value the forward pass needs is here; anything
// missing or out of range in the file is an Error at load time, never a silent default.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "gguf/reader.h"
#include "kernels/ops.h"

namespace sniper {

struct ModelConfig {
  std::string arch;            // general.architecture, e.g. "qwen3moe"
  std::string name;            // general.name, if any
  int64_t dim = 0;             // embedding_length
  int64_t n_layers = 0;        // block_count
  int64_t n_heads = 0;         // attention.head_count
  int64_t n_kv_heads = 0;      // attention.head_count_kv
  int64_t head_dim = 0;        // attention.key_length (or dim / n_heads)
  int64_t hidden_dim = 0;      // feed_forward_length (dense FFN)
  int64_t vocab_size = 0;      // rows of token_embd
  int64_t n_ctx_train = 0;     // context_length
  int64_t n_experts = 0;       // expert_count (0: dense)
  int64_t n_experts_active = 0;  // expert_used_count
  int64_t expert_hidden_dim = 0; // expert_feed_forward_length (or hidden_dim)
  bool moe_norm_topk = true;   // renormalise the selected experts' weights to sum 1
  float norm_eps = 1e-5f;      // attention.layer_norm_rms_epsilon
  float rope_base = 10000.0f;  // rope.freq_base
  float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor for linear scaling
  int64_t rope_dims = 0;       // rope.dimension_count (<= head_dim)
  RopeStyle rope_style = RopeStyle::kNorm;
  bool qkv_bias = false;       // q/k/v projections carry biases (qwen2)
  bool qk_norm = false;        // per-head RMS norm on q and k (qwen3)
  bool tied_embeddings = false;  // no output.weight: the head reuses token_embd

  bool is_moe() const { return n_experts > 0; }
  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
};

// Reads the config from a GGUF file through the registered spec of its general.architecture.
// Errors name the missing or invalid key and its allowed range.
Result<ModelConfig> load_model_config(const GgufFile& file);

}  // namespace sniper
