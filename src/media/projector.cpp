// SPDX-License-Identifier: MIT
#include "media/projector.h"

#include <cfloat>
#include <cmath>
#include <cstring>

#include "kernels/kernels.h"

namespace sniper {

namespace {

constexpr ProjectorTypeInfo kProjectorTypes[] = {
    {"gemma4v", MediaKind::kImage, ProjectorType::kGemma4V},
    {"qwen3vl_merger", MediaKind::kImage, ProjectorType::kQwen3VLMerger},
    {"gemma4a", MediaKind::kAudio, ProjectorType::kGemma4A},
};

std::string shape_string(const std::array<int64_t, 4>& ne) {
  std::string s = "[";
  int last = 3;
  while (last > 0 && ne[static_cast<size_t>(last)] == 1) --last;
  for (int i = 0; i <= last; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(ne[static_cast<size_t>(i)]);
  }
  return s + "]";
}

const char* type_name(GgmlType t) { return get_type_info(t).name; }

// What a tensor may be.
enum class Kind {
  kMatrix,  // a linear's weight: any type the kernels run
  kF32,     // norms, biases, scalars: f32
  kFloat,   // patch kernels, position tables: f32 or f16
};

class Binder {
 public:
  explicit Binder(const TensorLookup& find) : find_(find) {}

  // The tensor `name` with exactly `ne` (ggml order); absent is an Error unless optional.
  Status bind(QTensor& out, const std::string& name, std::array<int64_t, 4> ne, Kind kind, bool optional = false) {
    const QTensor* t = find_(name);
    if (t == nullptr) {
      if (optional) return ok_status();
      return make_error("projector tensor %s is missing (expected shape %s)", name.c_str(), shape_string(ne).c_str());
    }
    if (t->ne != ne) {
      return make_error("projector tensor %s has shape %s but must be %s", name.c_str(), shape_string(t->ne).c_str(),
                        shape_string(ne).c_str());
    }
    switch (kind) {
      case Kind::kF32:
        if (t->type != GgmlType::kF32) {
          return make_error("projector tensor %s is %s but must be f32", name.c_str(), type_name(t->type));
        }
        break;
      case Kind::kFloat:
        if (t->type != GgmlType::kF32 && t->type != GgmlType::kF16) {
          return make_error("projector tensor %s is %s but must be f32 or f16", name.c_str(), type_name(t->type));
        }
        break;
      case Kind::kMatrix:
        if (find_kernels(t->type, IsaTier::kRef) == nullptr) {
          return make_error("projector tensor %s is %s, a type this engine cannot multiply", name.c_str(),
                            type_name(t->type));
        }
        break;
    }
    out = *t;
    return ok_status();
  }

  // A resident f32 scalar (1 element), or `fallback` when absent.
  Result<float> scalar(const std::string& name, float fallback) {
    const QTensor* t = find_(name);
    if (t == nullptr) return fallback;
    if (t->type != GgmlType::kF32 || t->ne != std::array<int64_t, 4>{1, 1, 1, 1}) {
      return make_error("projector scalar %s is %s %s but must be one f32", name.c_str(), type_name(t->type),
                        shape_string(t->ne).c_str());
    }
    if (t->data == nullptr) return make_error("projector scalar %s is not resident", name.c_str());
    float v;
    std::memcpy(&v, t->data, sizeof(v));
    if (std::isnan(v)) return make_error("projector scalar %s is NaN", name.c_str());
    return v;
  }

  // Gemma 4's clippable linear bounds of the linear whose weight is `weight_name` ("X.weight").
  Result<ClampBounds> clamp(const std::string& weight_name) {
    const std::string base = weight_name.substr(0, weight_name.size() - std::strlen(".weight"));
    ClampBounds b;
    SNIPER_ASSIGN_OR_RETURN(b.in_min, scalar(base + ".input_min", -FLT_MAX));
    SNIPER_ASSIGN_OR_RETURN(b.in_max, scalar(base + ".input_max", FLT_MAX));
    SNIPER_ASSIGN_OR_RETURN(b.out_min, scalar(base + ".output_min", -FLT_MAX));
    SNIPER_ASSIGN_OR_RETURN(b.out_max, scalar(base + ".output_max", FLT_MAX));
    if (!(b.in_min <= b.in_max) || !(b.out_min <= b.out_max)) {
      return make_error("projector clamp bounds of %s are inverted (input [%g, %g], output [%g, %g])",
                        weight_name.c_str(), static_cast<double>(b.in_min), static_cast<double>(b.in_max),
                        static_cast<double>(b.out_min), static_cast<double>(b.out_max));
    }
    return b;
  }

  bool has(const std::string& name) const { return find_(name) != nullptr; }

 private:
  const TensorLookup& find_;
};

std::string blk(int64_t l, const char* what) { return "v.blk." + std::to_string(l) + "." + what; }
std::string ablk(int64_t l, const char* what) { return "a.blk." + std::to_string(l) + "." + what; }

Result<int64_t> get_int_range(const GgufFile& f, const std::string& key, int64_t lo, int64_t hi, bool required,
                              int64_t fallback) {
  if (!f.has(key)) {
    if (required) return make_error("projector key %s is missing", key.c_str());
    return fallback;
  }
  SNIPER_ASSIGN_OR_RETURN(int64_t v, f.get_int(key));
  if (v < lo || v > hi) {
    return make_error("projector key %s is %lld but must be in [%lld, %lld]", key.c_str(), static_cast<long long>(v),
                      static_cast<long long>(lo), static_cast<long long>(hi));
  }
  return v;
}

Result<std::array<float, 3>> get_triple(const GgufFile& f, const std::string& key, bool positive) {
  SNIPER_ASSIGN_OR_RETURN(const std::vector<double>* v, f.get_float_array(key));
  if (v->size() < 3) return make_error("projector key %s has %zu values but needs 3", key.c_str(), v->size());
  std::array<float, 3> out;
  for (size_t i = 0; i < 3; ++i) {
    const auto x = static_cast<float>((*v)[i]);
    if (!std::isfinite(x) || (positive && !(x > 0.0f))) {
      return make_error("projector key %s[%zu] is %g but must be finite%s", key.c_str(), i, (*v)[i],
                        positive ? " and positive" : "");
    }
    out[i] = x;
  }
  return out;
}

}  // namespace

std::span<const ProjectorTypeInfo> projector_types() { return kProjectorTypes; }

const ProjectorTypeInfo* find_projector_type(std::string_view name) {
  for (const ProjectorTypeInfo& t : kProjectorTypes) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

TokenGrid vision_token_grid(const VisionConfig& c, int64_t width, int64_t height) {
  const int64_t px = width / c.patch_size, py = height / c.patch_size;
  return {px / c.merge, py / c.merge};
}

Result<ProjectorFileInfo> read_projector_file_info(const GgufFile& file) {
  SNIPER_ASSIGN_OR_RETURN(std::string arch, file.get_string_or("general.architecture", ""));
  if (arch != "clip") {
    return make_error(
        "%s is not a multimodal projector: general.architecture is '%s' but must be 'clip' (the "
        "mmproj file llama.cpp's converter writes)",
        file.path.c_str(), arch.c_str());
  }
  SNIPER_ASSIGN_OR_RETURN(bool has_vision, file.get_bool_or("clip.has_vision_encoder", false));
  SNIPER_ASSIGN_OR_RETURN(bool has_audio, file.get_bool_or("clip.has_audio_encoder", false));
  SNIPER_ASSIGN_OR_RETURN(std::string common, file.get_string_or("clip.projector_type", ""));
  ProjectorFileInfo info;
  std::string supported;
  for (const ProjectorTypeInfo& t : kProjectorTypes) {
    if (!supported.empty()) supported += ", ";
    supported += t.name;
  }
  if (has_vision) {
    SNIPER_ASSIGN_OR_RETURN(info.vision_type, file.get_string_or("clip.vision.projector_type", common));
    if (info.vision_type.empty()) return make_error("projector has a vision encoder but no clip.projector_type");
    const ProjectorTypeInfo* t = find_projector_type(info.vision_type);
    if (t == nullptr || t->modality != MediaKind::kImage) {
      return make_error("vision projector type '%s' is not supported (supported: %s)", info.vision_type.c_str(),
                        supported.c_str());
    }
    info.vision = t;
  }
  if (has_audio) {
    SNIPER_ASSIGN_OR_RETURN(info.audio_type, file.get_string_or("clip.audio.projector_type", common));
    const ProjectorTypeInfo* t = find_projector_type(info.audio_type);
    if (t != nullptr && t->modality == MediaKind::kAudio) info.audio = t;
  }
  if (info.vision == nullptr && info.audio == nullptr) {
    if (has_audio) {
      return make_error("audio projector type '%s' is not supported (supported: %s)", info.audio_type.c_str(),
                        supported.c_str());
    }
    return make_error("projector holds no encoder (clip.has_vision_encoder and clip.has_audio_encoder are false)");
  }
  return info;
}

Result<VisionConfig> read_vision_config(const GgufFile& f, const ProjectorTypeInfo& type) {
  VisionConfig c;
  c.type = type.type;
  c.type_name = type.name;
  constexpr int64_t kMaxWidth = 1 << 16;
  SNIPER_ASSIGN_OR_RETURN(c.n_embd, get_int_range(f, "clip.vision.embedding_length", 1, kMaxWidth, true, 0));
  SNIPER_ASSIGN_OR_RETURN(c.n_heads, get_int_range(f, "clip.vision.attention.head_count", 1, 1024, true, 0));
  SNIPER_ASSIGN_OR_RETURN(c.n_kv_heads,
                          get_int_range(f, "clip.vision.attention.head_count_kv", 1, 1024, false, c.n_heads));
  if (c.n_heads % c.n_kv_heads != 0) {
    return make_error(
        "projector key clip.vision.attention.head_count (%lld) must be a multiple of head_count_kv (%lld)",
        static_cast<long long>(c.n_heads), static_cast<long long>(c.n_kv_heads));
  }
  const bool has_head_dim = f.has("clip.vision.attention.head_dim");
  if (!has_head_dim && c.n_embd % c.n_heads != 0) {
    return make_error("projector width clip.vision.embedding_length (%lld) is not a multiple of head_count (%lld)",
                      static_cast<long long>(c.n_embd), static_cast<long long>(c.n_heads));
  }
  SNIPER_ASSIGN_OR_RETURN(c.head_dim,
                          get_int_range(f, "clip.vision.attention.head_dim", 2, 1024, false, c.n_embd / c.n_heads));
  if (c.head_dim % 4 != 0) {
    return make_error("projector head width %lld must be a multiple of 4 (2D rope over half-heads)",
                      static_cast<long long>(c.head_dim));
  }
  SNIPER_ASSIGN_OR_RETURN(c.n_ff, get_int_range(f, "clip.vision.feed_forward_length", 1, 1 << 20, true, 0));
  SNIPER_ASSIGN_OR_RETURN(c.n_layers, get_int_range(f, "clip.vision.block_count", 1, 1024, true, 0));
  SNIPER_ASSIGN_OR_RETURN(c.patch_size, get_int_range(f, "clip.vision.patch_size", 1, 256, true, 0));
  SNIPER_ASSIGN_OR_RETURN(int64_t image_size, get_int_range(f, "clip.vision.image_size", 0, 65536, true, 0));
  (void)image_size;  // required by mtmd, unused by the dynamic-size preprocessing
  SNIPER_ASSIGN_OR_RETURN(int64_t proj_dim, get_int_range(f, "clip.vision.projection_dim", 0, kMaxWidth, true, 0));
  (void)proj_dim;  // the output width comes from the projection tensors, as mtmd takes it
  SNIPER_ASSIGN_OR_RETURN(double eps, f.get_float("clip.vision.attention.layer_norm_epsilon"));
  if (!(eps > 0.0 && eps < 1.0)) {
    return make_error("projector key clip.vision.attention.layer_norm_epsilon is %g but must be in (0, 1)", eps);
  }
  c.eps = static_cast<float>(eps);
  SNIPER_ASSIGN_OR_RETURN(bool gelu, f.get_bool_or("clip.use_gelu", false));
  SNIPER_ASSIGN_OR_RETURN(bool silu, f.get_bool_or("clip.use_silu", false));
  if (gelu && silu) return make_error("projector sets both clip.use_gelu and clip.use_silu");
  c.ffn_act = gelu ? VisionFfnAct::kGelu : silu ? VisionFfnAct::kSilu : VisionFfnAct::kGeluQuick;
  SNIPER_ASSIGN_OR_RETURN(c.preprocess.mean, get_triple(f, "clip.vision.image_mean", false));
  SNIPER_ASSIGN_OR_RETURN(c.preprocess.std, get_triple(f, "clip.vision.image_std", true));
  switch (c.type) {
    case ProjectorType::kGemma4V: {
      c.rope_theta = 100.0f;
      SNIPER_ASSIGN_OR_RETURN(c.merge, get_int_range(f, "clip.vision.projector.scale_factor", 1, 16, false, 3));
      c.min_tokens = 40;
      c.max_tokens = 280;
      c.image_begin = "<|image>";
      c.image_end = "<image|>";
      c.non_causal = true;
      break;
    }
    case ProjectorType::kQwen3VLMerger: {
      c.rope_theta = 10000.0f;
      SNIPER_ASSIGN_OR_RETURN(c.merge, get_int_range(f, "clip.vision.spatial_merge_size", 1, 16, false, 2));
      if (c.merge != 2) {
        return make_error("projector key clip.vision.spatial_merge_size is %lld but qwen3vl_merger merges 2x2 only",
                          static_cast<long long>(c.merge));
      }
      if (f.has("clip.vision.is_deepstack_layers")) {
        SNIPER_ASSIGN_OR_RETURN(const std::vector<int64_t>* ds, f.get_int_array("clip.vision.is_deepstack_layers"));
        for (int64_t v : *ds) {
          if (v != 0) {
            return make_error(
                "projector has deepstack layers (clip.vision.is_deepstack_layers): Qwen3-VL deepstack "
                "is not supported (Qwen3.5 / Qwen3.6 projectors have none)");
          }
        }
      }
      if (c.n_kv_heads != c.n_heads || c.q_dim() != c.n_embd) {
        return make_error(
            "qwen3vl_merger needs head_count_kv == head_count and head_count * head_dim == width "
            "(%lld heads, %lld kv heads, head_dim %lld, width %lld)",
            static_cast<long long>(c.n_heads), static_cast<long long>(c.n_kv_heads), static_cast<long long>(c.head_dim),
            static_cast<long long>(c.n_embd));
      }
      c.min_tokens = 8;
      c.max_tokens = 4096;
      c.image_begin = "<|vision_start|>";
      c.image_end = "<|vision_end|>";
      c.non_causal = false;
      break;
    }
    case ProjectorType::kGemma4A: return make_error("projector type gemma4a is an audio encoder, not a vision one");
  }
  const int64_t align = c.patch_size * c.merge;
  c.preprocess.align = align;
  c.preprocess.min_pixels = c.min_tokens * align * align;
  c.preprocess.max_pixels = c.max_tokens * align * align;
  return c;
}

Result<VisionWeights> bind_vision_weights(const VisionConfig& c, const TensorLookup& find) {
  Binder b(find);
  VisionWeights w;
  const int64_t E = c.n_embd, F = c.n_ff, P = c.patch_size;
  SNIPER_TRY(b.bind(w.patch_embd[0], "v.patch_embd.weight", {P, P, 3, E}, Kind::kFloat));
  w.layers.resize(static_cast<size_t>(c.n_layers));
  if (c.type == ProjectorType::kGemma4V) {
    const QTensor* pos = find("v.position_embd.weight");
    if (pos == nullptr) return make_error("projector tensor v.position_embd.weight is missing");
    if (pos->ne[0] != E || pos->ne[1] < 1 || pos->ne[2] != 2 || pos->ne[3] != 1) {
      return make_error("projector tensor v.position_embd.weight has shape %s but must be [%lld, N, 2]",
                        shape_string(pos->ne).c_str(), static_cast<long long>(E));
    }
    SNIPER_TRY(b.bind(w.pos_embd, "v.position_embd.weight", pos->ne, Kind::kFloat));
    const QTensor* proj = find("mm.input_projection.weight");
    if (proj == nullptr) return make_error("projector tensor mm.input_projection.weight is missing");
    SNIPER_TRY(b.bind(w.input_proj, "mm.input_projection.weight", {E, std::max<int64_t>(proj->ne[1], 1), 1, 1},
                      Kind::kMatrix));
    SNIPER_ASSIGN_OR_RETURN(w.clamp_proj, b.clamp("mm.input_projection.weight"));
    SNIPER_TRY(b.bind(w.std_bias, "v.std_bias", {E, 1, 1, 1}, Kind::kF32, true));
    SNIPER_TRY(b.bind(w.std_scale, "v.std_scale", {E, 1, 1, 1}, Kind::kF32, true));
    if ((w.std_bias.row_bytes == 0) != (w.std_scale.row_bytes == 0)) {
      return make_error("projector has only one of v.std_bias and v.std_scale");
    }
    for (int64_t l = 0; l < c.n_layers; ++l) {
      VisionLayerWeights& L = w.layers[static_cast<size_t>(l)];
      const int64_t hd = c.head_dim;
      SNIPER_TRY(b.bind(L.ln1_w, blk(l, "ln1.weight"), {E, 1, 1, 1}, Kind::kF32));
      SNIPER_TRY(b.bind(L.ln2_w, blk(l, "ln2.weight"), {E, 1, 1, 1}, Kind::kF32));
      SNIPER_TRY(b.bind(L.q, blk(l, "attn_q.weight"), {E, c.q_dim(), 1, 1}, Kind::kMatrix));
      SNIPER_TRY(b.bind(L.k, blk(l, "attn_k.weight"), {E, c.kv_dim(), 1, 1}, Kind::kMatrix));
      SNIPER_TRY(b.bind(L.v, blk(l, "attn_v.weight"), {E, c.kv_dim(), 1, 1}, Kind::kMatrix));
      SNIPER_TRY(b.bind(L.o, blk(l, "attn_out.weight"), {c.q_dim(), E, 1, 1}, Kind::kMatrix));
      SNIPER_TRY(b.bind(L.q_norm, blk(l, "attn_q_norm.weight"), {hd, 1, 1, 1}, Kind::kF32));
      SNIPER_TRY(b.bind(L.k_norm, blk(l, "attn_k_norm.weight"), {hd, 1, 1, 1}, Kind::kF32));
      SNIPER_TRY(b.bind(L.attn_post_norm, blk(l, "attn_post_norm.weight"), {E, 1, 1, 1}, Kind::kF32));
      SNIPER_TRY(b.bind(L.ffn_post_norm, blk(l, "ffn_post_norm.weight"), {E, 1, 1, 1}, Kind::kF32));
      SNIPER_TRY(b.bind(L.gate, blk(l, "ffn_gate.weight"), {E, F, 1, 1}, Kind::kMatrix));
      SNIPER_TRY(b.bind(L.up, blk(l, "ffn_up.weight"), {E, F, 1, 1}, Kind::kMatrix));
      SNIPER_TRY(b.bind(L.down, blk(l, "ffn_down.weight"), {F, E, 1, 1}, Kind::kMatrix));
      const QTensor* scale = find(blk(l, "out_scale.weight"));
      if (scale != nullptr) {
        const int64_t n = scale->ne[0] == 1 ? 1 : E;
        SNIPER_TRY(b.bind(L.out_scale, blk(l, "out_scale.weight"), {n, 1, 1, 1}, Kind::kF32));
      }
      SNIPER_ASSIGN_OR_RETURN(L.clamp_q, b.clamp(blk(l, "attn_q.weight")));
      SNIPER_ASSIGN_OR_RETURN(L.clamp_k, b.clamp(blk(l, "attn_k.weight")));
      SNIPER_ASSIGN_OR_RETURN(L.clamp_v, b.clamp(blk(l, "attn_v.weight")));
      SNIPER_ASSIGN_OR_RETURN(L.clamp_o, b.clamp(blk(l, "attn_out.weight")));
      SNIPER_ASSIGN_OR_RETURN(L.clamp_gate, b.clamp(blk(l, "ffn_gate.weight")));
      SNIPER_ASSIGN_OR_RETURN(L.clamp_up, b.clamp(blk(l, "ffn_up.weight")));
      SNIPER_ASSIGN_OR_RETURN(L.clamp_down, b.clamp(blk(l, "ffn_down.weight")));
      for (const char* unsupported : {"attn_qkv.weight", "ln1.bias", "ffn_up.bias", "attn_q.bias"}) {
        if (b.has(blk(l, unsupported))) {
          return make_error("projector tensor %s is not part of a gemma4v layer", blk(l, unsupported).c_str());
        }
      }
    }
  } else {
    SNIPER_TRY(b.bind(w.patch_embd[1], "v.patch_embd.weight.1", {P, P, 3, E}, Kind::kFloat));
    SNIPER_TRY(b.bind(w.patch_bias, "v.patch_embd.bias", {E, 1, 1, 1}, Kind::kF32));
    const QTensor* pos = find("v.position_embd.weight");
    if (pos == nullptr) return make_error("projector tensor v.position_embd.weight is missing");
    const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(pos->ne[1]))));
    if (pos->ne[0] != E || pos->ne[1] < 1 || side * side != pos->ne[1] || pos->ne[2] != 1 || pos->ne[3] != 1) {
      return make_error("projector tensor v.position_embd.weight has shape %s but must be [%lld, N*N]",
                        shape_string(pos->ne).c_str(), static_cast<long long>(E));
    }
    SNIPER_TRY(b.bind(w.pos_embd, "v.position_embd.weight", pos->ne, Kind::kF32));
    SNIPER_TRY(b.bind(w.pre_ln_w, "v.pre_ln.weight", {E, 1, 1, 1}, Kind::kF32, true));
    SNIPER_TRY(b.bind(w.pre_ln_b, "v.pre_ln.bias", {E, 1, 1, 1}, Kind::kF32, true));
    SNIPER_TRY(b.bind(w.post_ln_w, "v.post_ln.weight", {E, 1, 1, 1}, Kind::kF32));
    SNIPER_TRY(b.bind(w.post_ln_b, "v.post_ln.bias", {E, 1, 1, 1}, Kind::kF32));
    const QTensor* mm2 = find("mm.2.weight");
    if (mm2 == nullptr) return make_error("projector tensor mm.2.weight is missing");
    const int64_t out = std::max<int64_t>(mm2->ne[1], 1);
    SNIPER_TRY(b.bind(w.mm0_w, "mm.0.weight", {4 * E, 4 * E, 1, 1}, Kind::kMatrix));
    SNIPER_TRY(b.bind(w.mm0_b, "mm.0.bias", {4 * E, 1, 1, 1}, Kind::kF32));
    SNIPER_TRY(b.bind(w.mm2_w, "mm.2.weight", {4 * E, out, 1, 1}, Kind::kMatrix));
    SNIPER_TRY(b.bind(w.mm2_b, "mm.2.bias", {out, 1, 1, 1}, Kind::kF32));
    for (int64_t l = 0; l < c.n_layers; ++l) {
      VisionLayerWeights& L = w.layers[static_cast<size_t>(l)];
      SNIPER_TRY(b.bind(L.ln1_w, blk(l, "ln1.weight"), {E, 1, 1, 1}, Kind::kF32));
      SNIPER_TRY(b.bind(L.ln1_b, blk(l, "ln1.bias"), {E, 1, 1, 1}, Kind::kF32));
      SNIPER_TRY(b.bind(L.ln2_w, blk(l, "ln2.weight"), {E, 1, 1, 1}, Kind::kF32));
      SNIPER_TRY(b.bind(L.ln2_b, blk(l, "ln2.bias"), {E, 1, 1, 1}, Kind::kF32));
      SNIPER_TRY(b.bind(L.qkv, blk(l, "attn_qkv.weight"), {E, 3 * E, 1, 1}, Kind::kMatrix));
      SNIPER_TRY(b.bind(L.qkv_b, blk(l, "attn_qkv.bias"), {3 * E, 1, 1, 1}, Kind::kF32));
      SNIPER_TRY(b.bind(L.o, blk(l, "attn_out.weight"), {E, E, 1, 1}, Kind::kMatrix));
      SNIPER_TRY(b.bind(L.o_b, blk(l, "attn_out.bias"), {E, 1, 1, 1}, Kind::kF32));
      SNIPER_TRY(b.bind(L.up, blk(l, "ffn_up.weight"), {E, F, 1, 1}, Kind::kMatrix));
      SNIPER_TRY(b.bind(L.up_b, blk(l, "ffn_up.bias"), {F, 1, 1, 1}, Kind::kF32));
      SNIPER_TRY(b.bind(L.gate, blk(l, "ffn_gate.weight"), {E, F, 1, 1}, Kind::kMatrix, true));
      SNIPER_TRY(b.bind(L.gate_b, blk(l, "ffn_gate.bias"), {F, 1, 1, 1}, Kind::kF32, true));
      SNIPER_TRY(b.bind(L.down, blk(l, "ffn_down.weight"), {F, E, 1, 1}, Kind::kMatrix));
      SNIPER_TRY(b.bind(L.down_b, blk(l, "ffn_down.bias"), {E, 1, 1, 1}, Kind::kF32));
      for (const char* unsupported : {"attn_q.weight", "attn_q_norm.weight", "ls1.weight", "attn_post_norm.weight"}) {
        if (b.has(blk(l, unsupported))) {
          return make_error("projector tensor %s is not part of a qwen3vl_merger layer", blk(l, unsupported).c_str());
        }
      }
    }
    if (b.has("v.deepstack.0.norm.weight")) {
      return make_error("projector has deepstack tensors (v.deepstack.*): Qwen3-VL deepstack is not supported");
    }
  }
  if (b.has(blk(c.n_layers, "ffn_down.weight"))) {
    return make_error("projector has a layer %lld but clip.vision.block_count is %lld",
                      static_cast<long long>(c.n_layers), static_cast<long long>(c.n_layers));
  }
  return w;
}

std::vector<std::string> vision_layer_tensor_names(const VisionConfig& c, int64_t l) {
  if (c.type == ProjectorType::kGemma4V) {
    return {blk(l, "attn_q.weight"),   blk(l, "attn_k.weight"), blk(l, "attn_v.weight"),  blk(l, "attn_out.weight"),
            blk(l, "ffn_gate.weight"), blk(l, "ffn_up.weight"), blk(l, "ffn_down.weight")};
  }
  return {blk(l, "attn_qkv.weight"), blk(l, "attn_out.weight"), blk(l, "ffn_up.weight"), blk(l, "ffn_down.weight")};
}

int64_t audio_tokens_for_frames(int64_t n_frames) {
  int64_t n = n_frames;
  for (int i = 0; i < 2; ++i) n = (n - 1) / 2 + 1;
  return n;
}

Result<AudioConfig> read_audio_config(const GgufFile& f, const ProjectorTypeInfo& type) {
  AudioConfig c;
  c.type = type.type;
  c.type_name = type.name;
  constexpr int64_t kMaxWidth = 1 << 16;
  SNIPER_ASSIGN_OR_RETURN(c.n_embd, get_int_range(f, "clip.audio.embedding_length", 2, kMaxWidth, true, 0));
  SNIPER_ASSIGN_OR_RETURN(c.n_heads, get_int_range(f, "clip.audio.attention.head_count", 1, 1024, true, 0));
  const bool has_head_dim = f.has("clip.audio.attention.head_dim");
  if (!has_head_dim && c.n_embd % c.n_heads != 0) {
    return make_error("projector width clip.audio.embedding_length (%lld) is not a multiple of head_count (%lld)",
                      static_cast<long long>(c.n_embd), static_cast<long long>(c.n_heads));
  }
  SNIPER_ASSIGN_OR_RETURN(c.head_dim,
                          get_int_range(f, "clip.audio.attention.head_dim", 1, 1024, false, c.n_embd / c.n_heads));
  SNIPER_ASSIGN_OR_RETURN(c.n_ff, get_int_range(f, "clip.audio.feed_forward_length", 1, 1 << 20, true, 0));
  SNIPER_ASSIGN_OR_RETURN(c.n_layers, get_int_range(f, "clip.audio.block_count", 1, 1024, true, 0));
  SNIPER_ASSIGN_OR_RETURN(c.n_mel, get_int_range(f, "clip.audio.num_mel_bins", 1, 256, true, 0));
  SNIPER_ASSIGN_OR_RETURN(int64_t proj_dim, get_int_range(f, "clip.audio.projection_dim", 0, kMaxWidth, true, 0));
  (void)proj_dim;  // required by mtmd; the output width comes from mm.a.input_projection
  SNIPER_ASSIGN_OR_RETURN(double eps, f.get_float("clip.audio.attention.layer_norm_epsilon"));
  if (!(eps > 0.0 && eps < 1.0)) {
    return make_error("projector key clip.audio.attention.layer_norm_epsilon is %g but must be in (0, 1)", eps);
  }
  c.eps = 1e-6f;  // as mtmd: every gemma4a model uses 1e-6 whatever the file says
  if (c.n_embd % 2 != 0) {
    return make_error("projector width clip.audio.embedding_length (%lld) must be even (sinusoidal positions)",
                      static_cast<long long>(c.n_embd));
  }
  return c;
}

Result<AudioWeights> bind_audio_weights(const AudioConfig& c, const TensorLookup& find) {
  Binder b(find);
  AudioWeights w;
  const int64_t E = c.n_embd, F = c.n_ff, Q = c.q_dim(), D = c.head_dim;
  int64_t cin = 1, freq = c.n_mel;
  for (int i = 0; i < 2; ++i) {
    const std::string name = "a.conv1d." + std::to_string(i) + ".weight";
    const QTensor* t = find(name);
    if (t == nullptr) return make_error("projector tensor %s is missing", name.c_str());
    const int64_t cout = t->ne[3];
    if (cout < 1 || cout > 4096) {
      return make_error("projector tensor %s has shape %s but must be [3, 3, %lld, C] with C in [1, 4096]",
                        name.c_str(), shape_string(t->ne).c_str(), static_cast<long long>(cin));
    }
    SNIPER_TRY(b.bind(w.conv_w[i], name, {3, 3, cin, cout}, Kind::kF32));
    const std::string base = "a.conv1d." + std::to_string(i);
    SNIPER_TRY(b.bind(w.conv_b[i], base + ".bias", {cout, 1, 1, 1}, Kind::kF32, true));
    SNIPER_TRY(b.bind(w.conv_norm[i], base + ".norm.weight", {cout, 1, 1, 1}, Kind::kF32, true));
    w.channels[i] = cout;
    cin = cout;
    freq = (freq - 1) / 2 + 1;
    if (w.conv_b[i].row_bytes != 0 && freq % cout != 0) {
      // mtmd adds the [C] bias to the [F, T, C] output, which ggml broadcasts along F: only when
      // C divides F (llama.cpp aborts otherwise; Gemma 4's converted files have no conv bias).
      return make_error(
          "projector tensor %s.bias: a conv bias over %lld channels needs the %lld mel bins after the "
          "conv to be a multiple of it (as llama.cpp adds it)",
          base.c_str(), static_cast<long long>(cout), static_cast<long long>(freq));
    }
  }
  w.freq = freq;
  const int64_t flat = cin * freq;
  SNIPER_TRY(b.bind(w.inp_proj, "a.input_projection.weight", {flat, E, 1, 1}, Kind::kMatrix));
  SNIPER_TRY(b.bind(w.inp_proj_b, "a.input_projection.bias", {E, 1, 1, 1}, Kind::kF32, true));
  SNIPER_ASSIGN_OR_RETURN(w.clamp_inp_proj, b.clamp("a.input_projection.weight"));
  int64_t P = E;
  if (const QTensor* op = find("a.pre_encode.out.weight"); op != nullptr) {
    P = std::max<int64_t>(op->ne[1], 1);
    SNIPER_TRY(b.bind(w.out_proj, "a.pre_encode.out.weight", {E, P, 1, 1}, Kind::kMatrix));
    SNIPER_TRY(b.bind(w.out_proj_b, "a.pre_encode.out.bias", {P, 1, 1, 1}, Kind::kF32, true));
    SNIPER_ASSIGN_OR_RETURN(w.clamp_out_proj, b.clamp("a.pre_encode.out.weight"));
  }
  SNIPER_TRY(b.bind(w.soft_emb_norm, "mm.a.soft_emb_norm.weight", {P, 1, 1, 1}, Kind::kF32, true));
  const QTensor* mm = find("mm.a.input_projection.weight");
  if (mm == nullptr) return make_error("projector tensor mm.a.input_projection.weight is missing");
  SNIPER_TRY(
      b.bind(w.mm_proj, "mm.a.input_projection.weight", {P, std::max<int64_t>(mm->ne[1], 1), 1, 1}, Kind::kMatrix));
  SNIPER_ASSIGN_OR_RETURN(w.clamp_mm_proj, b.clamp("mm.a.input_projection.weight"));
  w.layers.resize(static_cast<size_t>(c.n_layers));
  const std::array<int64_t, 4> vecE{E, 1, 1, 1};
  for (int64_t l = 0; l < c.n_layers; ++l) {
    AudioLayerWeights& L = w.layers[static_cast<size_t>(l)];
    SNIPER_TRY(b.bind(L.ffn_norm, ablk(l, "ffn_norm.weight"), vecE, Kind::kF32));
    SNIPER_TRY(b.bind(L.ffn_up, ablk(l, "ffn_up.weight"), {E, F, 1, 1}, Kind::kMatrix));
    SNIPER_TRY(b.bind(L.ffn_down, ablk(l, "ffn_down.weight"), {F, E, 1, 1}, Kind::kMatrix));
    SNIPER_TRY(b.bind(L.ffn_post_norm, ablk(l, "ffn_post_norm.weight"), vecE, Kind::kF32, true));
    SNIPER_TRY(b.bind(L.attn_norm, ablk(l, "attn_pre_norm.weight"), vecE, Kind::kF32, true));
    if (L.attn_norm.row_bytes == 0) SNIPER_TRY(b.bind(L.attn_norm, ablk(l, "ln1.weight"), vecE, Kind::kF32, true));
    SNIPER_TRY(b.bind(L.q, ablk(l, "attn_q.weight"), {E, Q, 1, 1}, Kind::kMatrix));
    SNIPER_TRY(b.bind(L.k, ablk(l, "attn_k.weight"), {E, Q, 1, 1}, Kind::kMatrix));
    SNIPER_TRY(b.bind(L.v, ablk(l, "attn_v.weight"), {E, Q, 1, 1}, Kind::kMatrix));
    SNIPER_TRY(b.bind(L.o, ablk(l, "attn_out.weight"), {Q, E, 1, 1}, Kind::kMatrix));
    SNIPER_TRY(b.bind(L.o_b, ablk(l, "attn_out.bias"), vecE, Kind::kF32, true));
    SNIPER_TRY(b.bind(L.per_dim_scale, ablk(l, "per_dim_scale.weight"), {D, 1, 1, 1}, Kind::kF32, true));
    SNIPER_TRY(b.bind(L.per_dim_k_scale, ablk(l, "per_dim_k_scale.weight"), {D, 1, 1, 1}, Kind::kF32, true));
    SNIPER_TRY(b.bind(L.k_rel, ablk(l, "attn_k_rel.weight"), {E, Q, 1, 1}, Kind::kMatrix, true));
    SNIPER_TRY(b.bind(L.attn_post_norm, ablk(l, "attn_post_norm.weight"), vecE, Kind::kF32, true));
    // The converter swaps the conv module's norms: conv_norm is the pre-norm, norm_conv the one
    // after the depthwise conv (clip.cpp loads them crosswise too).
    SNIPER_TRY(b.bind(L.conv_pre_norm, ablk(l, "conv_norm.weight"), vecE, Kind::kF32));
    SNIPER_TRY(b.bind(L.conv_pw1, ablk(l, "conv_pw1.weight"), {E, 2 * E, 1, 1}, Kind::kMatrix));
    SNIPER_TRY(b.bind(L.conv_dw, ablk(l, "conv_dw.weight"), {c.conv_kernel, E, 1, 1}, Kind::kF32));
    SNIPER_TRY(b.bind(L.conv_dw_b, ablk(l, "conv_dw.bias"), vecE, Kind::kF32, true));
    SNIPER_TRY(b.bind(L.conv_norm, ablk(l, "norm_conv.weight"), vecE, Kind::kF32, true));
    SNIPER_TRY(b.bind(L.conv_pw2, ablk(l, "conv_pw2.weight"), {E, E, 1, 1}, Kind::kMatrix));
    SNIPER_TRY(b.bind(L.ffn_norm_1, ablk(l, "ffn_norm_1.weight"), vecE, Kind::kF32));
    SNIPER_TRY(b.bind(L.ffn_up_1, ablk(l, "ffn_up_1.weight"), {E, F, 1, 1}, Kind::kMatrix));
    SNIPER_TRY(b.bind(L.ffn_down_1, ablk(l, "ffn_down_1.weight"), {F, E, 1, 1}, Kind::kMatrix));
    SNIPER_TRY(b.bind(L.ffn_post_norm_1, ablk(l, "ffn_post_norm_1.weight"), vecE, Kind::kF32, true));
    SNIPER_TRY(b.bind(L.out_norm, ablk(l, "ln2.weight"), vecE, Kind::kF32, true));
    SNIPER_ASSIGN_OR_RETURN(L.clamp_ffn_up, b.clamp(ablk(l, "ffn_up.weight")));
    SNIPER_ASSIGN_OR_RETURN(L.clamp_ffn_down, b.clamp(ablk(l, "ffn_down.weight")));
    SNIPER_ASSIGN_OR_RETURN(L.clamp_q, b.clamp(ablk(l, "attn_q.weight")));
    SNIPER_ASSIGN_OR_RETURN(L.clamp_k, b.clamp(ablk(l, "attn_k.weight")));
    SNIPER_ASSIGN_OR_RETURN(L.clamp_v, b.clamp(ablk(l, "attn_v.weight")));
    SNIPER_ASSIGN_OR_RETURN(L.clamp_o, b.clamp(ablk(l, "attn_out.weight")));
    SNIPER_ASSIGN_OR_RETURN(L.clamp_pw1, b.clamp(ablk(l, "conv_pw1.weight")));
    SNIPER_ASSIGN_OR_RETURN(L.clamp_pw2, b.clamp(ablk(l, "conv_pw2.weight")));
    SNIPER_ASSIGN_OR_RETURN(L.clamp_ffn_up_1, b.clamp(ablk(l, "ffn_up_1.weight")));
    SNIPER_ASSIGN_OR_RETURN(L.clamp_ffn_down_1, b.clamp(ablk(l, "ffn_down_1.weight")));
  }
  if (b.has(ablk(c.n_layers, "attn_q.weight"))) {
    return make_error("projector has an audio layer %lld but clip.audio.block_count is %lld",
                      static_cast<long long>(c.n_layers), static_cast<long long>(c.n_layers));
  }
  return w;
}

}  // namespace sniper
