// SPDX-License-Identifier: MIT
// The preset table. Real-model hyperparameters are those of the published config.json /
// GGUF metadata; real file sizes are the published llama.cpp Q4_K_M files.
#include "synth/synth_presets.h"

namespace sniper {

namespace {

SynthSpec shape(const char* arch, int64_t dim, int64_t n_layers, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                int64_t hidden_dim, int64_t vocab_size, int64_t n_ctx, float rope_base, float norm_eps) {
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

// A Qwen3.5 / Qwen3-Next hybrid: delta-net heads (nk key, nv value, head dim d), rope over
// n_rot of head_dim, shared expert width (MoE).
SynthSpec hybrid(SynthSpec s, int64_t n_rot, int64_t nk, int64_t nv, int64_t d, int64_t shared_ff) {
  s.n_rot = n_rot;
  s.ssm_k_heads = nk;
  s.ssm_v_heads = nv;
  s.ssm_state = d;
  s.ssm_conv = 4;
  s.full_attention_interval = 4;
  s.shared_expert_hidden_dim = shared_ff;
  return s;
}

// Gemma 4: sliding layers of head_dim_swa with n_kv_heads, every period-th layer full (head_dim,
// kv_full heads); per-layer embeddings and KV sharing for the E-models.
SynthSpec gemma4(SynthSpec s, int64_t head_dim_swa, int64_t kv_full, int64_t window, int64_t period, bool k_eq_v,
                 int64_t per_layer_dim, int64_t shared_kv_layers, bool double_ff) {
  s.head_dim_swa = head_dim_swa;
  s.n_kv_heads_full = kv_full;
  s.sliding_window = window;
  s.swa_period = period;
  s.rope_base_swa = 10000.0f;
  s.rope_partial = 0.25f;
  s.final_softcap = 30.0f;
  s.full_k_eq_v = k_eq_v;
  s.per_layer_dim = per_layer_dim;
  s.shared_kv_layers = shared_kv_layers;
  s.shared_double_ff = double_ff;
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
  // Qwen3.5-35B-A3B (config.json text_config): 40 layers (3 delta-net : 1 gated attention),
  // dim 2048, 16 / 2 heads of 256 (rope 64, IMRoPE [11, 11, 10, 0]), delta net 16 key / 32 value
  // heads of 128, 256 experts (8 active) of width 512 plus a shared expert of 512, vocab 248320,
  // untied output, context 262144; 733 tensors like the real file (no MTP block).
  // Real Qwen3.5-35B-A3B-Q4_K_M.gguf (unsloth/Qwen3.5-35B-A3B-GGUF, the base of
  // huggingface.co/anthonymikinka/Qwen35-35B-Layers-Split, which lists it as 21.2 GB with 733
  // tensors; GOBA-AI-Labs/PrunedHub-Qwen3.5-35B-A3B-80pct also cites "official Q4_K_M (21.2 GB)").
  // Ours: 21,163,142,176 bytes. IQ2_M: 11.66 GB, IQ3_XXS: 13.62 GB with llama.cpp's default mixes
  // (Unsloth's UD-IQ2_M 10.6 GB and UD-IQ3_XXS 13 GB are custom "dynamic" mixes, not comparable).
  p.push_back(
      {"qwen3.5-35b-a3b", "Qwen3.5-35B-A3B shape, Q4_K_M, 21.16 GB / 19.71 GiB (real file 21.2 GB)",
       hybrid(with_experts(shape("qwen35moe", 2048, 40, 16, 2, 256, 512, 248320, 262144, 1e7f, 1e-6f), 256, 8, 512), 64,
              16, 32, 128, 512),
       21'200'000'000ull});
  // Qwen3.5-27B: dense, 64 layers (3 delta-net : 1 gated attention), dim 5120, 24 / 4 heads of
  // 256 (rope 64), SwiGLU 17408, delta net 16 key / 48 value heads of 128, vocab 248320.
  // Real Q4_K_M: 15.404 GiB = 16.54 GB (mradermacher Qwen3.5-27B.i1-Q4_K_M, identical to the
  // lmstudio-community standard Q4_K_M; r/LocalLLaMA "Qwen3.5-27B Q4 Quantization Comparison",
  // 2026-03). Ours: 16,543,783,232 bytes.
  p.push_back({"qwen3.5-27b", "Qwen3.5-27B shape, Q4_K_M, 16.54 GB / 15.41 GiB (real file 15.404 GiB)",
               hybrid(shape("qwen35", 5120, 64, 24, 4, 256, 17408, 248320, 262144, 1e7f, 1e-6f), 64, 16, 48, 128, 0),
               16'539'919'257ull});
  // Qwen3.5-9B: dense, 32 layers, dim 4096, 16 / 4 heads of 256, SwiGLU 12288, delta net 16 key /
  // 32 value heads of 128, vocab 248320, untied output.
  // Real Q4_K_M: 5.6e9 bytes, "Q4_K_M with default embedding and output" in the comparison
  // table of huggingface.co/steampunque/Qwen3.5-9B-MP-GGUF (two significant digits only).
  // Ours: 5,625,493,248 bytes.
  p.push_back({"qwen3.5-9b", "Qwen3.5-9B shape, Q4_K_M, 5.63 GB / 5.24 GiB (real file 5.6 GB)",
               hybrid(shape("qwen35", 4096, 32, 16, 4, 256, 12288, 248320, 262144, 1e7f, 1e-6f), 64, 16, 32, 128, 0),
               5'600'000'000ull});
  // Qwen3-Next-80B-A3B: 48 layers (3 delta-net : 1 gated attention), dim 2048, 16 / 2 heads of
  // 256 (NeoX rope over 64), 512 experts (10 active) of 512 plus a shared expert of 512,
  // feed_forward_length 5120, delta net 16 key / 32 value heads of 128, vocab 151936.
  // Real Q4_K_M: 48.5e9 bytes, "default embed and output" in the comparison table of
  // huggingface.co/steampunque/Qwen3-Coder-Next-Hybrid-GGUF (Qwen3-Coder-Next has this exact
  // shape; no standard-mix size of the Instruct file was found). Ours: 48,487,547,424 bytes.
  p.push_back(
      {"qwen3-next-80b-a3b", "Qwen3-Next-80B-A3B shape, Q4_K_M, 48.49 GB / 45.16 GiB (real file 48.5 GB)",
       hybrid(with_experts(shape("qwen3next", 2048, 48, 16, 2, 256, 5120, 151936, 262144, 1e7f, 1e-6f), 512, 10, 512),
              64, 16, 32, 128, 512),
       48'500'000'000ull});
  // Gemma-4-26B-A4B: 30 layers (5 sliding : 1 full), dim 2816, 16 heads, kv 8 (sliding, head 256,
  // window 1024) / 2 (full, head 512, V = K), GELU MLP 2112 plus 128 experts (8 active) of 704,
  // tied embedding of 262144, final softcap 30.
  // Real gemma-4-26B-A4B-it-Q4_K_M.gguf (ggml-org/gemma-4-26B-A4B-it-GGUF): 16.80 GB on the HF
  // file listing (cited by smeltcore.com's "Gemma 4 26B A4B-it on RTX 4090" recipe); 658 tensors,
  // as ours. Ours: 16,787,976,064 bytes.
  p.push_back(
      {"gemma4-26b-a4b", "Gemma-4-26B-A4B shape, Q4_K_M, 16.79 GB / 15.64 GiB (real file 16.80 GB)",
       gemma4(with_experts(shape("gemma4", 2816, 30, 16, 8, 512, 2112, 262144, 262144, 1e6f, 1e-6f), 128, 8, 704), 256,
              2, 1024, 6, true, 0, 0, false),
       16'800'000'000ull});
  // Gemma-4-31B (dense): 60 layers (5 sliding : 1 full), dim 5376, 32 heads, kv 16 (sliding,
  // head 256, window 1024) / 4 (full, head 512, V = K), GELU MLP 21504, tied embedding of
  // 262144. Real Q4_K_M: 18.7e9 bytes (steampunque/gemma-4-31B-it-MP-GGUF comparison table; the
  // TQPlus card's "17.4 GB" is the same file in GiB); 833 tensors of which 422 F32
  // (CompressedGemma/gemma-4-31B-it-compressed), as ours. Ours: 18,679,022,720 bytes.
  p.push_back({"gemma4-31b", "Gemma-4-31B dense shape, Q4_K_M, 18.68 GB / 17.40 GiB (real file 18.7 GB)",
               gemma4(shape("gemma4", 5376, 60, 32, 16, 512, 21504, 262144, 262144, 1e6f, 1e-6f), 256, 4, 1024, 6, true,
                      0, 0, false),
               18'700'000'000ull});
  // Gemma-4-E4B: 42 layers (5 sliding : 1 full), dim 2560, 8 / 2 heads of 256 (sliding, window
  // 512) / 512 (full), GELU MLP 10240, per-layer embeddings of 256, the last 18 layers KV-shared,
  // tied embedding of 262144.
  // No published size of a standard Q4_K_M file was found, so real_file_bytes is 0. Cross-check
  // of the shape: with --type q6_k ours is 6.22 GB, and steampunque/gemma-4-E4B-it-MP-GGUF lists
  // its Q6_K (default embedding and output) at 6.2e9. Ours (Q4_K_M): 5,349,283,168 bytes.
  p.push_back({"gemma4-e4b", "Gemma-4-E4B shape, Q4_K_M, 5.35 GB / 4.98 GiB (no real Q4_K_M size found)",
               gemma4(shape("gemma4", 2560, 42, 8, 2, 512, 10240, 262144, 131072, 1e6f, 1e-6f), 256, 0, 512, 6, false,
                      256, 18, false),
               0});
  // A small Qwen3-MoE for tests: 32 experts so routing statistics mean something.
  p.push_back({"qwen3moe-tiny", "tiny Qwen3-MoE for tests (4 layers, dim 256, 32 experts), Q4_K_M, 16 MB",
               with_experts(shape("qwen3moe", 256, 4, 4, 2, 64, 512, 512, 512, 1e6f, 1e-6f), 32, 4, 256), 0});
  // The README demo: big enough that expert caching and streaming matter, small enough to
  // write in seconds. 24 layers x 128 experts x 3 x 512 x 1024.
  p.push_back({"qwen3moe-demo", "demo Qwen3-MoE (24 layers, dim 1024, 128 experts, 8 active), Q4_K_M, 3.06 GB",
               with_experts(shape("qwen3moe", 1024, 24, 16, 4, 128, 3072, 32000, 32768, 1e6f, 1e-6f), 128, 8, 512), 0});
  // Small hybrids and Gemma 4 models for tests and `sniper synth --arch` (which starts from
  // these): every tensor kind of the real models at dim 256.
  p.push_back({"qwen35moe-tiny", "tiny Qwen3.5-MoE (4 layers: 3 delta-net + 1 attention, 32 experts), Q4_K_M",
               hybrid(with_experts(shape("qwen35moe", 256, 4, 4, 2, 64, 512, 512, 512, 1e7f, 1e-6f), 32, 4, 128), 16, 2,
                      4, 64, 128),
               0});
  p.push_back({"qwen35-tiny", "tiny dense Qwen3.5 (4 layers: 3 delta-net + 1 attention), Q4_K_M",
               hybrid(shape("qwen35", 256, 4, 4, 2, 64, 512, 512, 512, 1e7f, 1e-6f), 16, 2, 4, 64, 0), 0});
  p.push_back({"qwen3next-tiny", "tiny Qwen3-Next (4 layers: 3 delta-net + 1 attention, 32 experts), Q4_K_M",
               hybrid(with_experts(shape("qwen3next", 256, 4, 4, 2, 64, 640, 512, 512, 1e7f, 1e-6f), 32, 4, 128), 16, 2,
                      4, 64, 128),
               0});
  p.push_back({"gemma4moe-tiny", "tiny Gemma-4 MoE (6 layers: 5 sliding + 1 full, 32 experts), Q4_K_M",
               gemma4(with_experts(shape("gemma4", 256, 6, 8, 4, 128, 128, 512, 512, 1e6f, 1e-6f), 32, 4, 64), 64, 1,
                      16, 6, true, 0, 0, false),
               0});
  p.push_back({"gemma4e-tiny", "tiny Gemma-4 E-model (6 layers S S F S S F, per-layer embeddings, 3 KV-shared), Q4_K_M",
               gemma4(shape("gemma4", 256, 6, 4, 2, 128, 256, 512, 512, 1e6f, 1e-6f), 64, 0, 16, 3, false, 64, 3, true),
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
