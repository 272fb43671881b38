// SPDX-License-Identifier: MIT
// Synthetic models: random-weight GGUF files with the exact tensor names, shapes and metadata
// of a real architecture, valid quantized blocks and a working tokenizer, deterministic for a
// seed. Weights are zero-mean normal(0, 0.02) (so MoE routing varies from token to token as in
// real models); norm weights are 1 + 0.1 * normal. Used by `sniper synth`, the README's demo
// and tests.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/result.h"

namespace sniper {

struct SynthSpec {
  std::string arch = "llama";  // llama | qwen2 | qwen3 | qwen3moe (llama + experts = Mixtral-style)
  int64_t dim = 256;
  int64_t n_layers = 2;
  int64_t n_heads = 4;
  int64_t n_kv_heads = 2;
  int64_t head_dim = 64;
  int64_t hidden_dim = 512;       // dense FFN (and Mixtral expert) width
  int64_t n_experts = 0;
  int64_t n_experts_active = 0;
  int64_t expert_hidden_dim = 0;  // qwen3moe expert width
  int64_t vocab_size = 512;       // synthetic vocabulary size (ignored with vocab_from)
  int64_t n_ctx = 2048;
  float rope_base = 10000.0f;
  float norm_eps = 1e-5f;
  std::string type = "q4_k_m";    // f32 f16 bf16 q8_0 q4_0 ... q6_k iq4_nl iq4_xs, or mixes q4_k_m q5_k_m q3_k_m
  uint64_t seed = 1;
  std::string vocab_from;         // copy tokenizer.* metadata from this GGUF (real tokenizer + template)
};

// Checks the spec (positive dims, divisibility, known arch and type); the Error names the field.
[[nodiscard]] Status validate_synth_spec(const SynthSpec& spec);

// Writes the model to `path` (atomically: a temp file renamed at the end). progress(done, total)
// is called with bytes written so far (may be null).
[[nodiscard]] Status write_synth_model(const SynthSpec& spec, const std::string& path,
                                       const std::function<void(uint64_t, uint64_t)>& progress);

}  // namespace sniper
