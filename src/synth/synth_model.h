// SPDX-License-Identifier: MIT
// Synthetic models: random-weight GGUF files with the exact tensor names, shapes and metadata
// of a real architecture, valid quantized blocks and a working tokenizer, deterministic for a
// seed (the same bytes whatever the thread count). Matrix weights are zero-mean with std 0.02
// (so MoE routing varies from token to token as in real models); norm weights are
// 1 + 0.1 * normal, the MoE router normal(0, 0.02) in f32. Used by `sniper synth`, the README's
// demo, benchmarks and tests. Architectures: llama, qwen2, qwen3, qwen3moe (synth_model.cpp);
// the Qwen3.5 / Qwen3-Next hybrids qwen35, qwen35moe, qwen3next (synth_hybrid.cpp) and gemma4
// (synth_gemma4.cpp), whose special tensors (delta-net decay, conv kernel, gemma4 scales) are
// drawn as the reference fixtures draw them.
//
// Two ways to fill a quantized matrix:
//  - exact: normal(0, 0.02) floats through the `_ref` quantizer (a real quantization of a
//    normal matrix; slow, tens of MB/s per thread for k-quants);
//  - fast: random quants and scales written straight into the blocks (synth_blocks.h), at
//    GB/s, for Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q4_K Q5_K Q6_K (other types still go the exact way).
// SynthFill::kAuto uses fast when the tensor data exceeds kSynthAutoFastBytes. Both are
// multi-threaded over fixed row chunks, each with its own random stream.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "gguf/format.h"

namespace sniper {

enum class SynthFill {
  kAuto,   // fast above kSynthAutoFastBytes of tensor data, else exact
  kFast,   // direct random blocks wherever the type allows
  kExact,  // quantize normal floats with the _ref quantizers
};

// SynthFill::kAuto switches to direct blocks above this much tensor data (256 MiB).
constexpr uint64_t kSynthAutoFastBytes = uint64_t{256} << 20;

struct SynthSpec {
  std::string arch = "llama";  // llama | qwen2 | qwen3 | qwen3moe (llama + experts = Mixtral-style) |
                               // qwen35 | qwen35moe | qwen3next | gemma4
  int64_t dim = 256;
  int64_t n_layers = 2;
  int64_t n_heads = 4;
  int64_t n_kv_heads = 2;
  int64_t head_dim = 64;
  int64_t hidden_dim = 512;  // dense FFN (and Mixtral expert) width
  int64_t n_experts = 0;
  int64_t n_experts_active = 0;
  int64_t expert_hidden_dim = 0;  // expert width (every MoE arch but Mixtral-style llama)
  int64_t vocab_size = 512;       // synthetic vocabulary size (ignored with vocab_from)
  int64_t n_ctx = 2048;
  float rope_base = 10000.0f;
  float norm_eps = 1e-5f;
  std::string type = "q4_k_m";  // f32 f16 bf16 q8_0 q4_0 ... q6_k iq4_nl iq4_xs, or mixes q4_k_m q5_k_m q3_k_m
  uint64_t seed = 1;
  std::string vocab_from;          // copy tokenizer.* metadata from this GGUF (real tokenizer + template)
  std::string chat_template_from;  // tokenizer_config.json (chat_template, bos/eos tokens) or a raw Jinja file
  // Qwen3.5 / Qwen3-Next hybrids (qwen35, qwen35moe, qwen3next): a gated delta-net layer
  // except every full_attention_interval-th, which is gated full attention.
  int64_t shared_expert_hidden_dim = 0;  // shared expert width (qwen35moe, qwen3next)
  int64_t ssm_state = 64;                // delta-net head dim (ssm.state_size)
  int64_t ssm_k_heads = 2;               // delta-net key heads (ssm.group_count)
  int64_t ssm_v_heads = 4;               // delta-net value heads (ssm.time_step_rank)
  int64_t ssm_conv = 4;                  // conv1d kernel width (ssm.conv_kernel)
  int64_t full_attention_interval = 4;
  int64_t nextn_layers = 0;  // multi-token-prediction blocks after the main stack
  int64_t n_rot = 0;         // rope.dimension_count (0 = head_dim); qwen35*: IMRoPE
                             // sections [11, 11, 10, 0] scaled to n_rot / 2
  // gemma4: every swa_period-th layer is full attention (head_dim, n_kv_heads_full kv heads,
  // rope over head_dim with rope_freqs rotating the first rope_partial of the pairs), the others
  // sliding (head_dim_swa, n_kv_heads, window sliding_window, rope base rope_base_swa).
  int64_t head_dim_swa = 0;
  int64_t n_kv_heads_full = 0;  // 0 = n_kv_heads (then head_count_kv is one scalar)
  int64_t sliding_window = 512;
  int64_t swa_period = 6;
  float rope_base_swa = 10000.0f;
  float rope_partial = 0.25f;
  float final_softcap = 30.0f;
  bool full_k_eq_v = false;       // full layers have no attn_v (V = K; the 26B / 31B models)
  int64_t per_layer_dim = 0;      // per-layer embedding width (E-models; 0 = none)
  int64_t shared_kv_layers = 0;   // the last this many layers read an earlier layer's KV
  bool shared_double_ff = false;  // the KV-shared layers have a 2 x hidden_dim FFN (E2B)
  // >= 0: written as {arch}.pooling_type (llama.cpp's values: 0 none, 1 mean, 2 cls, 3 last;
  // engine/embedding.h), making an embedding model; -1: the key is absent.
  int pooling_type = -1;
  SynthFill fill = SynthFill::kAuto;
  int n_threads = 0;  // worker threads counting the caller; 0 = all cores (output does not depend on it)
};

// One tensor of a synthetic model, in file order.
struct SynthTensor {
  std::string name;
  GgmlType type;
  std::vector<int64_t> ne;  // ggml order
  uint64_t nbytes;
};

// Checks the spec (positive dims, divisibility, known arch and type); the Error names the field.
[[nodiscard]] Status validate_synth_spec(const SynthSpec& spec);

// The tensor table write_synth_model writes for `spec` (names, llama.cpp mix types, shapes).
[[nodiscard]] Result<std::vector<SynthTensor>> plan_synth_model(const SynthSpec& spec);

// The exact size in bytes of the file write_synth_model writes for `spec` (header, metadata,
// padding and tensor data), without generating any weights.
[[nodiscard]] Result<uint64_t> synth_model_bytes(const SynthSpec& spec);

// Whether write_synth_model fills quantized matrices with direct random blocks for `spec`.
[[nodiscard]] Result<bool> synth_uses_fast_fill(const SynthSpec& spec);

// Writes the model to `path` (atomically: a temp file renamed at the end). progress(done, total)
// is called from the calling thread with tensor bytes handed to the file so far, before each
// tensor and once more with done == total when the file is complete (may be null).
[[nodiscard]] Status write_synth_model(const SynthSpec& spec, const std::string& path,
                                       const std::function<void(uint64_t done, uint64_t total)>& progress);

}  // namespace sniper
