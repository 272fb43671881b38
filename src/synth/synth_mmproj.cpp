// SPDX-License-Identifier: MIT
#include "synth/synth_mmproj.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "base/fp16.h"
#include "gguf/writer.h"
#include "quant/quant.h"
#include "synth/synth_rng.h"

namespace sniper {

namespace {

struct MatrixType {
  const char* name;
  GgmlType type;
};
constexpr MatrixType kTypes[] = {{"f32", GgmlType::kF32},   {"f16", GgmlType::kF16},   {"bf16", GgmlType::kBF16},
                                 {"q8_0", GgmlType::kQ8_0}, {"q4_0", GgmlType::kQ4_0}, {"q4_1", GgmlType::kQ4_1},
                                 {"q5_0", GgmlType::kQ5_0}, {"q5_1", GgmlType::kQ5_1}, {"q4_k", GgmlType::kQ4_K},
                                 {"q5_k", GgmlType::kQ5_K}, {"q6_k", GgmlType::kQ6_K}};

const MatrixType* find_type(std::string_view name) {
  for (const MatrixType& t : kTypes) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

// Normal floats of one tensor: the stream is seeded by (seed, name).
std::vector<float> normals(const std::string& name, uint64_t seed, size_t n, float scale, float mean = 0.0f) {
  SynthRng rng{synth_tensor_seed(name, seed)};
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i += 2) {
    float a, b;
    rng.normal_pair(&a, &b);
    v[i] = mean + scale * a;
    if (i + 1 < n) v[i + 1] = mean + scale * b;
  }
  return v;
}

class Writer {
 public:
  Writer(const SynthMmprojSpec& s, GgufWriter& w) : s_(s), w_(w) {}

  // A tensor of `type` filled from normal(mean, scale) floats (ne in ggml order).
  void add(const std::string& name, GgmlType type, std::vector<int64_t> ne, float scale, float mean = 0.0f) {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    const uint64_t seed = s_.seed;
    w_.add_tensor(name, type, ne, [name, type, n, ne, scale, mean, seed](uint8_t* dst, size_t nbytes) {
      const std::vector<float> v = normals(name, seed, static_cast<size_t>(n), scale, mean);
      if (type == GgmlType::kF32) {
        std::memcpy(dst, v.data(), nbytes);
      } else if (type == GgmlType::kF16) {
        auto* h = reinterpret_cast<fp16_t*>(dst);
        for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(v[static_cast<size_t>(i)]);
      } else {
        const int64_t row = ne[0], rows = n / row;
        const size_t rb = row_bytes(type, row);
        for (int64_t r = 0; r < rows; ++r)
          quantize_row_ref(type, v.data() + r * row, dst + rb * static_cast<size_t>(r), row);
      }
    });
  }
  void matrix(const std::string& name, int64_t in, int64_t out, float scale) {
    add(name, matrix_type_, {in, out}, scale);
  }
  void norm(const std::string& name, int64_t n) { add(name, GgmlType::kF32, {n}, 0.1f, 1.0f); }
  void bias(const std::string& name, int64_t n) { add(name, GgmlType::kF32, {n}, 0.05f); }

  GgmlType matrix_type_ = GgmlType::kF32;

 private:
  const SynthMmprojSpec& s_;
  GgufWriter& w_;
};

std::string blk(int64_t l, const char* what) { return "v.blk." + std::to_string(l) + "." + what; }

}  // namespace

std::string synth_mmproj_preset_names() { return "gemma4-e4b, qwen3.5-35b-a3b"; }

Result<SynthMmprojSpec> synth_mmproj_preset(std::string_view name, int64_t lm_dim, std::string_view projector) {
  SynthMmprojSpec s;
  s.lm_dim = lm_dim;
  s.type = "f16";
  if (projector == "gemma4a") {
    if (name != "gemma4-e4b") {
      return make_error("unknown audio projector preset '%.*s' (known: gemma4-e4b)", static_cast<int>(name.size()),
                        name.data());
    }
    // Gemma 4 E4B's audio tower (its audio_config): 12 conformer layers of width 1024 (8 heads of
    // 128), FFN 4096, subsampling conv channels 128 and 32 over 128 mel bins, output projection
    // 1536; about 300M parameters.
    s.projector = "gemma4a";
    s.n_embd = 1024;
    s.n_layers = 12;
    s.n_heads = 8;
    s.n_ff = 4096;
    s.conv_channels[0] = 128;
    s.conv_channels[1] = 32;
    s.audio_out = 1536;
    s.conv_bias = false;
    return s;
  }
  if (name == "gemma4-e4b") {
    // Gemma 4 E4B's vision tower: 16 layers of width 768 (12 heads of 64), FFN 3072, 16x16
    // patches, 10240-row position tables, 3x3 pooling, GELU-quick (the converter writes no
    // use_gelu), about 150M parameters.
    s.projector = "gemma4v";
    s.n_embd = 768;
    s.n_layers = 16;
    s.n_heads = 12;
    s.n_ff = 3072;
    s.pos_size = 10240;
    s.act = "gelu_quick";
    return s;
  }
  if (name == "qwen3.5-35b-a3b") {
    // Qwen3.5-35B-A3B's vision tower: 27 layers of width 1152 (16 heads of 72), FFN 4304, 16x16
    // patches, a 48x48 position grid, 2x2 merger into the model's width, no deepstack.
    s.projector = "qwen3vl";
    s.n_embd = 1152;
    s.n_layers = 27;
    s.n_heads = 16;
    s.n_ff = 4304;
    s.pos_size = 48;
    return s;
  }
  return make_error("unknown projector preset '%.*s' (known: %s)", static_cast<int>(name.size()), name.data(),
                    synth_mmproj_preset_names().c_str());
}

Status validate_synth_mmproj(const SynthMmprojSpec& s) {
  if (s.projector != "gemma4v" && s.projector != "qwen3vl" && s.projector != "gemma4a") {
    return make_error("projector '%s' is not one synth writes (gemma4v, qwen3vl, gemma4a)", s.projector.c_str());
  }
  if (s.projector == "gemma4a") {
    for (int64_t c : s.conv_channels) {
      if (c < 1 || c > 1024)
        return make_error("audio conv channels %lld must be in [1, 1024]", static_cast<long long>(c));
    }
    if (s.audio_out < 1 || s.audio_out > 16384 || s.n_mel < 4 || s.n_mel > 256) {
      return make_error("audio output width %lld must be in [1, 16384] and mel bins %lld in [4, 256]",
                        static_cast<long long>(s.audio_out), static_cast<long long>(s.n_mel));
    }
    const int64_t f1 = (s.n_mel - 1) / 2 + 1, f2 = (f1 - 1) / 2 + 1;
    if (s.conv_bias && (f1 % s.conv_channels[0] != 0 || f2 % s.conv_channels[1] != 0)) {
      return make_error(
          "audio conv biases need the channels (%lld, %lld) to divide the mel bins after each conv "
          "(%lld, %lld), as llama.cpp broadcasts them",
          static_cast<long long>(s.conv_channels[0]), static_cast<long long>(s.conv_channels[1]),
          static_cast<long long>(f1), static_cast<long long>(f2));
    }
    if (s.n_embd % 2 != 0 || s.n_heads < 1 || s.n_embd % s.n_heads != 0) {
      return make_error("audio width %lld must be even and a multiple of the %lld heads",
                        static_cast<long long>(s.n_embd), static_cast<long long>(s.n_heads));
    }
  }
  if (s.lm_dim < 1 || s.lm_dim > 65536) {
    return make_error("language model width %lld must be in [1, 65536]", static_cast<long long>(s.lm_dim));
  }
  if (s.n_embd < 8 || s.n_embd > 16384 || s.n_heads < 1 || s.n_embd % s.n_heads != 0 ||
      (s.projector != "gemma4a" && (s.n_embd / s.n_heads) % 4 != 0)) {
    return make_error("projector width %lld with %lld heads: heads must divide the width into multiples of 4",
                      static_cast<long long>(s.n_embd), static_cast<long long>(s.n_heads));
  }
  if (s.n_layers < 1 || s.n_layers > 256 || s.n_ff < 1 || s.n_ff > (1 << 20) || s.patch < 1 || s.patch > 64) {
    return make_error("projector layers %lld, ff %lld, patch %lld out of range ([1, 256], [1, 2^20], [1, 64])",
                      static_cast<long long>(s.n_layers), static_cast<long long>(s.n_ff),
                      static_cast<long long>(s.patch));
  }
  if (s.pos_size < 0 || s.pos_size > 65536) {
    return make_error("projector position size %lld must be in [0, 65536]", static_cast<long long>(s.pos_size));
  }
  if (s.act != "gelu" && s.act != "silu" && s.act != "gelu_quick") {
    return make_error("projector activation '%s' must be gelu, silu or gelu_quick", s.act.c_str());
  }
  const MatrixType* t = find_type(s.type);
  if (t == nullptr) {
    std::string known;
    for (const MatrixType& k : kTypes) known += std::string(known.empty() ? "" : ", ") + k.name;
    return make_error("projector weight type '%s' is not one synth writes (%s)", s.type.c_str(), known.c_str());
  }
  const int64_t block = get_type_info(t->type).block_size;
  const int64_t f2 = ((s.n_mel - 1) / 2) / 2 + 1;
  const int64_t widths[] = {s.n_embd, s.n_ff, s.projector == "gemma4a" ? s.conv_channels[1] * f2 : 4 * s.n_embd,
                            s.projector == "gemma4a" ? s.audio_out : s.n_embd};
  for (int64_t w : widths) {
    if (w % block != 0) {
      return make_error("projector weight type %s needs rows that are multiples of %lld; a row of %lld is not",
                        s.type.c_str(), static_cast<long long>(block), static_cast<long long>(w));
    }
  }
  return ok_status();
}

namespace {

std::string ablk(int64_t l, const char* what) { return "a.blk." + std::to_string(l) + "." + what; }

// gemma4a: the tensors clip.cpp loads for it (tensor names of clip-impl.h), conv kernels f32 as
// the converter forces them.
Result<uint64_t> write_synth_audio(const SynthMmprojSpec& s, const std::string& path) {
  const int64_t E = s.n_embd, F = s.n_ff, H = s.n_heads, D = E / H, c0 = s.conv_channels[0], c1 = s.conv_channels[1];
  const int64_t f2 = ((s.n_mel - 1) / 2) / 2 + 1, P = s.audio_out;
  GgufWriter g;
  g.set_string("general.architecture", "clip");
  g.set_string("general.name", "syn-gemma4a-seed" + std::to_string(s.seed));
  g.set_string("clip.projector_type", "gemma4a");
  g.set_string("clip.audio.projector_type", "gemma4a");
  g.set_bool("clip.has_vision_encoder", false);
  g.set_bool("clip.has_audio_encoder", true);
  g.set_u32("clip.audio.embedding_length", static_cast<uint32_t>(E));
  g.set_u32("clip.audio.feed_forward_length", static_cast<uint32_t>(F));
  g.set_u32("clip.audio.block_count", static_cast<uint32_t>(s.n_layers));
  g.set_u32("clip.audio.attention.head_count", static_cast<uint32_t>(H));
  g.set_f32("clip.audio.attention.layer_norm_epsilon", 1e-6f);
  g.set_u32("clip.audio.projection_dim", static_cast<uint32_t>(s.lm_dim));
  g.set_u32("clip.audio.num_mel_bins", static_cast<uint32_t>(s.n_mel));
  Writer w(s, g);
  w.matrix_type_ = find_type(s.type)->type;
  auto inv_sqrt = [](int64_t n) { return 1.0f / std::sqrt(static_cast<float>(n)); };
  w.add("a.conv1d.0.weight", GgmlType::kF32, {3, 3, 1, c0}, inv_sqrt(9));
  if (s.conv_bias) w.bias("a.conv1d.0.bias", c0);
  w.norm("a.conv1d.0.norm.weight", c0);
  w.add("a.conv1d.1.weight", GgmlType::kF32, {3, 3, c0, c1}, inv_sqrt(9 * c0));
  if (s.conv_bias) w.bias("a.conv1d.1.bias", c1);
  w.norm("a.conv1d.1.norm.weight", c1);
  w.matrix("a.input_projection.weight", c1 * f2, E, inv_sqrt(c1 * f2));
  for (int64_t l = 0; l < s.n_layers; ++l) {
    w.norm(ablk(l, "ffn_norm.weight"), E);
    w.matrix(ablk(l, "ffn_up.weight"), E, F, inv_sqrt(E));
    w.matrix(ablk(l, "ffn_down.weight"), F, E, inv_sqrt(F));
    w.norm(ablk(l, "ffn_post_norm.weight"), E);
    w.norm(ablk(l, "ln1.weight"), E);
    w.matrix(ablk(l, "attn_q.weight"), E, E, inv_sqrt(E));
    w.matrix(ablk(l, "attn_k.weight"), E, E, inv_sqrt(E));
    w.matrix(ablk(l, "attn_v.weight"), E, E, inv_sqrt(E));
    w.matrix(ablk(l, "attn_out.weight"), E, E, inv_sqrt(E));
    w.bias(ablk(l, "attn_out.bias"), E);
    w.norm(ablk(l, "per_dim_scale.weight"), D);
    w.norm(ablk(l, "per_dim_k_scale.weight"), D);
    w.matrix(ablk(l, "attn_k_rel.weight"), E, E, inv_sqrt(E));
    w.norm(ablk(l, "attn_post_norm.weight"), E);
    w.norm(ablk(l, "conv_norm.weight"), E);
    w.matrix(ablk(l, "conv_pw1.weight"), E, 2 * E, inv_sqrt(E));
    w.add(ablk(l, "conv_dw.weight"), GgmlType::kF32, {5, E}, inv_sqrt(5));
    w.bias(ablk(l, "conv_dw.bias"), E);
    w.norm(ablk(l, "norm_conv.weight"), E);
    w.matrix(ablk(l, "conv_pw2.weight"), E, E, inv_sqrt(E));
    w.norm(ablk(l, "ffn_norm_1.weight"), E);
    w.matrix(ablk(l, "ffn_up_1.weight"), E, F, inv_sqrt(E));
    w.matrix(ablk(l, "ffn_down_1.weight"), F, E, inv_sqrt(F));
    w.norm(ablk(l, "ffn_post_norm_1.weight"), E);
    w.norm(ablk(l, "ln2.weight"), E);
  }
  w.matrix("a.pre_encode.out.weight", E, P, inv_sqrt(E));
  w.bias("a.pre_encode.out.bias", P);
  w.norm("mm.a.soft_emb_norm.weight", P);
  w.matrix("mm.a.input_projection.weight", P, s.lm_dim, inv_sqrt(P));
  SNIPER_TRY(g.write(path));
  return g.file_bytes();
}

}  // namespace

Result<uint64_t> write_synth_mmproj(const SynthMmprojSpec& s, const std::string& path) {
  SNIPER_TRY(validate_synth_mmproj(s));
  if (s.projector == "gemma4a") return write_synth_audio(s, path);
  const bool gemma = s.projector == "gemma4v";
  const int64_t E = s.n_embd, F = s.n_ff, P = s.patch, H = s.n_heads, D = E / H;
  const int64_t pos = s.pos_size > 0 ? s.pos_size : (gemma ? 64 : 16);
  GgufWriter g;
  g.set_string("general.architecture", "clip");
  g.set_string("general.name", "syn-" + s.projector + "-seed" + std::to_string(s.seed));
  g.set_string("clip.projector_type", gemma ? "gemma4v" : "qwen3vl_merger");
  g.set_bool("clip.has_vision_encoder", true);
  g.set_bool("clip.has_audio_encoder", false);
  if (s.act == "gelu") g.set_bool("clip.use_gelu", true);
  if (s.act == "silu") g.set_bool("clip.use_silu", true);
  g.set_u32("clip.vision.embedding_length", static_cast<uint32_t>(E));
  g.set_u32("clip.vision.feed_forward_length", static_cast<uint32_t>(F));
  g.set_u32("clip.vision.block_count", static_cast<uint32_t>(s.n_layers));
  g.set_u32("clip.vision.attention.head_count", static_cast<uint32_t>(H));
  g.set_f32("clip.vision.attention.layer_norm_epsilon", 1e-6f);
  g.set_u32("clip.vision.image_size", 224);
  g.set_u32("clip.vision.patch_size", static_cast<uint32_t>(P));
  g.set_u32("clip.vision.projection_dim", static_cast<uint32_t>(s.lm_dim));
  if (gemma) {
    g.set_f32_array("clip.vision.image_mean", {0.0f, 0.0f, 0.0f});
    g.set_f32_array("clip.vision.image_std", {1.0f, 1.0f, 1.0f});
  } else {
    g.set_u32("clip.vision.spatial_merge_size", 2);
    g.set_f32_array("clip.vision.image_mean", {0.5f, 0.5f, 0.5f});
    g.set_f32_array("clip.vision.image_std", {0.5f, 0.5f, 0.5f});
  }
  Writer w(s, g);
  w.matrix_type_ = find_type(s.type)->type;
  const GgmlType kernel_type = w.matrix_type_ == GgmlType::kF32 ? GgmlType::kF32 : GgmlType::kF16;
  const float mscale = 1.0f / std::sqrt(static_cast<float>(E));  // keeps activations O(1) at any width
  if (gemma) {
    w.add("v.patch_embd.weight", kernel_type, {P, P, 3, E}, 0.05f);
    w.add("v.position_embd.weight", GgmlType::kF32, {E, pos, 2}, 0.1f);
    for (int64_t l = 0; l < s.n_layers; ++l) {
      w.matrix(blk(l, "attn_q.weight"), E, E, mscale);
      w.matrix(blk(l, "attn_k.weight"), E, E, mscale);
      w.matrix(blk(l, "attn_v.weight"), E, E, mscale);
      w.matrix(blk(l, "attn_out.weight"), E, E, mscale);
      w.norm(blk(l, "attn_q_norm.weight"), D);
      w.norm(blk(l, "attn_k_norm.weight"), D);
      w.norm(blk(l, "ln1.weight"), E);
      w.norm(blk(l, "ln2.weight"), E);
      w.norm(blk(l, "attn_post_norm.weight"), E);
      w.norm(blk(l, "ffn_post_norm.weight"), E);
      w.matrix(blk(l, "ffn_gate.weight"), E, F, mscale);
      w.matrix(blk(l, "ffn_up.weight"), E, F, mscale);
      w.matrix(blk(l, "ffn_down.weight"), F, E, 1.0f / std::sqrt(static_cast<float>(F)));
      w.add(blk(l, "out_scale.weight"), GgmlType::kF32, {1}, 0.2f, 1.0f);
    }
    w.matrix("mm.input_projection.weight", E, s.lm_dim, mscale);
  } else {
    w.add("v.patch_embd.weight", kernel_type, {P, P, 3, E}, 0.05f);
    w.add("v.patch_embd.weight.1", kernel_type, {P, P, 3, E}, 0.05f);
    w.bias("v.patch_embd.bias", E);
    w.add("v.position_embd.weight", GgmlType::kF32, {E, pos * pos}, 0.1f);
    for (int64_t l = 0; l < s.n_layers; ++l) {
      w.norm(blk(l, "ln1.weight"), E);
      w.bias(blk(l, "ln1.bias"), E);
      w.matrix(blk(l, "attn_qkv.weight"), E, 3 * E, mscale);
      w.bias(blk(l, "attn_qkv.bias"), 3 * E);
      w.matrix(blk(l, "attn_out.weight"), E, E, mscale);
      w.bias(blk(l, "attn_out.bias"), E);
      w.norm(blk(l, "ln2.weight"), E);
      w.bias(blk(l, "ln2.bias"), E);
      w.matrix(blk(l, "ffn_up.weight"), E, F, mscale);
      w.bias(blk(l, "ffn_up.bias"), F);
      w.matrix(blk(l, "ffn_down.weight"), F, E, 1.0f / std::sqrt(static_cast<float>(F)));
      w.bias(blk(l, "ffn_down.bias"), E);
    }
    w.norm("v.post_ln.weight", E);
    w.bias("v.post_ln.bias", E);
    w.matrix("mm.0.weight", 4 * E, 4 * E, 0.5f / std::sqrt(static_cast<float>(E)));
    w.bias("mm.0.bias", 4 * E);
    w.matrix("mm.2.weight", 4 * E, s.lm_dim, 0.5f / std::sqrt(static_cast<float>(E)));
    w.bias("mm.2.bias", s.lm_dim);
  }
  SNIPER_TRY(g.write(path));
  return g.file_bytes();
}

}  // namespace sniper
