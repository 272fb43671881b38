// SPDX-License-Identifier: MIT
// Synthetic models: every architecture and weight type writes a file that loads, binds and
// generates; files are byte-identical for a seed and differ across seeds; bad specs are
// errors naming the flag.
#include "synth/synth_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/model.h"
#include "engine/session.h"
#include "gguf/reader.h"
#include "golden/shared_dir.h"
#include "kernels/ops.h"
#include "synth/synth_presets.h"

namespace sniper {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("sniper_synth_test_" + name)).string();
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

SynthSpec small_spec(const std::string& arch, const std::string& type) {
  SynthSpec s;
  s.arch = arch;
  s.dim = 256;
  s.n_layers = 2;
  s.hidden_dim = 256;
  s.vocab_size = 400;
  s.n_ctx = 128;
  s.type = type;
  if (arch == "qwen3moe") {
    s.n_experts = 8;
    s.n_experts_active = 2;
    s.expert_hidden_dim = 256;
  }
  return s;
}

void expect_runs(const std::string& path) {
  auto model = Model::load(path, {});
  ASSERT_TRUE(model.ok()) << model.error().message;
  SessionOptions so;
  so.n_threads = 2;
  auto session = Session::create(**model, so);
  ASSERT_TRUE(session.ok()) << session.error().message;
  auto tok = (*model)->tokenizer();
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  std::vector<int32_t> ids = (*tok)->encode("Once upon a time there was a big red ball", true, false);
  ASSERT_GT(ids.size(), 3u);
  std::vector<float> logits;
  ASSERT_TRUE((*session)->eval(ids, &logits).ok());
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
}

TEST(SynthModel, EveryArchAndTypeLoadsAndRuns) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"llama", "f32"},    {"llama", "f16"},  {"llama", "bf16"},   {"llama", "q8_0"},      {"llama", "q4_0"},
      {"llama", "q4_1"},   {"llama", "q5_0"}, {"llama", "q5_1"},   {"llama", "q2_k"},      {"llama", "q3_k"},
      {"llama", "q4_k"},   {"llama", "q5_k"}, {"llama", "q6_k"},   {"llama", "iq4_nl"},    {"llama", "iq4_xs"},
      {"llama", "q4_k_m"}, {"qwen2", "q8_0"}, {"qwen3", "q4_k_m"}, {"qwen3moe", "q4_k_m"},
  };
  for (const auto& [arch, type] : cases) {
    SCOPED_TRACE(arch + "/" + type);
    const std::string path = temp_path(arch + "_" + type + ".gguf");
    Status st = write_synth_model(small_spec(arch, type), path, nullptr);
    ASSERT_TRUE(st.ok()) << st.error().message;
    expect_runs(path);
    std::filesystem::remove(path);
  }
}

TEST(SynthModel, MixtralStyleLlamaWithExperts) {
  SynthSpec s = small_spec("llama", "q4_k_m");
  s.n_experts = 4;
  s.n_experts_active = 2;
  const std::string path = temp_path("mixtral.gguf");
  ASSERT_TRUE(write_synth_model(s, path, nullptr).ok());
  expect_runs(path);
  std::filesystem::remove(path);
}

TEST(SynthModel, FastFilledPresetsLoadAndRun) {
  // Direct random blocks (Q4_K, Q6_K) through the engine: the tiny MoE preset, and a dense
  // Qwen3 and a Mixtral-style llama shortened from the full-scale presets' shapes.
  for (const char* name : {"qwen3moe-tiny", "qwen3-8b", "mixtral-8x7b"}) {
    SCOPED_TRACE(name);
    const SynthPreset* p = find_synth_preset(name);
    ASSERT_NE(p, nullptr);
    SynthSpec s = p->spec;
    s.fill = SynthFill::kFast;
    if (s.dim > 256) {  // keep the real tensor table, but small
      s.n_layers = 2;
      s.dim = 256;
      s.n_heads = 4;
      s.n_kv_heads = 2;
      s.head_dim = 64;
      s.hidden_dim = 512;
      s.vocab_size = 512;
      s.n_ctx = 256;
    }
    const std::string path = temp_path(std::string(name) + "_fast.gguf");
    Status st = write_synth_model(s, path, nullptr);
    ASSERT_TRUE(st.ok()) << st.error().message;
    expect_runs(path);
    std::filesystem::remove(path);
  }
}

TEST(SynthModel, HybridAndGemma4PresetsLoadAndRun) {
  // The tiny presets of the new architectures (every tensor kind of the real models), with
  // quantized (exact) and direct random blocks, and the i-quant mixes on qwen35moe.
  struct Case {
    const char* preset;
    const char* type;
    SynthFill fill;
  };
  // (Exact fills of the MoE presets take seconds; the dense ones cover the quantizer path.)
  const Case cases[] = {
      {"qwen35moe-tiny", "q4_k_m", SynthFill::kFast},  {"qwen35moe-tiny", "iq2_m", SynthFill::kFast},
      {"qwen35moe-tiny", "iq3_xxs", SynthFill::kFast}, {"qwen35-tiny", "q4_k_m", SynthFill::kExact},
      {"qwen35-tiny", "q4_k_m", SynthFill::kFast},     {"qwen3next-tiny", "q4_k_m", SynthFill::kFast},
      {"gemma4moe-tiny", "q4_k_m", SynthFill::kFast},  {"gemma4moe-tiny", "dense", SynthFill::kFast},
      {"gemma4e-tiny", "q4_k_m", SynthFill::kExact},   {"gemma4e-tiny", "q4_k_m", SynthFill::kFast},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.preset) + "/" + c.type + (c.fill == SynthFill::kFast ? "/fast" : "/exact"));
    const SynthPreset* p = find_synth_preset(c.preset);
    ASSERT_NE(p, nullptr);
    SynthSpec s = p->spec;
    s.type = c.type;
    s.fill = c.fill;
    if (std::string(c.type) == "dense") {  // gemma4 without experts (the 31B's layout)
      s.type = "q4_k_m";
      s.n_experts = s.n_experts_active = 0;
    }
    const std::string path = temp_path(std::string(c.preset) + "_" + c.type + ".gguf");
    Status st = write_synth_model(s, path, nullptr);
    ASSERT_TRUE(st.ok()) << st.error().message;
    expect_runs(path);
    std::filesystem::remove(path);
  }
}

// The converter's metadata keys (in its order) and tensor names: each tiny preset against the
// fixture of its architecture made by llama.cpp's converter (../shared/models).
TEST(SynthModel, KeysAndTensorNamesMatchTheConverterFixtures) {
  const std::pair<const char*, const char*> cases[] = {
      {"qwen35moe-tiny", "syn-qwen35moe-small"}, {"qwen3next-tiny", "syn-qwen3next-small"},
      {"qwen35-tiny", "syn-qwen35-small"},       {"gemma4moe-tiny", "syn-gemma4moe-small"},
      {"gemma4e-tiny", "syn-gemma4e-small"},
  };
  // Architecture keys in file order ("general.*" and "tokenizer.*" excluded).
  auto arch_keys = [](const GgufFile& f) {
    std::vector<std::string> keys;
    for (const auto& [key, value] : f.metadata()) {
      if (key.rfind("general.", 0) != 0 && key.rfind("tokenizer.", 0) != 0) keys.push_back(key);
    }
    return keys;
  };
  // Names of the non-layer tensors and of layer `layer` with the block number removed.
  auto names = [](const GgufFile& f, int64_t layer) {
    std::set<std::string> out;
    const std::string blk = "blk." + std::to_string(layer) + ".";
    for (const GgufTensorInfo& t : f.tensors()) {
      if (t.name.rfind("blk.", 0) != 0) out.insert(t.name);
      if (t.name.rfind(blk, 0) == 0) out.insert("blk.N." + t.name.substr(blk.size()));
    }
    return out;
  };
  for (const auto& [preset, fixture] : cases) {
    SCOPED_TRACE(preset);
    auto ref = gguf_open(shared_dir() + "/models/" + fixture + ".gguf");
    if (!ref.ok()) GTEST_SKIP() << "no fixture " << fixture;
    const std::string path = temp_path(std::string(preset) + "_keys.gguf");
    SynthSpec spec = find_synth_preset(preset)->spec;
    spec.fill = SynthFill::kFast;  // the table and keys are what matter here
    ASSERT_TRUE(write_synth_model(spec, path, nullptr).ok());
    auto ours = gguf_open(path);
    ASSERT_TRUE(ours.ok()) << ours.error().message;
    EXPECT_EQ(arch_keys(*ours), arch_keys(*ref));
    auto n_layers = [](const GgufFile& f) {
      return *f.get_int(f.get_string("general.architecture").value() + ".block_count");
    };
    const int64_t ref_layers = n_layers(*ref), our_layers = n_layers(*ours);
    // Layer 0 (delta net / sliding) and the last layer (full attention) of each.
    EXPECT_EQ(names(*ours, 0), names(*ref, 0));
    EXPECT_EQ(names(*ours, our_layers - 1), names(*ref, ref_layers - 1));
    std::filesystem::remove(path);
  }
}

TEST(SynthModel, DeterministicForASeed) {
  const std::string a = temp_path("det_a.gguf"), b = temp_path("det_b.gguf"), c = temp_path("det_c.gguf");
  SynthSpec s = small_spec("qwen3moe", "q4_k_m");
  ASSERT_TRUE(write_synth_model(s, a, nullptr).ok());
  ASSERT_TRUE(write_synth_model(s, b, nullptr).ok());
  s.seed = 2;
  ASSERT_TRUE(write_synth_model(s, c, nullptr).ok());
  EXPECT_EQ(slurp(a), slurp(b));
  EXPECT_NE(slurp(a), slurp(c));
  for (const auto& p : {a, b, c}) std::filesystem::remove(p);
}

TEST(SynthModel, BadSpecsNameTheFlag) {
  SynthSpec s = small_spec("llama", "q4_k_m");
  s.arch = "gpt2";
  EXPECT_NE(validate_synth_spec(s).error().message.find("--arch"), std::string::npos);
  s = small_spec("llama", "q9_k");
  EXPECT_NE(validate_synth_spec(s).error().message.find("--type"), std::string::npos);
  s = small_spec("llama", "q4_k_m");
  s.n_kv_heads = 3;
  EXPECT_FALSE(validate_synth_spec(s).ok());
  s = small_spec("qwen3moe", "q4_k_m");
  s.n_experts = 0;
  EXPECT_NE(validate_synth_spec(s).error().message.find("--experts"), std::string::npos);
  s = small_spec("qwen3moe", "q4_k_m");
  s.n_experts_active = 9;
  EXPECT_NE(validate_synth_spec(s).error().message.find("--experts-active"), std::string::npos);
}

TEST(SynthModel, BadHybridAndGemma4SpecsNameTheFlag) {
  auto message = [](const SynthSpec& spec) {
    Status st = validate_synth_spec(spec);
    return st.ok() ? std::string("ok") : st.error().message;
  };
  const SynthSpec q = find_synth_preset("qwen35moe-tiny")->spec;
  const SynthSpec g = find_synth_preset("gemma4e-tiny")->spec;
  EXPECT_EQ(message(q), "ok");
  EXPECT_EQ(message(g), "ok");
  SynthSpec s = q;
  s.ssm_v_heads = 3;  // not a multiple of 2 key heads
  EXPECT_NE(message(s).find("--ssm-v-heads"), std::string::npos) << message(s);
  s = q;
  s.full_attention_interval = 5;  // more than the 4 layers
  EXPECT_NE(message(s).find("--full-attn-interval"), std::string::npos) << message(s);
  s = q;
  s.shared_expert_hidden_dim = 0;
  EXPECT_NE(message(s).find("--shared-ff"), std::string::npos) << message(s);
  s = q;
  s.n_rot = 2;  // IMRoPE sections need 4 rotated dims
  EXPECT_NE(message(s).find("--rope-dims"), std::string::npos) << message(s);
  s = g;
  s.shared_kv_layers = 5;  // leaves one layer with its own KV
  EXPECT_NE(message(s).find("--shared-kv-layers"), std::string::npos) << message(s);
  s = g;
  s.swa_period = 4;  // layers 1, 2 (the last with own KV) would be sliding, sliding
  EXPECT_NE(message(s).find("--shared-kv-layers"), std::string::npos) << message(s);
  s = g;
  s.n_kv_heads_full = 3;  // does not divide 4 heads
  EXPECT_NE(message(s).find("--kv-heads-full"), std::string::npos) << message(s);
  s = g;
  s.head_dim_swa = 63;
  EXPECT_NE(message(s).find("--head-dim-swa"), std::string::npos) << message(s);
}

}  // namespace
}  // namespace sniper
