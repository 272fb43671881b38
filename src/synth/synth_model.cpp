// SPDX-License-Identifier: MIT
// Synthetic model writer. Tensor order and names follow llama.cpp's converters; each tensor's
// random stream is seeded from (seed, tensor name), so files are reproducible and tensors can
// be generated independently.
#include "synth/synth_model.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/arch/arch.h"
#include "model/tensor_names.h"
#include "quant/quant.h"
#include "synth/synth_vocab.h"

namespace sniper {

namespace {

// splitmix64: a tiny, high-quality, portable generator.
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  // Box-Muller; both outputs are used.
  void normal_pair(float* a, float* b) {
    double u1 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double t = 6.283185307179586 * uniform();
    *a = static_cast<float>(r * std::cos(t));
    *b = static_cast<float>(r * std::sin(t));
  }
};

uint64_t hash_name(const std::string& s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

struct TypeName {
  const char* name;
  GgmlType type;
};
constexpr TypeName kPlainTypes[] = {
    {"f32", GgmlType::kF32},     {"f16", GgmlType::kF16},     {"bf16", GgmlType::kBF16},   {"q8_0", GgmlType::kQ8_0},
    {"q4_0", GgmlType::kQ4_0},   {"q4_1", GgmlType::kQ4_1},   {"q5_0", GgmlType::kQ5_0},   {"q5_1", GgmlType::kQ5_1},
    {"q2_k", GgmlType::kQ2_K},   {"q3_k", GgmlType::kQ3_K},   {"q4_k", GgmlType::kQ4_K},   {"q5_k", GgmlType::kQ5_K},
    {"q6_k", GgmlType::kQ6_K},   {"iq4_nl", GgmlType::kIQ4_NL}, {"iq4_xs", GgmlType::kIQ4_XS},
};

// A quant mix: the base type and the type for the "more bits" tensors (output head, attn_v
// and ffn_down of the layers llama.cpp's *_M mixes upgrade).
struct Mix {
  const char* name;
  GgmlType base;
  GgmlType more;
};
constexpr Mix kMixes[] = {
    {"q4_k_m", GgmlType::kQ4_K, GgmlType::kQ6_K},
    {"q5_k_m", GgmlType::kQ5_K, GgmlType::kQ6_K},
    {"q3_k_m", GgmlType::kQ3_K, GgmlType::kQ5_K},
};

struct TypePlan {
  GgmlType base;
  GgmlType more;
  bool is_mix;
};

Result<TypePlan> resolve_type(const std::string& name) {
  for (const TypeName& t : kPlainTypes) {
    if (name == t.name) return TypePlan{t.type, t.type, false};
  }
  for (const Mix& m : kMixes) {
    if (name == m.name) return TypePlan{m.base, m.more, true};
  }
  std::string known;
  for (const TypeName& t : kPlainTypes) known += std::string(known.empty() ? "" : ", ") + t.name;
  for (const Mix& m : kMixes) known += std::string(", ") + m.name;
  return make_error("--type is '%s' but must be one of: %s", name.c_str(), known.c_str());
}

// llama.cpp's use_more_bits(i, n): the first and last eighth, and every third layer between.
bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// A row length must be a whole number of blocks; otherwise fall back like llama.cpp does.
GgmlType fit_type(GgmlType t, int64_t row) {
  if (row % get_type_info(t).block_size == 0) return t;
  if (row % 32 == 0) return GgmlType::kQ8_0;
  return GgmlType::kF16;
}

struct TensorPlan {
  std::string name;
  GgmlType type;
  std::vector<int64_t> ne;
  bool is_norm;
};

}  // namespace

Status validate_synth_spec(const SynthSpec& s) {
  const ArchSpec* arch = find_arch(s.arch);
  if (arch == nullptr) return make_error("--arch is '%s' but must be one of: llama, qwen2, qwen3, qwen3moe", s.arch.c_str());
  auto check = [](const char* name, int64_t v, int64_t lo, int64_t hi) -> Status {
    if (v < lo || v > hi) {
      return make_error("%s is %ld but must be in [%ld, %ld]", name, static_cast<long>(v), static_cast<long>(lo),
                        static_cast<long>(hi));
    }
    return ok_status();
  };
  SNIPER_TRY(check("--dim", s.dim, 32, 65536));
  SNIPER_TRY(check("--layers", s.n_layers, 1, 1024));
  SNIPER_TRY(check("--heads", s.n_heads, 1, 1024));
  SNIPER_TRY(check("--kv-heads", s.n_kv_heads, 1, s.n_heads));
  SNIPER_TRY(check("--head-dim", s.head_dim, 2, 1024));
  if (s.n_heads % s.n_kv_heads != 0) return make_error("--heads (%ld) must be a multiple of --kv-heads (%ld)", static_cast<long>(s.n_heads), static_cast<long>(s.n_kv_heads));
  if (s.head_dim % 2 != 0) return make_error("--head-dim is %ld but must be even", static_cast<long>(s.head_dim));
  SNIPER_TRY(check("--ctx", s.n_ctx, 1, int64_t{1} << 24));
  if (s.vocab_from.empty()) SNIPER_TRY(check("--vocab", s.vocab_size, kMinSynthVocab, int64_t{1} << 22));
  const bool moe = s.n_experts > 0;
  if (arch->requires_moe && !moe) return make_error("--arch %s needs --experts > 0", s.arch.c_str());
  if (moe && !arch->allow_moe) return make_error("--arch %s has no experts; drop --experts", s.arch.c_str());
  if (moe) {
    SNIPER_TRY(check("--experts", s.n_experts, 1, 4096));
    SNIPER_TRY(check("--experts-active", s.n_experts_active, 1, s.n_experts));
    if (s.arch == "qwen3moe") SNIPER_TRY(check("--expert-ff", s.expert_hidden_dim, 1, 1 << 20));
  }
  SNIPER_TRY(check("--ff", s.hidden_dim, 1, 1 << 20));
  if (!(s.rope_base > 1.0f)) return make_error("--rope-base is %g but must be > 1", static_cast<double>(s.rope_base));
  if (!(s.norm_eps > 0.0f && s.norm_eps < 1.0f)) return make_error("--eps is %g but must be in (0, 1)", static_cast<double>(s.norm_eps));
  auto type = resolve_type(s.type);
  if (!type.ok()) return type.error();
  return ok_status();
}

Status write_synth_model(const SynthSpec& s, const std::string& path,
                         const std::function<void(uint64_t, uint64_t)>& progress) {
  SNIPER_TRY(validate_synth_spec(s));
  const TypePlan tp = resolve_type(s.type).value();
  const ArchSpec* arch = find_arch(s.arch);
  const bool moe = s.n_experts > 0;
  const int64_t ff_exp = s.arch == "qwen3moe" ? s.expert_hidden_dim : s.hidden_dim;

  GgufWriter w;
  const std::string p = s.arch + ".";
  w.set_string("general.architecture", s.arch);
  w.set_string("general.name", "sniper-synth-" + s.arch);
  w.set_u32(p + "context_length", static_cast<uint32_t>(s.n_ctx));
  w.set_u32(p + "embedding_length", static_cast<uint32_t>(s.dim));
  w.set_u32(p + "block_count", static_cast<uint32_t>(s.n_layers));
  w.set_u32(p + "feed_forward_length", static_cast<uint32_t>(s.hidden_dim));
  w.set_u32(p + "attention.head_count", static_cast<uint32_t>(s.n_heads));
  w.set_u32(p + "attention.head_count_kv", static_cast<uint32_t>(s.n_kv_heads));
  w.set_u32(p + "attention.key_length", static_cast<uint32_t>(s.head_dim));
  w.set_u32(p + "attention.value_length", static_cast<uint32_t>(s.head_dim));
  w.set_u32(p + "rope.dimension_count", static_cast<uint32_t>(s.head_dim));
  w.set_f32(p + "rope.freq_base", s.rope_base);
  w.set_f32(p + "attention.layer_norm_rms_epsilon", s.norm_eps);
  if (moe) {
    w.set_u32(p + "expert_count", static_cast<uint32_t>(s.n_experts));
    w.set_u32(p + "expert_used_count", static_cast<uint32_t>(s.n_experts_active));
    if (s.arch == "qwen3moe") w.set_u32(p + "expert_feed_forward_length", static_cast<uint32_t>(ff_exp));
  }
  int64_t vocab = s.vocab_size;
  if (!s.vocab_from.empty()) {
    auto src = gguf_open(s.vocab_from);
    if (!src.ok()) return make_error("--vocab-from %s: %s", s.vocab_from.c_str(), src.error().message.c_str());
    auto tokens = src->get_string_array("tokenizer.ggml.tokens");
    if (!tokens.ok()) return make_error("--vocab-from %s: %s", s.vocab_from.c_str(), tokens.error().message.c_str());
    vocab = static_cast<int64_t>((*tokens)->size());
    for (const auto& [key, value] : src->metadata()) {
      if (key.rfind("tokenizer.", 0) == 0) w.set_value(key, value);
    }
  } else {
    const SynthVocab v = make_synth_vocab(s.vocab_size);
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string("tokenizer.ggml.pre", "default");
    w.set_string_array("tokenizer.ggml.tokens", v.tokens);
    w.set_f32_array("tokenizer.ggml.scores", v.scores);
    w.set_i32_array("tokenizer.ggml.token_type", v.types);
    w.set_u32("tokenizer.ggml.bos_token_id", 1);
    w.set_u32("tokenizer.ggml.eos_token_id", 2);
    w.set_u32("tokenizer.ggml.unknown_token_id", 0);
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    w.set_bool("tokenizer.ggml.add_eos_token", false);
  }

  std::vector<TensorPlan> plan;
  auto matrix = [&](const std::string& name, std::vector<int64_t> ne, GgmlType t) {
    plan.push_back({name, fit_type(t, ne[0]), std::move(ne), false});
  };
  auto norm = [&](const std::string& name, int64_t n) { plan.push_back({name, GgmlType::kF32, {n}, true}); };
  auto vec = [&](const std::string& name, int64_t n) { plan.push_back({name, GgmlType::kF32, {n}, false}); };
  const int64_t q_dim = s.n_heads * s.head_dim, kv_dim = s.n_kv_heads * s.head_dim;
  matrix(kTokenEmbdName, {s.dim, vocab}, tp.base);
  norm(kOutputNormName, s.dim);
  matrix(kOutputName, {s.dim, vocab}, tp.is_mix ? GgmlType::kQ6_K : tp.base);
  for (int64_t l = 0; l < s.n_layers; ++l) {
    auto n = [l](LayerTensor k) { return layer_tensor_name(l, k); };
    const GgmlType more = use_more_bits(l, s.n_layers) ? tp.more : tp.base;
    norm(n(LayerTensor::kAttnNorm), s.dim);
    matrix(n(LayerTensor::kAttnQ), {s.dim, q_dim}, tp.base);
    matrix(n(LayerTensor::kAttnK), {s.dim, kv_dim}, tp.base);
    matrix(n(LayerTensor::kAttnV), {s.dim, kv_dim}, more);
    matrix(n(LayerTensor::kAttnOutput), {q_dim, s.dim}, tp.base);
    if (arch->qkv_bias) {
      vec(n(LayerTensor::kAttnQBias), q_dim);
      vec(n(LayerTensor::kAttnKBias), kv_dim);
      vec(n(LayerTensor::kAttnVBias), kv_dim);
    }
    if (arch->qk_norm) {
      norm(n(LayerTensor::kAttnQNorm), s.head_dim);
      norm(n(LayerTensor::kAttnKNorm), s.head_dim);
    }
    norm(n(LayerTensor::kFfnNorm), s.dim);
    if (moe) {
      matrix(n(LayerTensor::kFfnGateInp), {s.dim, s.n_experts}, GgmlType::kF32);
      matrix(n(LayerTensor::kFfnGateExps), {s.dim, ff_exp, s.n_experts}, tp.base);
      matrix(n(LayerTensor::kFfnUpExps), {s.dim, ff_exp, s.n_experts}, tp.base);
      matrix(n(LayerTensor::kFfnDownExps), {ff_exp, s.dim, s.n_experts}, more);
    } else {
      matrix(n(LayerTensor::kFfnGate), {s.dim, s.hidden_dim}, tp.base);
      matrix(n(LayerTensor::kFfnUp), {s.dim, s.hidden_dim}, tp.base);
      matrix(n(LayerTensor::kFfnDown), {s.hidden_dim, s.dim}, more);
    }
  }

  uint64_t total = 0;
  for (const TensorPlan& t : plan) {
    int64_t n_el = 1;
    for (int64_t d : t.ne) n_el *= d;
    total += row_bytes(t.type, t.ne[0]) * static_cast<uint64_t>(n_el / t.ne[0]);
  }
  auto done = std::make_shared<uint64_t>(0);
  for (const TensorPlan& t : plan) {
    const uint64_t seed = hash_name(t.name, s.seed);
    w.add_tensor(t.name, t.type, t.ne, [t, seed, done, total, progress](uint8_t* dst, size_t nbytes) {
      Rng rng{seed};
      const int64_t row = t.ne[0];
      const size_t rb = row_bytes(t.type, row);
      const int64_t n_rows = static_cast<int64_t>(nbytes / rb);
      std::vector<float> buf(static_cast<size_t>(row + 1));
      for (int64_t r = 0; r < n_rows; ++r) {
        for (int64_t i = 0; i < row; i += 2) rng.normal_pair(&buf[static_cast<size_t>(i)], &buf[static_cast<size_t>(i + 1)]);
        for (int64_t i = 0; i < row; ++i) {
          float& x = buf[static_cast<size_t>(i)];
          x = t.is_norm ? 1.0f + 0.1f * x : 0.02f * x;
        }
        quantize_row_ref(t.type, buf.data(), dst + rb * static_cast<size_t>(r), row);
      }
      *done += nbytes;
      if (progress) progress(*done, total);
    });
  }
  return w.write(path);
}

}  // namespace sniper
