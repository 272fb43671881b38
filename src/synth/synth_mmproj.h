// SPDX-License-Identifier: MIT
// Synthetic multimodal projectors: random-weight mmproj GGUF files in the layout llama.cpp's
// converter writes and libmtmd loads (general.architecture "clip", clip.* keys, v.* / mm.*
// tensors), for a language model of a given width. Two projector types:
//   gemma4v  Gemma 4's ViT (conv patch embedder, x/y position tables, RMS-normed layers with q/k
//            norms and post norms, gated FFN, a layer scalar), 3x3 pooling, input projection;
//   qwen3vl  qwen3vl_merger (Qwen3.5 / Qwen3.6): two temporal patch kernels and a bias, a
//            learned position grid, LayerNorm layers with a fused qkv, post-LN, the 2x2 merger;
//   gemma4a  Gemma 4's audio conformer (two conv2d + channel LayerNorm, input projection,
//            conformer layers with relative-position attention and a depthwise conv module,
//            output projection, mm.a.* embedder); the 128 mel bins of Gemma 4's features.
// Presets give the real towers' shapes for benchmarks (gemma4-e4b, qwen3.5-35b-a3b; gemma4a with
// gemma4-e4b: its audio tower).
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
  std::string projector = "gemma4v";  // gemma4v | qwen3vl | gemma4a
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
  // gemma4a only.
  int64_t conv_channels[2] = {8, 4};  // the two conv2d's output channels
  int64_t audio_out = 96;             // the output projection's width (a.pre_encode.out)
  int64_t n_mel = 128;
  bool conv_bias = true;  // the conv biases (llama.cpp adds them along the mel axis: the channels must divide it)
};

// The spec of a preset ("gemma4-e4b", "qwen3.5-35b-a3b") for a language model of width lm_dim
// (with projector "gemma4a": the preset model's audio tower), or an Error naming the presets.
Result<SynthMmprojSpec> synth_mmproj_preset(std::string_view name, int64_t lm_dim, std::string_view projector = "");
// "gemma4-e4b, qwen3.5-35b-a3b"
std::string synth_mmproj_preset_names();

// Checks the spec; the Error names the field.
[[nodiscard]] Status validate_synth_mmproj(const SynthMmprojSpec& spec);

// Writes the projector to `path` (atomically). Returns the file's size.
Result<uint64_t> write_synth_mmproj(const SynthMmprojSpec& spec, const std::string& path);

}  // namespace sniper
