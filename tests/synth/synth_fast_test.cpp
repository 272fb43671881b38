// SPDX-License-Identifier: MIT
// Fast synthetic models without the engine: direct random blocks dequantize to mean 0 / std
// 0.02; files are identical for any thread count; a fast-filled MoE routes tokens to many
// experts (and a biased one would not); presets have the real models' tensor types and file
// sizes; llama.cpp's mix and fallback rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include "gguf/reader.h"
#include "quant/quant.h"
#include "synth/synth_blocks.h"
#include "synth/synth_mix.h"
#include "synth/synth_model.h"
#include "synth/synth_presets.h"

namespace sniper {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("sniper_synth_fast_test_" + name)).string();
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

SynthSpec preset(const std::string& name) {
  const SynthPreset* p = find_synth_preset(name);
  EXPECT_NE(p, nullptr) << name;
  return p == nullptr ? SynthSpec{} : p->spec;
}

struct Moments {
  double mean = 0, std = 0;
  bool finite = true;
};

Moments moments(const std::vector<float>& v) {
  Moments m;
  double s = 0, s2 = 0;
  for (float x : v) {
    m.finite = m.finite && std::isfinite(x);
    s += x;
    s2 += static_cast<double>(x) * x;
  }
  m.mean = s / static_cast<double>(v.size());
  m.std = std::sqrt(s2 / static_cast<double>(v.size()) - m.mean * m.mean);
  return m;
}

TEST(SynthBlocks, EveryDirectTypeIsZeroMeanWithTargetStd) {
  const GgmlType types[] = {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                            GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K};
  for (GgmlType type : types) {
    SCOPED_TRACE(get_type_info(type).name);
    ASSERT_TRUE(has_direct_blocks(type));
    const GgmlTypeInfo& info = get_type_info(type);
    const int64_t n = int64_t{1} << 20;  // 1M values: the mean's standard error is std / 1024
    std::vector<uint8_t> blocks(row_bytes(type, n));
    SynthRng rng{42};
    fill_random_blocks(type, rng, kSynthWeightStd, blocks.data(), n / info.block_size);
    std::vector<float> x(static_cast<size_t>(n));
    dequantize_row_ref(type, blocks.data(), x.data(), n);
    const Moments m = moments(x);
    EXPECT_TRUE(m.finite);
    EXPECT_LT(std::fabs(m.mean), 0.01 * m.std) << "mean " << m.mean;
    EXPECT_NEAR(m.std, kSynthWeightStd, 0.03 * kSynthWeightStd);
    // Blocks differ from each other (the stream advances).
    EXPECT_NE(0, std::memcmp(blocks.data(), blocks.data() + info.type_size, info.type_size));
  }
  EXPECT_FALSE(has_direct_blocks(GgmlType::kQ3_K));
  EXPECT_FALSE(has_direct_blocks(GgmlType::kF16));
}

TEST(SynthBlocks, PerBlockMeansCancel) {
  // Zero mean must hold inside blocks too, not only on average (a per-block offset would act
  // as a bias on every dot product with that block's inputs).
  for (GgmlType type : {GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K}) {
    SCOPED_TRACE(get_type_info(type).name);
    const int64_t n_blocks = 4096;
    std::vector<uint8_t> blocks(row_bytes(type, 256 * n_blocks));
    SynthRng rng{7};
    fill_random_blocks(type, rng, kSynthWeightStd, blocks.data(), n_blocks);
    std::vector<float> x(256 * n_blocks);
    dequantize_row_ref(type, blocks.data(), x.data(), 256 * n_blocks);
    // Mean of each block's mean: a block's mean has standard error std/16; their average over
    // 4096 blocks has std/1024; a systematic per-block offset would show in the RMS.
    double rms_block_mean = 0;
    for (int64_t b = 0; b < n_blocks; ++b) {
      const double mean = std::accumulate(x.begin() + 256 * b, x.begin() + 256 * (b + 1), 0.0) / 256.0;
      rms_block_mean += mean * mean;
    }
    rms_block_mean = std::sqrt(rms_block_mean / n_blocks);
    EXPECT_LT(rms_block_mean, 1.3 * kSynthWeightStd / 16.0);
  }
}

SynthSpec tiny_fast(int n_threads) {
  SynthSpec s = preset("qwen3moe-tiny");
  s.fill = SynthFill::kFast;
  s.n_threads = n_threads;
  return s;
}

TEST(SynthModelFast, BytesDoNotDependOnThreadCount) {
  for (SynthFill fill : {SynthFill::kFast, SynthFill::kExact}) {
    SynthSpec s = tiny_fast(1);
    s.fill = fill;
    s.n_layers = 2;
    if (fill == SynthFill::kExact) {  // the _ref k-quant quantizers are slow under sanitizers
      s.n_layers = 1;
      s.n_experts = 8;
      s.n_experts_active = 2;
      s.type = "q8_0";
    }
    const std::string a = temp_path("t1.gguf"), b = temp_path("t3.gguf"), c = temp_path("seed2.gguf");
    ASSERT_TRUE(write_synth_model(s, a, nullptr).ok());
    s.n_threads = 3;
    ASSERT_TRUE(write_synth_model(s, b, nullptr).ok());
    s.seed = 2;
    ASSERT_TRUE(write_synth_model(s, c, nullptr).ok());
    const std::string bytes_a = slurp(a);
    EXPECT_EQ(bytes_a, slurp(b));
    EXPECT_NE(bytes_a, slurp(c));
    auto size = synth_model_bytes(s);
    ASSERT_TRUE(size.ok());
    EXPECT_EQ(*size, bytes_a.size());
    for (const auto& p : {a, b, c}) std::filesystem::remove(p);
  }
}

TEST(SynthModelFast, ProgressReachesTotal) {
  SynthSpec s = tiny_fast(2);
  const std::string path = temp_path("progress.gguf");
  uint64_t last = 0, total_seen = 0;
  int calls = 0;
  bool monotonic = true;
  ASSERT_TRUE(write_synth_model(s, path, [&](uint64_t done, uint64_t total) {
                monotonic = monotonic && done >= last && done <= total;
                last = done;
                total_seen = total;
                ++calls;
              }).ok());
  EXPECT_TRUE(monotonic);
  EXPECT_EQ(last, total_seen);
  EXPECT_GT(calls, 10);
  std::filesystem::remove(path);
}

// Reads tensor `name` of a parsed in-memory file as floats (rows of ne[0]).
std::vector<float> dequant_tensor(const GgufFile& f, const std::string& bytes, const std::string& name) {
  const GgufTensorInfo* t = f.find_tensor(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return {};
  std::vector<float> out(static_cast<size_t>(t->n_elements()));
  dequantize_row_ref(t->type, bytes.data() + t->file_offset, out.data(), t->n_elements());
  return out;
}

struct Routing {
  int n_used = 0;     // experts chosen by at least one token
  int max_count = 0;  // tokens choosing the most popular expert
};

// Routing proxy for layer `layer`: router logits on rms_norm(embedding) * attn_norm for
// n_tokens spread over the vocabulary, top-k per token. `bias` is added to every embedding
// value (a control: biased weights must collapse the routing).
Routing route(const GgufFile& f, const std::string& bytes, int layer, int n_tokens, int k, float bias) {
  const std::vector<float> embd = dequant_tensor(f, bytes, "token_embd.weight");
  const std::vector<float> norm = dequant_tensor(f, bytes, "blk." + std::to_string(layer) + ".attn_norm.weight");
  const std::vector<float> router = dequant_tensor(f, bytes, "blk." + std::to_string(layer) + ".ffn_gate_inp.weight");
  const GgufTensorInfo* rt = f.find_tensor("blk." + std::to_string(layer) + ".ffn_gate_inp.weight");
  const int64_t dim = rt->ne[0], n_experts = rt->ne[1];
  const int64_t vocab = static_cast<int64_t>(embd.size()) / dim;
  std::vector<int> count(static_cast<size_t>(n_experts), 0);
  for (int i = 0; i < n_tokens; ++i) {
    const int64_t token = 3 + (static_cast<int64_t>(i) * 7919) % (vocab - 3);
    std::vector<double> x(static_cast<size_t>(dim));
    double ss = 0;
    for (int64_t j = 0; j < dim; ++j) {
      x[j] = embd[static_cast<size_t>(token * dim + j)] + bias;
      ss += x[j] * x[j];
    }
    const double scale = 1.0 / std::sqrt(ss / static_cast<double>(dim) + 1e-6);
    for (int64_t j = 0; j < dim; ++j) x[j] *= scale * norm[static_cast<size_t>(j)];
    std::vector<std::pair<double, int>> logits;
    for (int64_t e = 0; e < n_experts; ++e) {
      double dot = 0;
      for (int64_t j = 0; j < dim; ++j) dot += router[static_cast<size_t>(e * dim + j)] * x[j];
      logits.emplace_back(dot, static_cast<int>(e));
    }
    std::partial_sort(logits.begin(), logits.begin() + k, logits.end(), std::greater<>());
    for (int j = 0; j < k; ++j) ++count[static_cast<size_t>(logits[j].second)];
  }
  Routing r;
  for (int c : count) {
    r.n_used += c > 0;
    r.max_count = std::max(r.max_count, c);
  }
  return r;
}

TEST(SynthModelFast, MoeRoutingVariesAcrossTokens) {
  // The tiny presets of every MoE architecture: 32 experts, 4 active.
  for (const char* name : {"qwen3moe-tiny", "qwen35moe-tiny", "qwen3next-tiny", "gemma4moe-tiny"}) {
    SCOPED_TRACE(name);
    SynthSpec s = preset(name);
    s.fill = SynthFill::kFast;
    s.n_threads = 2;
    ASSERT_EQ(s.n_experts, 32);
    ASSERT_EQ(s.n_experts_active, 4);
    const std::string path = temp_path(std::string("routing_") + name + ".gguf");
    ASSERT_TRUE(write_synth_model(s, path, nullptr).ok());
    const std::string bytes = slurp(path);
    auto f = gguf_parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ASSERT_TRUE(f.ok()) << f.error().message;
    const int kTokens = 64;
    const float embd_std = s.arch == "gemma4" ? kSynthWeightStd : kSynthEmbeddingStd;
    for (int layer = 0; layer < s.n_layers; ++layer) {
      SCOPED_TRACE(layer);
      const Routing r = route(*f, bytes, layer, kTokens, 4, 0.0f);
      EXPECT_GE(r.n_used, 24) << "experts used " << r.n_used;  // >= 75% of 32
      EXPECT_LE(r.max_count, kTokens / 2) << "most popular expert chosen by " << r.max_count;
      // Control: the same weights with every embedding value shifted by 2 std (what Q4_K blocks
      // without the compensating minimum would give: mean 7.5 d sc vs std 4.6 d sc) route
      // most tokens to the same experts, so the check above can fail.
      const Routing biased = route(*f, bytes, layer, kTokens, 4, 2.0f * embd_std);
      EXPECT_TRUE(biased.n_used < 24 || biased.max_count > kTokens / 2)
          << "biased: used " << biased.n_used << " max " << biased.max_count;
    }
    std::filesystem::remove(path);
  }
}

// Types of the per-layer tensors "blk.<i>.<suffix>", or of the one tensor named `suffix`.
std::map<std::string, int> type_histogram(const std::vector<SynthTensor>& plan, const std::string& suffix) {
  std::map<std::string, int> h;
  for (const SynthTensor& t : plan) {
    const bool layer_match = t.name.rfind("blk.", 0) == 0 && t.name.substr(t.name.find('.', 4) + 1) == suffix;
    if (layer_match || t.name == suffix) ++h[get_type_info(t.type).name];
  }
  return h;
}

TEST(SynthPresets, RealModelSizesWithinOnePercent) {
  for (const char* name : {"qwen3-30b-a3b", "mixtral-8x7b", "qwen3-8b", "qwen3.5-35b-a3b", "qwen3.5-27b", "qwen3.5-9b",
                           "qwen3-next-80b-a3b", "gemma4-26b-a4b", "gemma4-31b"}) {
    SCOPED_TRACE(name);
    const SynthPreset* p = find_synth_preset(name);
    ASSERT_NE(p, nullptr);
    ASSERT_GT(p->real_file_bytes, 0u);
    auto bytes = synth_model_bytes(p->spec);
    ASSERT_TRUE(bytes.ok()) << bytes.error().message;
    const double ratio = static_cast<double>(*bytes) / static_cast<double>(p->real_file_bytes);
    std::printf("%-18s %15llu bytes, real %15llu: ratio %.4f\n", name, static_cast<unsigned long long>(*bytes),
                static_cast<unsigned long long>(p->real_file_bytes), ratio);
    EXPECT_NEAR(ratio, 1.0, 0.01) << *bytes << " bytes";
    auto fast = synth_uses_fast_fill(p->spec);
    ASSERT_TRUE(fast.ok());
    EXPECT_TRUE(*fast);
  }
}

TEST(SynthPresets, Qwen3MoeUsesLlamaCppQ4KMRules) {
  auto plan = plan_synth_model(preset("qwen3-30b-a3b"));
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->size(), 3u + 48u * 12u);
  // use_more_bits(i, 48): i < 6, i >= 42, and i = 8, 11, ..., 41: 24 layers.
  EXPECT_EQ(type_histogram(*plan, "ffn_down_exps.weight"), (std::map<std::string, int>{{"q4_K", 24}, {"q6_K", 24}}));
  EXPECT_EQ(type_histogram(*plan, "attn_v.weight"), (std::map<std::string, int>{{"q4_K", 24}, {"q6_K", 24}}));
  EXPECT_EQ(type_histogram(*plan, "ffn_gate_exps.weight"), (std::map<std::string, int>{{"q4_K", 48}}));
  EXPECT_EQ(type_histogram(*plan, "attn_k.weight"), (std::map<std::string, int>{{"q4_K", 48}}));
  EXPECT_EQ(type_histogram(*plan, "ffn_gate_inp.weight"), (std::map<std::string, int>{{"f32", 48}}));
  EXPECT_EQ(type_histogram(*plan, "token_embd.weight"), (std::map<std::string, int>{{"q4_K", 1}}));
  EXPECT_EQ(type_histogram(*plan, "output.weight"), (std::map<std::string, int>{{"q6_K", 1}}));
  for (const SynthTensor& t : *plan) {
    if (t.name == "blk.0.ffn_down_exps.weight") {
      EXPECT_EQ(t.ne, (std::vector<int64_t>{768, 2048, 128}));
      EXPECT_EQ(t.nbytes, 262144u * 3u * 210u);
    }
  }
}

// Rules derived from llama_tensor_get_type_impl (llama-quant.cpp) for Q4_K_M on qwen35moe:
// attn_qkv and attn_v are both "attn_v-like" and share one counter (one per layer here), Q6_K
// where use_more_bits(i, 40) (i < 5, i >= 35, i = 7, 10, ..., 34: 20 layers); ffn_down_exps and
// ffn_down_shexp take Q6_K by the same rule on the layer from their name (n_expert > 1);
// attn_gate, ssm_out, ssm_alpha, ssm_beta match no category and take the default Q4_K;
// 1-D tensors, ssm_conv1d and ffn_gate_inp stay F32; the untied output is Q6_K.
TEST(SynthPresets, Qwen35MoeUsesLlamaCppQ4KMRules) {
  auto plan = plan_synth_model(preset("qwen3.5-35b-a3b"));
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->size(), 733u);  // the real file's tensor count: 3 + 30 x 19 + 10 x 16
  using H = std::map<std::string, int>;
  // Full-attention layers 3, 7, ..., 39: more bits at 3, 7, 19, 31, 35, 39.
  EXPECT_EQ(type_histogram(*plan, "attn_v.weight"), (H{{"q4_K", 4}, {"q6_K", 6}}));
  EXPECT_EQ(type_histogram(*plan, "attn_qkv.weight"), (H{{"q4_K", 16}, {"q6_K", 14}}));
  EXPECT_EQ(type_histogram(*plan, "ffn_down_exps.weight"), (H{{"q4_K", 20}, {"q6_K", 20}}));
  EXPECT_EQ(type_histogram(*plan, "ffn_down_shexp.weight"), (H{{"q4_K", 20}, {"q6_K", 20}}));
  for (const char* q4k : {"attn_gate.weight", "ssm_out.weight", "ssm_alpha.weight", "ssm_beta.weight"}) {
    EXPECT_EQ(type_histogram(*plan, q4k), (H{{"q4_K", 30}})) << q4k;
  }
  for (const char* q4k : {"attn_q.weight", "attn_k.weight", "attn_output.weight"}) {
    EXPECT_EQ(type_histogram(*plan, q4k), (H{{"q4_K", 10}})) << q4k;
  }
  for (const char* q4k :
       {"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_gate_shexp.weight", "ffn_up_shexp.weight"}) {
    EXPECT_EQ(type_histogram(*plan, q4k), (H{{"q4_K", 40}})) << q4k;
  }
  for (const char* f32 : {"ssm_conv1d.weight", "ssm_a", "ssm_dt.bias", "ssm_norm.weight"}) {
    EXPECT_EQ(type_histogram(*plan, f32), (H{{"f32", 30}})) << f32;
  }
  for (const char* f32 : {"ffn_gate_inp.weight", "ffn_gate_inp_shexp.weight", "post_attention_norm.weight"}) {
    EXPECT_EQ(type_histogram(*plan, f32), (H{{"f32", 40}})) << f32;
  }
  EXPECT_EQ(type_histogram(*plan, "token_embd.weight"), (H{{"q4_K", 1}}));
  EXPECT_EQ(type_histogram(*plan, "output.weight"), (H{{"q6_K", 1}}));
  // Shapes as llama.cpp's converter writes them; order as llama-quantize writes them.
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const SynthTensor& t : *plan) shapes[t.name] = t.ne;
  EXPECT_EQ(shapes["blk.0.attn_qkv.weight"], (std::vector<int64_t>{2048, 8192}));
  EXPECT_EQ(shapes["blk.0.attn_gate.weight"], (std::vector<int64_t>{2048, 4096}));
  EXPECT_EQ(shapes["blk.0.ssm_conv1d.weight"], (std::vector<int64_t>{4, 8192}));
  EXPECT_EQ(shapes["blk.0.ssm_alpha.weight"], (std::vector<int64_t>{2048, 32}));
  EXPECT_EQ(shapes["blk.0.ssm_out.weight"], (std::vector<int64_t>{4096, 2048}));
  EXPECT_EQ(shapes["blk.0.ssm_norm.weight"], (std::vector<int64_t>{128}));
  EXPECT_EQ(shapes["blk.3.attn_q.weight"], (std::vector<int64_t>{2048, 8192}));
  EXPECT_EQ(shapes["blk.3.attn_k.weight"], (std::vector<int64_t>{2048, 512}));
  EXPECT_EQ(shapes["blk.3.attn_output.weight"], (std::vector<int64_t>{4096, 2048}));
  EXPECT_EQ(shapes["blk.0.ffn_down_exps.weight"], (std::vector<int64_t>{512, 2048, 256}));
  EXPECT_EQ(shapes["blk.0.ffn_gate_inp_shexp.weight"], (std::vector<int64_t>{2048}));
  EXPECT_EQ(shapes["token_embd.weight"], (std::vector<int64_t>{2048, 248320}));
  EXPECT_EQ((*plan)[0].name, "output.weight");
  EXPECT_EQ((*plan)[2].name, "token_embd.weight");
  EXPECT_EQ((*plan)[3].name, "blk.0.attn_gate.weight");
}

// llama_tensor_get_type_impl for IQ2_M (default IQ2_S) and IQ3_XXS (default IQ3_XXS, with an
// importance matrix) on qwen35moe: n_expert >= 4 (and n_gqa = 8 >= 4) sends attn_v and attn_qkv
// to Q4_K; IQ2_M: token_embd IQ3_S, output Q5_K, attn_output IQ3_S, ffn_down* IQ3_S while
// llama.cpp's running ffn_down counter is below n_layers / 8 = 5 (it counts ffn_down_exps and
// ffn_down_shexp, so layers 0-1 both and layer 2's _exps); IQ3_XXS: attn_q and attn_k IQ2_S,
// attn_output IQ3_S, token_embd IQ3_S, output Q5_K, ffn_down unchanged.
TEST(SynthPresets, Qwen35MoeIQuantMixes) {
  using H = std::map<std::string, int>;
  SynthSpec s = preset("qwen3.5-35b-a3b");
  s.type = "IQ2_M";
  auto plan = plan_synth_model(s);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(type_histogram(*plan, "attn_qkv.weight"), (H{{"q4_K", 30}}));
  EXPECT_EQ(type_histogram(*plan, "attn_v.weight"), (H{{"q4_K", 10}}));
  EXPECT_EQ(type_histogram(*plan, "attn_output.weight"), (H{{"iq3_s", 10}}));
  EXPECT_EQ(type_histogram(*plan, "ffn_down_exps.weight"), (H{{"iq2_s", 37}, {"iq3_s", 3}}));
  EXPECT_EQ(type_histogram(*plan, "ffn_down_shexp.weight"), (H{{"iq2_s", 38}, {"iq3_s", 2}}));
  for (const char* base : {"attn_gate.weight", "ssm_out.weight", "ssm_alpha.weight", "ssm_beta.weight"}) {
    EXPECT_EQ(type_histogram(*plan, base), (H{{"iq2_s", 30}})) << base;
  }
  EXPECT_EQ(type_histogram(*plan, "attn_q.weight"), (H{{"iq2_s", 10}}));
  EXPECT_EQ(type_histogram(*plan, "ffn_gate_exps.weight"), (H{{"iq2_s", 40}}));
  EXPECT_EQ(type_histogram(*plan, "token_embd.weight"), (H{{"iq3_s", 1}}));
  EXPECT_EQ(type_histogram(*plan, "output.weight"), (H{{"q5_K", 1}}));
  EXPECT_EQ(type_histogram(*plan, "ssm_conv1d.weight"), (H{{"f32", 30}}));
  s.type = "IQ3_XXS";
  plan = plan_synth_model(s);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(type_histogram(*plan, "attn_q.weight"), (H{{"iq2_s", 10}}));
  EXPECT_EQ(type_histogram(*plan, "attn_k.weight"), (H{{"iq2_s", 10}}));
  EXPECT_EQ(type_histogram(*plan, "attn_qkv.weight"), (H{{"q4_K", 30}}));
  EXPECT_EQ(type_histogram(*plan, "attn_output.weight"), (H{{"iq3_s", 10}}));
  EXPECT_EQ(type_histogram(*plan, "ffn_down_exps.weight"), (H{{"iq3_xxs", 40}}));
  EXPECT_EQ(type_histogram(*plan, "ssm_out.weight"), (H{{"iq3_xxs", 30}}));
  EXPECT_EQ(type_histogram(*plan, "token_embd.weight"), (H{{"iq3_s", 1}}));
  EXPECT_EQ(type_histogram(*plan, "output.weight"), (H{{"q5_K", 1}}));
}

// Q4_K_M on the dense qwen35 (64 layers): use_more_bits(i, 64) holds for i < 8, i >= 56 and
// i = 10, 13, ..., 55 (32 layers). ffn_down (the counter equals the layer, one per layer) and the
// attn_v-like tensors (attn_qkv on delta-net layers, attn_v on layers 3, 7, ..., 63) follow it.
TEST(SynthPresets, Qwen35DenseUsesLlamaCppQ4KMRules) {
  using H = std::map<std::string, int>;
  auto plan = plan_synth_model(preset("qwen3.5-27b"));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(type_histogram(*plan, "ffn_down.weight"), (H{{"q4_K", 32}, {"q6_K", 32}}));
  // Full layers with more bits: 3, 7, 19, 31, 43, 55, 59, 63.
  EXPECT_EQ(type_histogram(*plan, "attn_v.weight"), (H{{"q4_K", 8}, {"q6_K", 8}}));
  EXPECT_EQ(type_histogram(*plan, "attn_qkv.weight"), (H{{"q4_K", 24}, {"q6_K", 24}}));
  EXPECT_EQ(type_histogram(*plan, "ffn_gate.weight"), (H{{"q4_K", 64}}));
  EXPECT_EQ(type_histogram(*plan, "ssm_out.weight"), (H{{"q4_K", 48}}));
  EXPECT_EQ(type_histogram(*plan, "output.weight"), (H{{"q6_K", 1}}));
  for (const SynthTensor& t : *plan) {
    if (t.name == "blk.0.attn_qkv.weight") {
      EXPECT_EQ(t.ne, (std::vector<int64_t>{5120, 10240}));
    }
    if (t.name == "blk.0.ssm_beta.weight") {
      EXPECT_EQ(t.ne, (std::vector<int64_t>{5120, 48}));
    }
    if (t.name == "blk.3.attn_q.weight") {
      EXPECT_EQ(t.ne, (std::vector<int64_t>{5120, 12288}));
    }
    EXPECT_EQ(t.name.find("exps"), std::string::npos) << t.name;
  }
}

// Q4_K_M on qwen3next (48 layers): use_more_bits(i, 48) holds for 24 layers; full layers 3, 11,
// 23, 35, 43, 47 among them. The fused ssm_ba [dim, 2 nv] takes the default Q4_K.
TEST(SynthPresets, Qwen3NextUsesLlamaCppQ4KMRules) {
  using H = std::map<std::string, int>;
  auto plan = plan_synth_model(preset("qwen3-next-80b-a3b"));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(type_histogram(*plan, "attn_v.weight"), (H{{"q4_K", 6}, {"q6_K", 6}}));
  EXPECT_EQ(type_histogram(*plan, "attn_qkv.weight"), (H{{"q4_K", 18}, {"q6_K", 18}}));
  EXPECT_EQ(type_histogram(*plan, "ffn_down_exps.weight"), (H{{"q4_K", 24}, {"q6_K", 24}}));
  EXPECT_EQ(type_histogram(*plan, "ffn_down_shexp.weight"), (H{{"q4_K", 24}, {"q6_K", 24}}));
  EXPECT_EQ(type_histogram(*plan, "ssm_ba.weight"), (H{{"q4_K", 36}}));
  EXPECT_EQ(type_histogram(*plan, "ssm_alpha.weight"), H{});
  for (const SynthTensor& t : *plan) {
    if (t.name == "blk.0.ssm_ba.weight") {
      EXPECT_EQ(t.ne, (std::vector<int64_t>{2048, 64}));
    }
    if (t.name == "blk.0.ffn_gate_exps.weight") {
      EXPECT_EQ(t.ne, (std::vector<int64_t>{2048, 512, 512}));
    }
  }
}

// Q4_K_M on gemma4 (llama_tensor_get_type_impl): the tied token_embd and per_layer_token_embd are
// quantized like the output head (Q6_K); the attn_v counter runs over the layers that have attn_v
// only (26B: the 25 sliding layers, use_more_bits(i, 25) for 13 of them; E4B: the 24 layers with
// their own KV, 12 of them); rows of 2112 and 704 (26B FFNs) are not whole Q4_K / Q6_K blocks and
// fall back to Q5_0 / Q8_0; per_layer_model_proj stays F32; inp_gate and proj take Q4_K.
TEST(SynthPresets, Gemma4UsesLlamaCppQ4KMRules) {
  using H = std::map<std::string, int>;
  auto moe = plan_synth_model(preset("gemma4-26b-a4b"));
  ASSERT_TRUE(moe.ok());
  EXPECT_EQ(moe->size(), 658u);  // the real file's tensor count
  EXPECT_EQ(type_histogram(*moe, "token_embd.weight"), (H{{"q6_K", 1}}));
  EXPECT_EQ(type_histogram(*moe, "output.weight"), H{});
  EXPECT_EQ(type_histogram(*moe, "attn_v.weight"), (H{{"q4_K", 12}, {"q6_K", 13}}));
  EXPECT_EQ(type_histogram(*moe, "attn_k.weight"), (H{{"q4_K", 30}}));
  // use_more_bits(l, 30): 14 layers get Q6_K, which rows of 2112 / 704 turn into Q8_0.
  EXPECT_EQ(type_histogram(*moe, "ffn_down.weight"), (H{{"q5_0", 16}, {"q8_0", 14}}));
  EXPECT_EQ(type_histogram(*moe, "ffn_down_exps.weight"), (H{{"q5_0", 16}, {"q8_0", 14}}));
  EXPECT_EQ(type_histogram(*moe, "ffn_gate_up_exps.weight"), (H{{"q4_K", 30}}));
  for (const char* f32 :
       {"ffn_gate_inp.weight", "ffn_gate_inp.scale", "ffn_down_exps.scale", "layer_output_scale.weight"}) {
    EXPECT_EQ(type_histogram(*moe, f32), (H{{"f32", 30}})) << f32;
  }
  EXPECT_EQ(type_histogram(*moe, "rope_freqs.weight"), (H{{"f32", 1}}));
  for (const SynthTensor& t : *moe) {
    if (t.name == "blk.0.attn_k.weight") {
      EXPECT_EQ(t.ne, (std::vector<int64_t>{2816, 2048}));
    }
    if (t.name == "blk.5.attn_k.weight") {
      EXPECT_EQ(t.ne, (std::vector<int64_t>{2816, 1024}));
    }
    if (t.name == "blk.5.attn_q.weight") {
      EXPECT_EQ(t.ne, (std::vector<int64_t>{2816, 8192}));
    }
    if (t.name == "blk.0.ffn_gate_up_exps.weight") {
      EXPECT_EQ(t.ne, (std::vector<int64_t>{2816, 1408, 128}));
    }
    if (t.name == "rope_freqs.weight") {
      EXPECT_EQ(t.ne, (std::vector<int64_t>{256}));
    }
    EXPECT_NE(t.name, "blk.5.attn_v.weight");  // full layers: V = K
  }
  auto e4b = plan_synth_model(preset("gemma4-e4b"));
  ASSERT_TRUE(e4b.ok());
  EXPECT_EQ(type_histogram(*e4b, "token_embd.weight"), (H{{"q6_K", 1}}));
  EXPECT_EQ(type_histogram(*e4b, "per_layer_token_embd.weight"), (H{{"q6_K", 1}}));
  EXPECT_EQ(type_histogram(*e4b, "per_layer_model_proj.weight"), (H{{"f32", 1}}));
  EXPECT_EQ(type_histogram(*e4b, "attn_v.weight"), (H{{"q4_K", 12}, {"q6_K", 12}}));
  EXPECT_EQ(type_histogram(*e4b, "attn_k.weight"), (H{{"q4_K", 24}}));  // layers 24..41 share KV
  EXPECT_EQ(type_histogram(*e4b, "ffn_down.weight"), (H{{"q4_K", 21}, {"q6_K", 21}}));
  EXPECT_EQ(type_histogram(*e4b, "inp_gate.weight"), (H{{"q4_K", 42}}));
  EXPECT_EQ(type_histogram(*e4b, "proj.weight"), (H{{"q4_K", 42}}));
  for (const SynthTensor& t : *e4b) {
    if (t.name == "per_layer_token_embd.weight") {
      EXPECT_EQ(t.ne, (std::vector<int64_t>{42 * 256, 262144}));
    }
    if (t.name == "per_layer_model_proj.weight") {
      EXPECT_EQ(t.ne, (std::vector<int64_t>{2560, 42 * 256}));
    }
  }
}

TEST(SynthPresets, MixtralUsesEightExpertRules) {
  auto plan = plan_synth_model(preset("mixtral-8x7b"));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(type_histogram(*plan, "attn_k.weight"), (std::map<std::string, int>{{"q8_0", 32}}));
  EXPECT_EQ(type_histogram(*plan, "attn_v.weight"), (std::map<std::string, int>{{"q8_0", 32}}));
  EXPECT_EQ(type_histogram(*plan, "attn_output.weight"), (std::map<std::string, int>{{"q5_K", 32}}));
  EXPECT_EQ(type_histogram(*plan, "ffn_down_exps.weight"), (std::map<std::string, int>{{"q4_K", 16}, {"q6_K", 16}}));
}

TEST(SynthPresets, FlagsOverridePresetFieldsAndEveryPresetIsValid) {
  for (const SynthPreset& p : synth_presets()) {
    SCOPED_TRACE(p.name);
    EXPECT_TRUE(validate_synth_spec(p.spec).ok());
    EXPECT_FALSE(p.description.empty());
  }
  EXPECT_EQ(find_synth_preset("qwen3-31b"), nullptr);
  EXPECT_NE(synth_preset_names().find("qwen3moe-demo"), std::string::npos);
  // A shortened copy: 4 of 48 layers keeps the per-layer tensors of the full model.
  SynthSpec s = preset("qwen3-30b-a3b");
  s.n_layers = 4;
  auto plan = plan_synth_model(s);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->size(), 3u + 4u * 12u);
}

TEST(SynthMix, LlamaCppRulesAndFallbacks) {
  auto q4km = resolve_synth_type("q4_k_m");
  auto q3km = resolve_synth_type("q3_k_m");
  auto q4k = resolve_synth_type("q4_k");
  ASSERT_TRUE(q4km.ok() && q3km.ok() && q4k.ok());
  EXPECT_EQ(q4km->file_type, 15);
  EXPECT_EQ(q4k->file_type, -1);
  // Q3_K_M: ffn_down Q5_K in the first n/16 layers, Q4_K after; attn_v Q5_K in layers 0-1.
  EXPECT_EQ(synth_matrix_type(*q3km, SynthMatrix::kFfnDown, 1, 32, 0, 4096), GgmlType::kQ5_K);
  EXPECT_EQ(synth_matrix_type(*q3km, SynthMatrix::kFfnDown, 2, 32, 0, 4096), GgmlType::kQ4_K);
  EXPECT_EQ(synth_matrix_type(*q3km, SynthMatrix::kAttnV, 1, 32, 0, 4096), GgmlType::kQ5_K);
  EXPECT_EQ(synth_matrix_type(*q3km, SynthMatrix::kAttnV, 2, 32, 0, 4096), GgmlType::kQ4_K);
  EXPECT_EQ(synth_matrix_type(*q3km, SynthMatrix::kAttnQ, 2, 32, 0, 4096), GgmlType::kQ3_K);
  // Rows that are not whole super-blocks: Q4_K -> Q5_0; Q6_K -> Q8_0; not whole 32-blocks -> F16.
  EXPECT_EQ(synth_matrix_type(*q4km, SynthMatrix::kAttnQ, 0, 8, 0, 96), GgmlType::kQ5_0);
  EXPECT_EQ(synth_matrix_type(*q4km, SynthMatrix::kFfnDown, 0, 8, 0, 96), GgmlType::kQ8_0);
  EXPECT_EQ(synth_matrix_type(*q4km, SynthMatrix::kOutput, 0, 8, 0, 96), GgmlType::kQ8_0);
  EXPECT_EQ(synth_matrix_type(*q4km, SynthMatrix::kAttnQ, 0, 8, 0, 48), GgmlType::kF16);
  // Plain types: every matrix in that type.
  EXPECT_EQ(synth_matrix_type(*q4k, SynthMatrix::kOutput, 0, 8, 0, 256), GgmlType::kQ4_K);
  EXPECT_TRUE(synth_use_more_bits(0, 48) && synth_use_more_bits(8, 48) && synth_use_more_bits(47, 48));
  EXPECT_FALSE(synth_use_more_bits(6, 48) || synth_use_more_bits(7, 48) || synth_use_more_bits(41 - 1, 48));
}

}  // namespace
}  // namespace sniper
