// SPDX-License-Identifier: MIT
// Synthetic i-quant models: (1) the random blocks of every i-quant / ternary type are valid
// (finite decode), zero-mean and have the requested std; (2) the per-tensor type mixture of
// every i-quant file type equals the one llama.cpp's quantizer chose for the fixture files in
// ../shared/models/iq (same shapes, tensor by tensor), and its general.file_type.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "golden/shared_dir.h"
#include "quant/quant.h"
#include "synth/synth_iq_blocks.h"
#include "synth/synth_mix.h"
#include "synth/synth_model.h"

namespace sniper {
namespace {

namespace fs = std::filesystem;

constexpr GgmlType kIqTypes[] = {GgmlType::kIQ2_XXS, GgmlType::kIQ2_XS, GgmlType::kIQ2_S,
                                 GgmlType::kIQ3_XXS, GgmlType::kIQ3_S,  GgmlType::kIQ1_S,
                                 GgmlType::kIQ1_M,   GgmlType::kTQ1_0,  GgmlType::kTQ2_0};

TEST(SynthIqBlocks, ValidZeroMeanAndTargetStd) {
  for (GgmlType type : kIqTypes) {
    const GgmlTypeInfo& info = get_type_info(type);
    SCOPED_TRACE(info.name);
    ASSERT_TRUE(has_iq_random_blocks(type));
    constexpr int64_t kBlocks = 2048;
    std::vector<uint8_t> blocks(info.type_size * kBlocks);
    SynthRng rng{42};
    fill_iq_random_blocks(type, rng, 0.02f, blocks.data(), kBlocks);
    std::vector<float> y(static_cast<size_t>(kBlocks * 256));
    dequantize_row_ref(type, blocks.data(), y.data(), static_cast<int64_t>(y.size()));
    double sum = 0, ss = 0;
    for (float v : y) {
      ASSERT_TRUE(std::isfinite(v));
      sum += v;
      ss += static_cast<double>(v) * v;
    }
    const double mean = sum / static_cast<double>(y.size());
    const double std = std::sqrt(ss / static_cast<double>(y.size()) - mean * mean);
    EXPECT_NEAR(std, 0.02, 0.02 * 0.05);
    // Zero mean by construction: the sample mean is within 5 standard errors of 0.
    EXPECT_LT(std::fabs(mean), 5.0 * std / std::sqrt(static_cast<double>(y.size())) + 1e-7);
  }
}

// The synthetic spec of a fixture file, from its GGUF metadata.
SynthSpec spec_of(const GgufFile& f, const std::string& ftype) {
  SynthSpec s;
  const std::string arch = *f.get_string("general.architecture");
  auto u = [&](const std::string& key) { return *f.get_int(arch + "." + key); };
  s.arch = arch;
  s.dim = u("embedding_length");
  s.n_layers = u("block_count");
  s.n_heads = u("attention.head_count");
  s.n_kv_heads = u("attention.head_count_kv");
  s.head_dim = s.dim / s.n_heads;
  s.hidden_dim = u("feed_forward_length");
  if (arch == "qwen3moe") {
    s.n_experts = u("expert_count");
    s.n_experts_active = u("expert_used_count");
    s.expert_hidden_dim = u("expert_feed_forward_length");
  }
  s.vocab_size = 512;
  s.type = ftype;
  return s;
}

TEST(SynthIqMix, TypesEqualLlamaCppsForTheFixtureFiles) {
  const fs::path dir = fs::path(shared_dir()) / "models" / "iq";
  if (!fs::is_directory(dir)) GTEST_SKIP() << "no " << dir;
  int n_files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    const std::string stem = entry.path().stem().string();  // syn-llama-IQ2_M
    std::string ftype = stem.substr(stem.rfind('-') + 1);
    if (ftype == "IQ4_NL") continue;  // a plain type here, covered elsewhere
    SCOPED_TRACE(stem);
    auto file = gguf_open(entry.path().string());
    ASSERT_TRUE(file.ok()) << file.error().message;
    auto plan = plan_synth_model(spec_of(*file, ftype));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    std::map<std::string, GgmlType> planned;
    for (const SynthTensor& t : *plan) planned[t.name] = t.type;
    int compared = 0;
    for (const GgufTensorInfo& t : file->tensors()) {
      auto it = planned.find(t.name);
      ASSERT_NE(it, planned.end()) << t.name << " is not in the synthetic plan";
      EXPECT_STREQ(get_type_info(it->second).name, get_type_info(t.type).name) << t.name;
      ++compared;
    }
    EXPECT_EQ(compared, static_cast<int>(plan->size()));
    auto rtp = resolve_synth_type(ftype);
    ASSERT_TRUE(rtp.ok());
    EXPECT_EQ(static_cast<int64_t>(rtp->file_type), *file->get_int("general.file_type"));
    ++n_files;
  }
  EXPECT_EQ(n_files, 13);
}

}  // namespace
}  // namespace sniper
