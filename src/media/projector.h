// SPDX-License-Identifier: MIT
// Multimodal projector files ("mmproj": the GGUF llama.cpp's converter writes beside a language
// model, general.architecture "clip"): which encoders a file holds, their hyper-parameters and
// their weights, every value and tensor shape validated (the file is untrusted).
//
// A file holds a vision encoder, an audio encoder or both; each names its projector type in
// clip.projector_type, or in clip.vision.projector_type / clip.audio.projector_type when the file
// holds both (Gemma 4). The projector registry (projector_types()) lists the types this engine
// runs; any other type is refused by name. An audio type (gemma4a) joins the registry with
// modality kAudio, its own config reader and its encoder.
//
// Vision encoders (media/vision_encoder.h) run the types below:
//   gemma4v         Gemma 4: conv patch embedder (no bias), two learned position tables (x, y),
//                   RMS-normed ViT layers (per-head q/k norms, v RMS-normed, 2D NeoX rope with
//                   theta 100, post norms, gated FFN, a layer scalar), 3x3 average pooling,
//                   * sqrt(width), optional standardisation, RMS norm and the input projection.
//   qwen3vl_merger  Qwen3-VL / Qwen3.5 / Qwen3.6: two temporal patch kernels summed plus a bias,
//                   a learned position grid resized bilinearly (corners aligned) to the image,
//                   2x2 spatial merge order, LayerNorm ViT layers (fused qkv with bias, vision
//                   M-RoPE theta 10000), post-LN, the 2x2 merger MLP (GELU).
// The audio encoder (media/audio_encoder.h) runs:
//   gemma4a         Gemma 4 (E2B / E4B): the log-mel spectrogram through two 3x3 stride-2 conv2d
//                   (+ LayerNorm over channels, ReLU), an input projection, conformer layers (half-
//                   step SiLU FFN, chunked local self-attention with a sinusoidal relative position
//                   term and a logit softcap, a GLU + causal depthwise conv module, a second half-
//                   step FFN, an output RMS norm), the output projection, RMS norm and the input
//                   projection into the language model (mm.a.*).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "gguf/reader.h"
#include "kernels/tensor.h"
#include "media/image_preprocess.h"
#include "media/media_decoder.h"

namespace sniper {

enum class ProjectorType { kGemma4V, kQwen3VLMerger, kGemma4A };

// The floats of an f32 tensor.
inline const float* f32_view(const QTensor& t) { return reinterpret_cast<const float*>(t.data); }

// One registry entry: the clip.*projector_type value and what it encodes.
struct ProjectorTypeInfo {
  const char* name;
  MediaKind modality;
  ProjectorType type;
};
std::span<const ProjectorTypeInfo> projector_types();
// The entry named `name`, or nullptr.
const ProjectorTypeInfo* find_projector_type(std::string_view name);

// The ViT FFN's activation: clip.use_gelu (GELU), clip.use_silu (SiLU), or neither: GELU-quick,
// mtmd's default (Gemma 4's converter sets neither).
enum class VisionFfnAct { kGelu, kSilu, kGeluQuick };

// A vision encoder's hyper-parameters (clip.vision.* and the type's fixed values, as mtmd sets them).
struct VisionConfig {
  ProjectorType type = ProjectorType::kGemma4V;
  std::string type_name;   // "gemma4v"
  int64_t n_embd = 0;      // clip.vision.embedding_length: the ViT's width
  int64_t n_heads = 0;     // attention.head_count
  int64_t n_kv_heads = 0;  // attention.head_count_kv (n_heads when absent)
  int64_t head_dim = 0;    // attention.head_dim (n_embd / n_heads when absent)
  int64_t n_ff = 0;        // feed_forward_length
  int64_t n_layers = 0;    // block_count
  int64_t patch_size = 0;  // patch_size
  int64_t merge = 0;    // gemma4v: projector.scale_factor (pooling kernel, default 3); qwen3vl: spatial_merge_size (2)
  int64_t out_dim = 0;  // width of the embeddings handed to the language model
  float eps = 1e-6f;    // attention.layer_norm_epsilon
  VisionFfnAct ffn_act = VisionFfnAct::kGelu;
  float rope_theta = 0.0f;  // gemma4v 100, qwen3vl 10000
  int64_t pos_size = 0;     // gemma4v: rows of each position table; qwen3vl: side of the position grid
  int64_t min_tokens = 0;   // image tokens mtmd resizes to at least (gemma4v 40, qwen3vl 8)
  int64_t max_tokens = 0;   // and at most (gemma4v 280, qwen3vl 4096)
  PreprocessSpec preprocess;
  std::string image_begin;  // text mtmd wraps around an image's embeddings ("<|image>", "<|vision_start|>")
  std::string image_end;
  bool non_causal = false;  // the language model attends within the image both ways (gemma4v, as mtmd)

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
};

// Output tokens of an encoded image of `width` x `height` preprocessed pixels: the token grid.
struct TokenGrid {
  int64_t nx = 0;
  int64_t ny = 0;
  int64_t n_tokens() const { return nx * ny; }
};
TokenGrid vision_token_grid(const VisionConfig& c, int64_t width, int64_t height);

// A linear's input and output clamps (Gemma 4's clippable linears: optional <name>.input_min,
// .input_max, .output_min, .output_max scalars; mtmd clamps every gemma4v linear, to +-FLT_MAX
// when a bound is absent).
struct ClampBounds {
  float in_min = 0, in_max = 0, out_min = 0, out_max = 0;
};

struct VisionLayerWeights {
  QTensor ln1_w, ln1_b;    // [E]
  QTensor q, k, v;         // [E -> q_dim], [E -> kv_dim] (gemma4v)
  QTensor qkv, qkv_b;      // [E -> 3E], [3E] (qwen3vl)
  QTensor q_norm, k_norm;  // [head_dim] (gemma4v)
  QTensor o, o_b;          // [q_dim -> E], [E]
  QTensor attn_post_norm;  // [E] (gemma4v)
  QTensor ln2_w, ln2_b;    // [E]
  QTensor up, up_b;        // [E -> F], [F]
  QTensor gate, gate_b;    // [E -> F], [F] (gemma4v: gated FFN)
  QTensor down, down_b;    // [F -> E], [E]
  QTensor ffn_post_norm;   // [E] (gemma4v)
  QTensor out_scale;       // [1] or [E] (gemma4v layer scalar)
  ClampBounds clamp_q, clamp_k, clamp_v, clamp_o, clamp_up, clamp_gate, clamp_down;
};

struct VisionWeights {
  QTensor patch_embd[2];         // [P, P, 3, E] (ggml order); [1] only for qwen3vl (the second temporal kernel)
  QTensor patch_bias;            // [E] (qwen3vl)
  QTensor pos_embd;              // gemma4v [E, pos_size, 2]; qwen3vl [E, pos_size^2]
  QTensor pre_ln_w, pre_ln_b;    // [E] optional (qwen3vl)
  QTensor post_ln_w, post_ln_b;  // [E] (qwen3vl)
  QTensor mm0_w, mm0_b;          // [4E -> 4E], [4E] (qwen3vl merger)
  QTensor mm2_w, mm2_b;          // [4E -> out], [out] (qwen3vl merger)
  QTensor input_proj;            // [E -> out] (gemma4v)
  QTensor std_bias, std_scale;   // [E] optional (gemma4v)
  ClampBounds clamp_proj;
  std::vector<VisionLayerWeights> layers;
};

// An audio encoder's hyper-parameters (clip.audio.* and gemma4a's fixed values, as mtmd sets them).
struct AudioConfig {
  ProjectorType type = ProjectorType::kGemma4A;
  std::string type_name;    // "gemma4a"
  int64_t n_embd = 0;       // clip.audio.embedding_length: the conformer's width
  int64_t n_heads = 0;      // attention.head_count
  int64_t head_dim = 0;     // attention.head_dim (n_embd / n_heads when absent)
  int64_t n_ff = 0;         // feed_forward_length
  int64_t n_layers = 0;     // block_count
  int64_t n_mel = 0;        // num_mel_bins: the spectrogram's rows
  int64_t conv_kernel = 5;  // the causal depthwise conv's taps (mtmd pads 4 on the left: 5 only)
  float eps = 1e-6f;        // mtmd hard-codes 1e-6 for gemma4a (the converter wrote a wrong value)
  int64_t chunk = 12;       // chunked local attention: queries per block
  int64_t max_past = 12;    // keys a query sees: itself and max_past - 1 before it
  float softcap = 50.0f;
  std::string audio_begin = "<|audio>";  // text mtmd wraps around the audio's embeddings
  std::string audio_end = "<audio|>";

  int64_t q_dim() const { return n_heads * head_dim; }
};

// Tokens gemma4a makes of a spectrogram chunk of n_frames frames (two stride-2 convs).
int64_t audio_tokens_for_frames(int64_t n_frames);

struct AudioLayerWeights {
  QTensor ffn_norm, ffn_up, ffn_down, ffn_post_norm;          // first half-step FFN
  QTensor attn_norm;                                          // attn_pre_norm (or ln1)
  QTensor q, k, v, o, o_b;                                    // [E -> q_dim] x3, [q_dim -> E], [E]
  QTensor per_dim_scale, per_dim_k_scale;                     // [head_dim] optional
  QTensor k_rel;                                              // [E -> q_dim] relative positions (not clamped)
  QTensor attn_post_norm;                                     // [E] optional
  QTensor conv_pre_norm, conv_pw1, conv_dw, conv_dw_b;        // [E], [E -> 2E], [k, E], [E]
  QTensor conv_norm, conv_pw2;                                // [E], [E -> E]
  QTensor ffn_norm_1, ffn_up_1, ffn_down_1, ffn_post_norm_1;  // second half-step FFN
  QTensor out_norm;                                           // ln2 [E] optional
  ClampBounds clamp_ffn_up, clamp_ffn_down, clamp_q, clamp_k, clamp_v, clamp_o, clamp_pw1, clamp_pw2, clamp_ffn_up_1,
      clamp_ffn_down_1;
};

struct AudioWeights {
  QTensor conv_w[2], conv_b[2], conv_norm[2];  // [3, 3, Cin, Cout] f32, [Cout], [Cout] (bias, norm optional)
  int64_t channels[2] = {0, 0};                // Cout of each conv
  QTensor inp_proj, inp_proj_b;                // [C * F -> E], [E]
  QTensor out_proj, out_proj_b;                // [E -> P], [P] optional
  QTensor soft_emb_norm;                       // [P] optional
  QTensor mm_proj;                             // [P -> out]
  ClampBounds clamp_inp_proj, clamp_out_proj, clamp_mm_proj;
  std::vector<AudioLayerWeights> layers;
  int64_t freq = 0;  // mel bins after the two stride-2 convs (the flattened width is channels[1] * freq)
};

// The encoders a projector file holds, as the registry knows them. Errors: a file that is not a
// clip projector, or that holds no encoder this engine runs (the message names the types found).
struct ProjectorFileInfo {
  const ProjectorTypeInfo* vision = nullptr;  // nullptr: no (supported) vision encoder
  std::string vision_type;                    // clip.*projector_type as written ("" when none)
  std::string audio_type;                     // the audio encoder's type, if the file has one
  const ProjectorTypeInfo* audio = nullptr;   // nullptr: no audio encoder this engine runs
};
Result<ProjectorFileInfo> read_projector_file_info(const GgufFile& file);

// Reads and checks the vision hyper-parameters of `type`. Errors name the key, the value and the
// allowed range.
Result<VisionConfig> read_vision_config(const GgufFile& file, const ProjectorTypeInfo& type);

// Reads and checks the audio hyper-parameters of `type` (gemma4a).
Result<AudioConfig> read_audio_config(const GgufFile& file, const ProjectorTypeInfo& type);

// Looks up tensors by name (a WeightStore's find_tensor): nullptr when absent. The views may have
// data == nullptr (tensors that stream); shapes and types are what is checked.
using TensorLookup = std::function<const QTensor*(std::string_view name)>;

// Binds and checks every tensor the config needs: shapes, types (float or a quantized type the
// kernels run for matrices, f32 for norms, biases, scalars; f32 or f16 for the patch kernels and
// position tables), presence. Clamp scalars (gemma4v) must be resident 1-element f32 tensors.
// Errors name the tensor, its shape or type and the expected one.
Result<VisionWeights> bind_vision_weights(const VisionConfig& c, const TensorLookup& find);

// Binds and checks the audio encoder's tensors (a.*, mm.a.*): conv kernels f32 (the converter
// forces them), matrices any type the kernels multiply, norms and biases f32. Biases mtmd's graph
// ignores (ffn_up.bias, conv_pw1.bias, ...) are ignored here too.
Result<AudioWeights> bind_audio_weights(const AudioConfig& c, const TensorLookup& find);

// The tensor names of ViT layer l (the ones bind_vision_weights binds), for streaming plans.
std::vector<std::string> vision_layer_tensor_names(const VisionConfig& c, int64_t layer_idx);

}  // namespace sniper
