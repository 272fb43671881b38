// SPDX-License-Identifier: MIT
// The preset table. Real-model hyperparameters are those of the published config.json /
// GGUF metadata; real file sizes are the published llama.cpp Q4_K_M files.
#include "synth/synth_presets.h"

namespace sniper {

namespace {

SynthSpec shape(const char* arch, int64_t dim, int64_t n_layers, int64_t n_heads, int64_t n_kv_heads,
                int64_t head_dim, int64_t hidden_dim, int64_t vocab_size, int64_t n_ctx, float rope_base,
                float norm_eps) {
  SynthSpec s;
  s.arch = arch;
  s.dim = dim;
  s.n_layers = n_layers;
  s.n_heads = n_heads;
  s.n_kv_heads = n_kv_heads;
  s.head_dim = head_dim;
  s.hidden_dim = hidden_dim;
  s.vocab_size = vocab_size;
  s.n_ctx = n_ctx;
  s.rope_base = rope_base;
  s.norm_eps = norm_eps;
  s.type = "q4_k_m";
  return s;
}

SynthSpec with_experts(SynthSpec s, int64_t n_experts, int64_t n_active, int64_t expert_hidden_dim) {
  s.n_experts = n_experts;
  s.n_experts_active = n_active;
  s.expert_hidden_dim = expert_hidden_dim;
  return s;
}

std::vector<SynthPreset> make_presets() {
  std::vector<SynthPreset> p;
  // Qwen3-30B-A3B: 48 layers, 128 experts (8 active) of width 768; untied output.
  // Real Qwen3-30B-A3B-Q4_K_M.gguf: 18.56 GB (17.28 GiB). Ours: 18,555,188,000 bytes.
  p.push_back({"qwen3-30b-a3b", "Qwen3-30B-A3B shape, Q4_K_M, 18.56 GB / 17.28 GiB (real file 18.56 GB)",
               with_experts(shape("qwen3moe", 2048, 48, 32, 4, 128, 6144, 151936, 40960, 1e6f, 1e-6f), 128, 8, 768),
               18'560'000'000ull});
  // Mixtral-8x7B: llama with 8 experts (2 active) of width 14336. llama.cpp's 8-expert rules
  // apply (attn_k/attn_v Q8_0, attn_output Q5_K). Real mixtral-8x7b Q4_K_M: 26.44 GiB.
  p.push_back({"mixtral-8x7b", "Mixtral-8x7B shape, Q4_K_M, 28.45 GB / 26.50 GiB (real file 26.44 GiB)",
               with_experts(shape("llama", 4096, 32, 32, 8, 128, 14336, 32000, 32768, 1e6f, 1e-5f), 8, 2, 14336),
               28'390'000'000ull});
  // Qwen3-8B: dense, untied output. Real Qwen3-8B-Q4_K_M.gguf: 5.03 GB.
  p.push_back({"qwen3-8b", "Qwen3-8B shape, Q4_K_M, 5.03 GB / 4.68 GiB (real file 5.03 GB)",
               shape("qwen3", 4096, 36, 32, 8, 128, 12288, 151936, 40960, 1e6f, 1e-6f), 5'030'000'000ull});
  // A small Qwen3-MoE for tests: 32 experts so routing statistics mean something.
  p.push_back({"qwen3moe-tiny", "tiny Qwen3-MoE for tests (4 layers, dim 256, 32 experts), Q4_K_M, 16 MB",
               with_experts(shape("qwen3moe", 256, 4, 4, 2, 64, 512, 512, 512, 1e6f, 1e-6f), 32, 4, 256), 0});
  // The README demo: big enough that expert caching and streaming matter, small enough to
  // write in seconds. 24 layers x 128 experts x 3 x 512 x 1024.
  p.push_back({"qwen3moe-demo", "demo Qwen3-MoE (24 layers, dim 1024, 128 experts, 8 active), Q4_K_M, 3.06 GB",
               with_experts(shape("qwen3moe", 1024, 24, 16, 4, 128, 3072, 32000, 32768, 1e6f, 1e-6f), 128, 8, 512),
               0});
  return p;
}

}  // namespace

const std::vector<SynthPreset>& synth_presets() {
  static const std::vector<SynthPreset> presets = make_presets();
  return presets;
}

const SynthPreset* find_synth_preset(std::string_view name) {
  for (const SynthPreset& p : synth_presets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string synth_preset_names() {
  std::string out;
  for (const SynthPreset& p : synth_presets()) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

}  // namespace sniper
