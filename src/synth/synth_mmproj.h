// SPDX-License-Identifier: MIT
// Synthetic multimodal projectors: random-weight mmproj GGUF files in the layout llama.cpp's
// converter writes and libmtmd loads (general.architecture "clip", clip.* keys, v.* / mm.*
// tensors), for a language model of a given width. Two projector types:
//   gemma4v  Gemma 4's ViT (conv patch embedder, x/y position tables, RMS-normed layers with q/k
//            norms and post norms, gated FFN, a layer scalar), 3x3 pooling, input projection;
//   qwen3vl  qwen3vl_merger (Qwen3.5 / Qwen3.6): two temporal patch kernels and a bias, a
//            learned position grid, LayerNorm layers with a fused qkv, post-LN, the 2x2 merger.
// Presets give the real vision towers' shapes for benchmarks (gemma4-e4b, qwen3.5-35b-a3b).
// Weights: matrices normal with a per-tensor scale (quantized with the reference quantizers for
// block types), norms 1 + 0.1 normal, biases and position tables small normals. Deterministic
// for a seed. Used by `sniper synth --mmproj`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace sniper {

struct SynthMmprojSpec {
  std::string projector = "gemma4v";  // gemma4v | qwen3vl
  int64_t lm_dim = 0;                 // the language model's embedding width (the projection's output)
  int64_t n_embd = 64;                // ViT width
  int64_t n_layers = 2;
  int64_t n_heads = 2;
  int64_t n_ff = 128;
  int64_t patch = 16;
  int64_t pos_size = 0;      // gemma4v: rows per position table (default 64); qwen3vl: grid side (default 16)
  std::string act = "gelu";  // gelu | silu | gelu_quick (neither key: what Gemma 4's converter writes)
  std::string type = "f32";  // matrices: f32 f16 bf16 q8_0 q4_0 q4_k ...; the patch kernel is f16 for
                             // any type but f32; norms, biases and positions stay f32
  uint64_t seed = 1;
};

// The spec of a preset ("gemma4-e4b", "qwen3.5-35b-a3b") for a language model of width lm_dim,
// or nullptr-like Error naming the presets.
Result<SynthMmprojSpec> synth_mmproj_preset(std::string_view name, int64_t lm_dim);
// "gemma4-e4b, qwen3.5-35b-a3b"
std::string synth_mmproj_preset_names();

// Checks the spec; the Error names the field.
[[nodiscard]] Status validate_synth_mmproj(const SynthMmprojSpec& spec);

// Writes the projector to `path` (atomically). Returns the file's size.
Result<uint64_t> write_synth_mmproj(const SynthMmprojSpec& spec, const std::string& path);

}  // namespace sniper
