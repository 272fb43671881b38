// SPDX-License-Identifier: MIT
// Synthetic model writer. Tensor order and names follow llama.cpp's converters, tensor types
// llama.cpp's quantization mixes (synth_mix.h). Each tensor is generated in fixed chunks of
// rows, each chunk from its own random stream seeded by (seed, tensor name, chunk index), on a
// thread pool; the bytes do not depend on the thread count.
#include "synth/synth_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/check.h"
#include "base/thread_pool.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/arch/arch.h"
#include "model/tensor_names.h"
#include "quant/quant.h"
#include "synth/synth_blocks.h"
#include "synth/synth_mix.h"
#include "synth/synth_plan.h"
#include "synth/synth_rng.h"
#include "synth/synth_vocab.h"

namespace sniper {

namespace {

std::string read_text_file(const std::string& path, bool* ok) {
  std::ifstream f(path, std::ios::binary);
  *ok = static_cast<bool>(f);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A special token named in tokenizer_config.json: a string or {"content": "..."}.
std::string token_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return "";
}

// Sets tokenizer.chat_template (and the bos/eos ids the config names) from a
// tokenizer_config.json, or the template alone from a raw Jinja file.
Status apply_chat_template(const std::string& path, const std::vector<std::string>& tokens, GgufWriter& w) {
  bool ok = false;
  const std::string text = read_text_file(path, &ok);
  if (!ok) return make_error("--chat-template: cannot read '%s'", path.c_str());
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    w.set_string("tokenizer.chat_template", text);  // a raw template
    return ok_status();
  }
  if (!j.contains("chat_template") || !j["chat_template"].is_string()) {
    return make_error("--chat-template: '%s' has no string field chat_template", path.c_str());
  }
  w.set_string("tokenizer.chat_template", j["chat_template"].get<std::string>());
  for (const char* field : {"bos_token", "eos_token"}) {
    if (!j.contains(field)) continue;
    const std::string name = token_text(j[field]);
    if (name.empty()) continue;
    const auto it = std::find(tokens.begin(), tokens.end(), name);
    if (it == tokens.end()) return make_error("--chat-template: %s '%s' is not in the vocabulary", field, name.c_str());
    w.set_u32(std::string("tokenizer.ggml.") + field + "_id", static_cast<uint32_t>(it - tokens.begin()));
  }
  return ok_status();
}

}  // namespace

namespace {

// Rows of one chunk: about this many bytes (so chunks, hence random streams, depend only on
// the tensor's shape and type).
constexpr size_t kChunkBytes = size_t{1} << 20;

// Matrices that write into the residual stream (attention output, FFN down) get std
// 0.02 / sqrt(2 * n_layers), GPT-2's initialisation. With plain 0.02 every layer adds a large
// component that is nearly the same for all tokens (random attention averages V), deep hidden
// states converge, and an MoE routes every token to the same few experts — a cache would look
// perfect. Scaled, hidden states stay token-specific and routing varies as in trained models.
float weight_std(SynthMatrix kind, int64_t n_layers) {
  // Token embeddings of unit scale keep the residual stream token-specific through deep stacks.
  if (kind == SynthMatrix::kTokenEmbd) return kSynthEmbeddingStd;
  if (kind == SynthMatrix::kAttnOutput || kind == SynthMatrix::kFfnDown) return synth_residual_std(n_layers);
  return kSynthWeightStd;
}

// Writes the metadata (architecture keys and tokenizer) and returns the vocabulary size.
Result<int64_t> add_metadata(const SynthSpec& s, const SynthTypePlan& tp, GgufWriter& w) {
  const bool moe = s.n_experts > 0;
  const std::string p = s.arch + ".";
  w.set_string("general.architecture", s.arch);
  w.set_string("general.name", "sniper-synth-" + s.arch);
  if (tp.file_type >= 0) w.set_u32("general.file_type", static_cast<uint32_t>(tp.file_type));
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
    if (s.arch == "qwen3moe") w.set_u32(p + "expert_feed_forward_length", static_cast<uint32_t>(s.expert_hidden_dim));
  }
  return synth_add_tokenizer(s, w);
}

}  // namespace

Result<int64_t> synth_add_tokenizer(const SynthSpec& s, GgufWriter& w) {
  if (!s.vocab_from.empty()) {
    auto src = gguf_open(s.vocab_from);
    if (!src.ok()) return make_error("--vocab-from %s: %s", s.vocab_from.c_str(), src.error().message.c_str());
    auto tokens = src->get_string_array("tokenizer.ggml.tokens");
    if (!tokens.ok()) return make_error("--vocab-from %s: %s", s.vocab_from.c_str(), tokens.error().message.c_str());
    for (const auto& [key, value] : src->metadata()) {
      if (key.rfind("tokenizer.", 0) == 0) w.set_value(key, value);
    }
    if (!s.chat_template_from.empty()) SNIPER_TRY(apply_chat_template(s.chat_template_from, **tokens, w));
    return static_cast<int64_t>((*tokens)->size());
  }
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
  return s.vocab_size;
}

namespace {

std::vector<PlannedTensor> make_plan(const SynthSpec& s, const SynthTypePlan& tp, int64_t vocab) {
  const ArchSpec* arch = find_arch(s.arch);
  CHECK(arch != nullptr, "unvalidated arch %s", s.arch.c_str());
  const bool moe = s.n_experts > 0;
  const int64_t ff_exp = s.arch == "qwen3moe" ? s.expert_hidden_dim : s.hidden_dim;
  std::vector<PlannedTensor> plan;
  auto add = [&](const std::string& name, GgmlType type, std::vector<int64_t> ne, SynthInit init) {
    uint64_t nbytes = row_bytes(type, ne[0]);
    for (size_t d = 1; d < ne.size(); ++d) nbytes *= static_cast<uint64_t>(ne[d]);
    plan.push_back({SynthTensor{name, type, std::move(ne), nbytes}, init});
  };
  auto matrix = [&](const std::string& name, SynthMatrix kind, int64_t layer_idx, std::vector<int64_t> ne) {
    const GgmlType type =
        synth_matrix_type(tp, kind, layer_idx, s.n_layers, s.n_experts, ne[0], s.n_heads / s.n_kv_heads);
    add(name, type, std::move(ne), SynthInit::kWeight);
    plan.back().std = weight_std(kind, s.n_layers);
  };
  auto norm = [&](const std::string& name, int64_t n) { add(name, GgmlType::kF32, {n}, SynthInit::kNorm); };
  auto f32 = [&](const std::string& name, std::vector<int64_t> ne) {
    add(name, GgmlType::kF32, std::move(ne), SynthInit::kWeight);
  };
  const int64_t q_dim = s.n_heads * s.head_dim, kv_dim = s.n_kv_heads * s.head_dim;
  matrix(kTokenEmbdName, SynthMatrix::kTokenEmbd, 0, {s.dim, vocab});
  norm(kOutputNormName, s.dim);
  matrix(kOutputName, SynthMatrix::kOutput, 0, {s.dim, vocab});
  for (int64_t l = 0; l < s.n_layers; ++l) {
    auto n = [l](const char* suffix) { return layer_tensor_name(l, suffix); };
    norm(n("attn_norm.weight"), s.dim);
    matrix(n("attn_q.weight"), SynthMatrix::kAttnQ, l, {s.dim, q_dim});
    matrix(n("attn_k.weight"), SynthMatrix::kAttnK, l, {s.dim, kv_dim});
    matrix(n("attn_v.weight"), SynthMatrix::kAttnV, l, {s.dim, kv_dim});
    matrix(n("attn_output.weight"), SynthMatrix::kAttnOutput, l, {q_dim, s.dim});
    if (arch->qkv_bias) {
      f32(n("attn_q.bias"), {q_dim});
      f32(n("attn_k.bias"), {kv_dim});
      f32(n("attn_v.bias"), {kv_dim});
    }
    if (arch->qk_norm) {
      norm(n("attn_q_norm.weight"), s.head_dim);
      norm(n("attn_k_norm.weight"), s.head_dim);
    }
    norm(n("ffn_norm.weight"), s.dim);
    if (moe) {
      // llama.cpp never quantizes the router (ffn_gate_inp).
      f32(n("ffn_gate_inp.weight"), {s.dim, s.n_experts});
      matrix(n("ffn_gate_exps.weight"), SynthMatrix::kFfnGate, l, {s.dim, ff_exp, s.n_experts});
      matrix(n("ffn_up_exps.weight"), SynthMatrix::kFfnUp, l, {s.dim, ff_exp, s.n_experts});
      matrix(n("ffn_down_exps.weight"), SynthMatrix::kFfnDown, l, {ff_exp, s.dim, s.n_experts});
    } else {
      matrix(n("ffn_gate.weight"), SynthMatrix::kFfnGate, l, {s.dim, s.hidden_dim});
      matrix(n("ffn_up.weight"), SynthMatrix::kFfnUp, l, {s.dim, s.hidden_dim});
      matrix(n("ffn_down.weight"), SynthMatrix::kFfnDown, l, {s.hidden_dim, s.dim});
    }
  }
  return plan;
}

uint64_t data_bytes(const std::vector<PlannedTensor>& plan) {
  uint64_t total = 0;
  for (const PlannedTensor& p : plan) total += p.t.nbytes;
  return total;
}

bool use_fast(SynthFill fill, uint64_t total_bytes) {
  return fill == SynthFill::kFast || (fill == SynthFill::kAuto && total_bytes > kSynthAutoFastBytes);
}

// A validated spec's metadata and plan.
struct Built {
  SynthTypePlan tp;
  int64_t vocab;
  std::vector<PlannedTensor> plan;
};

Result<Built> build(const SynthSpec& s, GgufWriter& w) {
  SNIPER_TRY(validate_synth_spec(s));
  Built b{resolve_synth_type(s.type).value(), 0, {}};
  if (s.pooling_type >= 0) w.set_u32(s.arch + ".pooling_type", static_cast<uint32_t>(s.pooling_type));
  if (synth_is_hybrid_arch(s.arch) || s.arch == "gemma4") {
    w.set_string("general.architecture", s.arch);
    w.set_string("general.name", "sniper-synth-" + s.arch);
    if (b.tp.file_type >= 0) w.set_u32("general.file_type", static_cast<uint32_t>(b.tp.file_type));
    if (s.arch == "gemma4") {
      add_gemma4_metadata(s, w);
    } else {
      add_hybrid_metadata(s, w);
    }
    SNIPER_ASSIGN_OR_RETURN(b.vocab, synth_add_tokenizer(s, w));
    b.plan = s.arch == "gemma4" ? plan_gemma4(s, b.tp, b.vocab) : plan_hybrid(s, b.tp, b.vocab);
    return b;
  }
  SNIPER_ASSIGN_OR_RETURN(b.vocab, add_metadata(s, b.tp, w));
  b.plan = make_plan(s, b.tp, b.vocab);
  return b;
}

// Fills rows [r0, r1) of tensor p (row_len elements, rb bytes each) at out from one stream.
void fill_chunk(const PlannedTensor& p, bool fast, SynthRng& rng, uint8_t* out, int64_t n_rows,
                std::vector<float>& buf) {
  const SynthTensor& t = p.t;
  const int64_t row = t.ne[0];
  const size_t rb = row_bytes(t.type, row);
  // Types without a quantizer (the i-quants, TQ*) are always written as direct random blocks.
  if ((fast || !has_ref_quantizer(t.type)) && p.init == SynthInit::kWeight && has_direct_blocks(t.type)) {
    fill_random_blocks(t.type, rng, p.std, out, n_rows * (row / get_type_info(t.type).block_size));
    return;
  }
  buf.resize(static_cast<size_t>(row + 1));
  for (int64_t r = 0; r < n_rows; ++r) {
    switch (p.init) {
      case SynthInit::kWeight:
      case SynthInit::kNorm:
        for (int64_t i = 0; i < row; i += 2) {
          rng.normal_pair(&buf[static_cast<size_t>(i)], &buf[static_cast<size_t>(i + 1)]);
        }
        for (int64_t i = 0; i < row; ++i) {
          float& x = buf[static_cast<size_t>(i)];
          x = p.init == SynthInit::kNorm ? p.a * (1.0f + 0.1f * x) : p.std * x;
        }
        break;
      case SynthInit::kUniform:
        for (int64_t i = 0; i < row; ++i)
          buf[static_cast<size_t>(i)] = static_cast<float>(p.a + (p.b - p.a) * rng.uniform());
        break;
      case SynthInit::kNegLogUniform: {
        const double lo = std::log(static_cast<double>(p.a)), hi = std::log(static_cast<double>(p.b));
        for (int64_t i = 0; i < row; ++i)
          buf[static_cast<size_t>(i)] = static_cast<float>(-std::exp(lo + (hi - lo) * rng.uniform()));
        break;
      }
      case SynthInit::kRopeFreqs:
        for (int64_t i = 0; i < row; ++i) buf[static_cast<size_t>(i)] = static_cast<float>(i) < p.a ? 1.0f : 1e30f;
        break;
    }
    quantize_row_ref(t.type, buf.data(), out + rb * static_cast<size_t>(r), row);
  }
}

void fill_tensor(const PlannedTensor& p, uint64_t model_seed, bool fast, ThreadPool& pool, uint8_t* dst,
                 size_t nbytes) {
  const SynthTensor& t = p.t;
  CHECK(nbytes == t.nbytes, "tensor %s: %zu bytes requested, %llu planned", t.name.c_str(), nbytes,
        static_cast<unsigned long long>(t.nbytes));
  const size_t rb = row_bytes(t.type, t.ne[0]);
  const int64_t n_rows = static_cast<int64_t>(nbytes / rb);
  const int64_t rows_per_chunk = std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes / rb));
  const int64_t n_chunks = (n_rows + rows_per_chunk - 1) / rows_per_chunk;
  const uint64_t seed = synth_tensor_seed(t.name, model_seed);
  pool.parallel_for(n_chunks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> buf;
    for (int64_t c = begin; c < end; ++c) {
      SynthRng rng = synth_chunk_rng(seed, static_cast<uint64_t>(c));
      const int64_t r0 = c * rows_per_chunk;
      const int64_t r1 = std::min(n_rows, r0 + rows_per_chunk);
      fill_chunk(p, fast, rng, dst + rb * static_cast<size_t>(r0), r1 - r0, buf);
    }
  });
}

// Overlaps generation with writing: while the writer writes tensor i from its buffer, a
// background thread (the thread pool's caller) generates tensor i + 1 into buf_; take() then
// copies it over. Calls must come in plan order from one thread.
class Prefetcher {
 public:
  Prefetcher(const std::vector<PlannedTensor>& plan, uint64_t seed, bool fast, ThreadPool& pool)
      : plan_(plan), seed_(seed), fast_(fast), pool_(pool) {}
  ~Prefetcher() {
    if (worker_.joinable()) worker_.join();
  }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Writes tensor i (nbytes) to dst and starts generating tensor i + 1.
  void take(size_t i, uint8_t* dst, size_t nbytes) {
    CHECK(i == next_, "tensor %zu requested, %zu expected", i, next_);
    if (worker_.joinable()) {
      worker_.join();
      CHECK(nbytes == plan_[i].t.nbytes, "tensor %s: %zu bytes requested", plan_[i].t.name.c_str(), nbytes);
      std::memcpy(dst, buf_.data(), nbytes);
    } else {
      fill_tensor(plan_[i], seed_, fast_, pool_, dst, nbytes);
    }
    next_ = i + 1;
    if (next_ < plan_.size()) {
      buf_.resize(plan_[next_].t.nbytes);
      worker_ = std::thread([this] { fill_tensor(plan_[next_], seed_, fast_, pool_, buf_.data(), buf_.size()); });
    }
  }

 private:
  const std::vector<PlannedTensor>& plan_;
  const uint64_t seed_;
  const bool fast_;
  ThreadPool& pool_;
  std::vector<uint8_t> buf_;  // tensor next_, being generated by worker_
  std::thread worker_;
  size_t next_ = 0;
};

}  // namespace

float synth_residual_std(int64_t n_layers) { return kSynthWeightStd / std::sqrt(2.0f * static_cast<float>(n_layers)); }

Status validate_synth_spec(const SynthSpec& s) {
  const ArchSpec* arch = find_arch(s.arch);
  if (arch == nullptr) {
    return make_error(
        "--arch is '%s' but must be one of: llama, qwen2, qwen3, qwen3moe, qwen35, qwen35moe, "
        "qwen3next, gemma4",
        s.arch.c_str());
  }
  if (s.pooling_type < -1 || s.pooling_type > 3) {
    return make_error("pooling_type is %d but must be in [-1, 3] (-1 absent, 0 none, 1 mean, 2 cls, 3 last)",
                      s.pooling_type);
  }
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
  if (s.n_heads % s.n_kv_heads != 0)
    return make_error("--heads (%ld) must be a multiple of --kv-heads (%ld)", static_cast<long>(s.n_heads),
                      static_cast<long>(s.n_kv_heads));
  if (s.head_dim % 2 != 0) return make_error("--head-dim is %ld but must be even", static_cast<long>(s.head_dim));
  SNIPER_TRY(check("--ctx", s.n_ctx, 1, int64_t{1} << 24));
  if (s.vocab_from.empty()) SNIPER_TRY(check("--vocab", s.vocab_size, kMinSynthVocab, int64_t{1} << 22));
  const bool moe = s.n_experts > 0;
  if (arch->requires_moe && !moe) return make_error("--arch %s needs --experts > 0", s.arch.c_str());
  if (moe && !arch->allow_moe) return make_error("--arch %s has no experts; drop --experts", s.arch.c_str());
  if (moe) {
    SNIPER_TRY(check("--experts", s.n_experts, 1, 4096));
    SNIPER_TRY(check("--experts-active", s.n_experts_active, 1, s.n_experts));
    if (s.arch != "llama") SNIPER_TRY(check("--expert-ff", s.expert_hidden_dim, 1, 1 << 20));
  }
  SNIPER_TRY(check("--ff", s.hidden_dim, 1, 1 << 20));
  if (!(s.rope_base > 1.0f)) return make_error("--rope-base is %g but must be > 1", static_cast<double>(s.rope_base));
  if (!(s.norm_eps > 0.0f && s.norm_eps < 1.0f))
    return make_error("--eps is %g but must be in (0, 1)", static_cast<double>(s.norm_eps));
  SNIPER_TRY(check("--threads", s.n_threads, 0, 4096));
  auto type = resolve_synth_type(s.type);
  if (!type.ok()) return type.error();
  if (s.nextn_layers != 0 && !synth_is_hybrid_arch(s.arch)) {
    return make_error("--nextn (multi-token-prediction blocks) is for qwen35, qwen35moe and qwen3next, not '%s'",
                      s.arch.c_str());
  }
  if (synth_is_hybrid_arch(s.arch)) return validate_hybrid_spec(s);
  if (s.arch == "gemma4") return validate_gemma4_spec(s);
  return ok_status();
}

Result<std::vector<SynthTensor>> plan_synth_model(const SynthSpec& s) {
  GgufWriter w;
  SNIPER_ASSIGN_OR_RETURN(Built b, build(s, w));
  std::vector<SynthTensor> out;
  out.reserve(b.plan.size());
  for (PlannedTensor& p : b.plan) out.push_back(std::move(p.t));
  return out;
}

Result<uint64_t> synth_model_bytes(const SynthSpec& s) {
  GgufWriter w;
  SNIPER_ASSIGN_OR_RETURN(Built b, build(s, w));
  for (const PlannedTensor& p : b.plan) {
    w.add_tensor(p.t.name, p.t.type, p.t.ne, [](uint8_t*, size_t) { CHECK(false, "size query filled a tensor"); });
  }
  return w.file_bytes();
}

Result<bool> synth_uses_fast_fill(const SynthSpec& s) {
  GgufWriter w;
  SNIPER_ASSIGN_OR_RETURN(Built b, build(s, w));
  return use_fast(s.fill, data_bytes(b.plan));
}

Status write_synth_model(const SynthSpec& s, const std::string& path,
                         const std::function<void(uint64_t, uint64_t)>& progress) {
  GgufWriter w;
  SNIPER_ASSIGN_OR_RETURN(Built b, build(s, w));
  const uint64_t total = data_bytes(b.plan);
  const bool fast = use_fast(s.fill, total);
  ThreadPool pool(s.n_threads);
  Prefetcher prefetcher(b.plan, s.seed, fast, pool);  // destroyed (joined) before the pool
  uint64_t done = 0;
  for (size_t i = 0; i < b.plan.size(); ++i) {
    // The writer fills tensor i only after tensor i - 1 is written, so `done` counts bytes
    // already handed to the file.
    const SynthTensor& t = b.plan[i].t;
    w.add_tensor(t.name, t.type, t.ne, [&, i](uint8_t* dst, size_t nbytes) {
      if (progress) progress(done, total);
      prefetcher.take(i, dst, nbytes);
      done += nbytes;
    });
  }
  SNIPER_TRY(w.write(path));
  if (progress) progress(total, total);
  return ok_status();
}

}  // namespace sniper
