// SPDX-License-Identifier: MIT
// Every model in ../shared/models against what llama.cpp computed (../shared/reference), and the
// 256-token prompts of ../shared/reference/kv (f16 KV cache without flash attention, our default,
// and every quantized-KV / flash-attention setting there) for the models it covers: prompt logits (one batch) and
// teacher-forced generation logits, row by row:
//   normalized squared error sum((a-b)^2)/sum(b^2) <= 1e-3 (quantized) or 1e-4 (float weights),
//   and the same top-1 token wherever the reference's top-1 margin is >= 0.03.
// stories260K must also reproduce its 200-token greedy generation exactly (ids and text).
// The ISA tier comes from SNIPER_ISA: ctest runs this binary once per tier (ref, avx2, avx512),
// and a run whose tier the host lacks is skipped (it would repeat the host's best tier).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/cpu_features.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "engine/session.h"
#include "golden/shared_dir.h"
#include "kernels/ops.h"

namespace sniper {
namespace {

std::vector<float> read_f32(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  EXPECT_TRUE(f.good()) << path;
  const size_t bytes = static_cast<size_t>(f.tellg());
  std::vector<float> v(bytes / sizeof(float));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str());
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct RowReport {
  double worst_nse = 0;
  int worst_row = -1;
  int top1_checked = 0;
  int top1_agree = 0;
  int top1_total_agree = 0;
  int rows = 0;
  int exact_rows = 0;   // rows equal to the reference bit for bit
  int first_diff = -1;  // first row that is not
};

// Compares one row; margin is the reference's top-1 margin for the row.
void compare_row(const float* ours, const float* ref, int64_t n_vocab, double margin, int row, RowReport& rep) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n_vocab; ++i) {
    const double d = static_cast<double>(ours[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  const double nse = den > 0 ? num / den : num;
  if (std::memcmp(ours, ref, static_cast<size_t>(n_vocab) * sizeof(float)) == 0) {
    ++rep.exact_rows;
  } else if (rep.first_diff < 0) {
    rep.first_diff = row;
  }
  if (nse > rep.worst_nse || rep.worst_row < 0) {
    rep.worst_nse = nse;
    rep.worst_row = row;
  }
  const bool agree = argmax(ours, n_vocab) == argmax(ref, n_vocab);
  rep.top1_total_agree += agree ? 1 : 0;
  if (margin >= 0.03) {
    ++rep.top1_checked;
    rep.top1_agree += agree ? 1 : 0;
    EXPECT_TRUE(agree) << "row " << row << ": top-1 differs although the reference margin is " << margin;
  }
  ++rep.rows;
}

bool is_float_model(const nlohmann::json& meta) {
  for (const auto& [type, count] : meta["tensor_type_histogram"].items()) {
    if (type != "F32" && type != "F16" && type != "BF16") return false;
  }
  return true;
}

// One reference: its directory under ../shared/reference and the model (../shared/models/<model>.gguf).
struct Case {
  Case(std::string ref_dir, std::string model_name, bool exact = false, KvConfig kv_config = {}, bool repack_iq = true)
      : ref(std::move(ref_dir)), model(std::move(model_name)), bit_exact(exact), kv(kv_config), repack(repack_iq) {}
  std::string ref;
  std::string model;
  // Every row must equal the reference bit for bit (at every tier): where the kernels follow the
  // reference's order exactly, so that an order change inside the bounds still shows.
  bool bit_exact = false;
  KvConfig kv;  // the reference's KV setting (reference/kv/<model>/<setting>)
  // Load i-quant weights in their lookup-free layouts (the default) or in the file's layout
  // (--no-repack): the i-quant models run both ways, so both sets of kernels meet the reference.
  bool repack = true;
};

// How gtest names a case in its messages.
void PrintTo(const Case& c, std::ostream* os) { *os << c.ref << (c.repack ? "" : " (file layout)"); }

// Skips every test when SNIPER_ISA names a tier this host lacks: selected_tier() clamps it to the
// host's best, which another ctest run of this binary already covers.
class TierEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* want = std::getenv("SNIPER_ISA");
    if (want != nullptr && std::strcmp(want, isa_tier_name(selected_tier())) != 0) {
      GTEST_SKIP() << "SNIPER_ISA=" << want << " is not runnable on this host (best " << isa_tier_name(host_best_tier())
                   << "), which its own run covers";
    }
  }
};
const auto* const kTierEnvironment = ::testing::AddGlobalTestEnvironment(new TierEnvironment);

class ReferenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(ReferenceTest, PromptAndTeacherForcedLogits) {
  const std::string name = GetParam().model;
  const std::string ref_dir = shared_dir() + "/reference/" + GetParam().ref;
  const nlohmann::json meta = read_json(ref_dir + "/meta.json");
  // The weight types are listed in the model's short-prompt reference.
  const nlohmann::json types_meta = read_json(shared_dir() + "/reference/" + name + "/meta.json");
  ModelLoadOptions lo;
  lo.repack = GetParam().repack;
  auto model = Model::load(shared_dir() + "/models/" + name + ".gguf", lo);
  ASSERT_TRUE(model.ok()) << model.error().message;
  SessionOptions so;
  so.n_ctx = 512;
  so.n_threads = 2;
  so.batch = 512;
  so.kv_type = GetParam().kv;
  auto session = Session::create(**model, so);
  ASSERT_TRUE(session.ok()) << session.error().message;
  const auto prompt = read_json(ref_dir + "/prompt_ids.json").get<std::vector<int32_t>>();
  const auto gen = read_json(ref_dir + "/gen_ids.json").get<std::vector<int32_t>>();
  const std::vector<float> ref_prompt = read_f32(ref_dir + "/prompt_logits.f32");
  const std::vector<float> ref_gen = read_f32(ref_dir + "/gen_logits.f32");
  const int64_t n_vocab = (*model)->config().vocab_size;
  ASSERT_EQ(ref_prompt.size(), prompt.size() * static_cast<size_t>(n_vocab));
  ASSERT_EQ(ref_gen.size(), gen.size() * static_cast<size_t>(n_vocab));
  const auto& margins_prompt = meta["top1_margin"]["prompt_rows"];
  const auto& margins_gen = meta["top1_margin"]["gen_rows"];
  const double bound = is_float_model(types_meta) ? 1e-4 : 1e-3;

  RowReport rep;
  std::vector<float> logits;
  ASSERT_TRUE((*session)->eval(prompt, &logits).ok());
  for (size_t r = 0; r < prompt.size(); ++r) {
    compare_row(logits.data() + r * static_cast<size_t>(n_vocab), ref_prompt.data() + r * static_cast<size_t>(n_vocab),
                n_vocab, margins_prompt[r].get<double>(), static_cast<int>(r), rep);
  }
  for (size_t i = 0; i < gen.size(); ++i) {
    const int32_t one[1] = {gen[i]};
    ASSERT_TRUE((*session)->eval(one).ok());
    compare_row((*session)->last_logits().data(), ref_gen.data() + i * static_cast<size_t>(n_vocab), n_vocab,
                margins_gen[i].get<double>(), static_cast<int>(prompt.size() + i), rep);
  }
  EXPECT_LE(rep.worst_nse, bound) << "worst row " << rep.worst_row;
  if (GetParam().bit_exact) {
    EXPECT_EQ(rep.exact_rows, rep.rows) << "first row that differs: " << rep.first_diff;
  }
  std::printf(
      "[reference] %-24s%s isa=%-6s rows=%d worst_nse=%.3e (row %d) top1 %d/%d checked, %d/%d all rows; "
      "bit-exact %d/%d, first other row %d\n",
      GetParam().ref.c_str(), GetParam().repack ? "" : " (file layout)", isa_tier_name(selected_tier()), rep.rows,
      rep.worst_nse, rep.worst_row, rep.top1_agree, rep.top1_checked, rep.top1_total_agree, rep.rows, rep.exact_rows,
      rep.rows, rep.first_diff);
}

std::vector<Case> reference_cases() {
  const std::vector<std::string> models = {
      "stories260K", "stories260K-Q8_0", "syn-llama", "syn-llama-BF16", "syn-llama-F16", "syn-llama-Q2_K",
      "syn-llama-Q3_K_M", "syn-llama-Q4_0", "syn-llama-Q4_K_M", "syn-llama-Q5_K_M", "syn-llama-Q6_K", "syn-llama-Q8_0",
      "syn-mixtral-Q4_K_M", "syn-qwen2", "syn-qwen2-Q8_0", "syn-qwen3", "syn-qwen3-Q4_K_M", "syn-qwen3moe-Q4_K_M",
      "syn-qwen3moe-Q6_K", "syn-qwen3moe-Q8_0",
      // The i-quant / ternary / 2-bit set (models/iq, reference/iq).
      "iq/syn-llama-IQ1_M", "iq/syn-llama-IQ1_S", "iq/syn-llama-IQ2_M", "iq/syn-llama-IQ2_S", "iq/syn-llama-IQ2_XS",
      "iq/syn-llama-IQ2_XXS", "iq/syn-llama-IQ3_M", "iq/syn-llama-IQ3_S", "iq/syn-llama-IQ3_XXS", "iq/syn-llama-IQ4_NL",
      "iq/syn-llama-Q2_K_S", "iq/syn-llama-TQ1_0", "iq/syn-llama-TQ2_0", "iq/syn-qwen3moe-IQ3_XXS",
      // Hybrid delta-net / attention models (../shared/reference/ARCHITECTURES.md).
      "syn-qwen35moe-small", "syn-qwen3next-small", "syn-qwen35-small", "syn-qwen35-Q4_K_M"};
  std::vector<Case> cases;
  for (const std::string& m : models) {
    cases.push_back({m, m, false});
    // The i-quants again in the file's layout (the models above load theirs repacked; IQ4_NL
    // and Q2_K_S have nothing to repack).
    const bool repacks =
        m.rfind("iq/", 0) == 0 && m.find("IQ4_NL") == std::string::npos && m.find("Q2_K_S") == std::string::npos;
    if (repacks) cases.push_back({m, m, false, KvConfig(), /*repack_iq=*/false});
  }
  // 256-token prompts in one batch (every model of reference/kv; the default KV setting). The
  // quantized ones are bit-exact: a Q4_K batch kernel in another float order stayed inside the
  // bound here (4.6e-4) while a Qwen3-MoE file went to 4e-3. stories260K's F32 rows differ from
  // row 0 on (2.9e-6 absolute, as in its short reference).
  cases.push_back({"kv/stories260K/f16-fa0", "stories260K", false});
  cases.push_back({"kv/syn-llama-Q8_0/f16-fa0", "syn-llama-Q8_0", true});
  cases.push_back({"kv/syn-qwen3-Q4_K_M/f16-fa0", "syn-qwen3-Q4_K_M", true});
  // Quantized KV caches and flash attention (reference/kv/README.md), every setting bit-exact:
  // with a quantized K or V, llama.cpp rotates Q/K/V (Hadamard), converts Q to K's vec_dot_type
  // and runs the per-row online softmax for the batch and the steps alike; with f16 K and V and
  // flash attention, the prompt batch runs its tiled f32 kernel and the steps its split-KV
  // decode over 2 threads (n_threads above); kernels/flash_attention.cpp follows all three.
  // stories260K (F32 weights) differs from row 0 on as its f16-fa0 rows do.
  const KvConfig f16_fa(KvType::kF16, KvType::kF16, FlashAttn::kOn);
  const auto both = [](KvType t) { return KvConfig(t, t, FlashAttn::kOn); };
  KvConfig q8k_f16v(KvType::kQ8_0, KvType::kF16, FlashAttn::kOff);
  KvConfig q8_norot = both(KvType::kQ8_0), q4_norot = both(KvType::kQ4_0);
  q8_norot.rotate = q4_norot.rotate = false;
  for (const char* m : {"syn-llama-Q8_0", "syn-qwen3-Q4_K_M"}) {
    const std::string dir = std::string("kv/") + m + "/";
    cases.push_back({dir + "f16-fa1", m, true, f16_fa});
    cases.push_back({dir + "q8_0-fa1", m, true, both(KvType::kQ8_0)});
    cases.push_back({dir + "q4_0-fa1", m, true, both(KvType::kQ4_0)});
    cases.push_back({dir + "q8_0k-f16v-fa0", m, true, q8k_f16v});
  }
  const std::string q3 = "kv/syn-qwen3-Q4_K_M/";
  cases.push_back({q3 + "q4_1-fa1", "syn-qwen3-Q4_K_M", true, both(KvType::kQ4_1)});
  cases.push_back({q3 + "q5_0-fa1", "syn-qwen3-Q4_K_M", true, both(KvType::kQ5_0)});
  cases.push_back({q3 + "iq4_nl-fa1", "syn-qwen3-Q4_K_M", true, both(KvType::kIQ4_NL)});
  cases.push_back({q3 + "q8_0-fa1-norot", "syn-qwen3-Q4_K_M", true, q8_norot});
  cases.push_back({q3 + "q4_0-fa1-norot", "syn-qwen3-Q4_K_M", true, q4_norot});
  cases.push_back({"kv/stories260K/f16-fa1", "stories260K", false, f16_fa});
  return cases;
}

std::string test_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s = info.param.ref + (info.param.repack ? "" : "_file_layout");
  std::replace(s.begin(), s.end(), '-', '_');
  std::replace(s.begin(), s.end(), '/', '_');
  return s;
}

INSTANTIATE_TEST_SUITE_P(AllModels, ReferenceTest, ::testing::ValuesIn(reference_cases()), test_name);

// gemma4 (issue 21): the MoE and the E-model (per-layer embeddings, shared KV, sliding window
// shorter than the 56 compared positions), bit for bit (issue 41: the sliding layers attend in
// the reference's order, kernels/attention.h CellWindow).
INSTANTIATE_TEST_SUITE_P(Gemma4, ReferenceTest,
                         ::testing::Values(Case{"syn-gemma4moe-small", "syn-gemma4moe-small", true},
                                           Case{"syn-gemma4e-small", "syn-gemma4e-small", true}),
                         test_name);

// The two stories prompts (and the 200-token run) by text: tokenize, generate greedily, compare.
void check_greedy_text(const std::string& model_name, const std::string& ref_subdir, const std::string& prompt_text) {
  const std::string ref_dir = shared_dir() + "/reference/" + ref_subdir;
  auto model = Model::load(shared_dir() + "/models/" + model_name + ".gguf", {});
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto tok = (*model)->tokenizer();
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  SessionOptions so;
  so.n_ctx = 512;
  so.n_threads = 2;
  auto session = Session::create(**model, so);
  ASSERT_TRUE(session.ok());
  const auto prompt_ref = read_json(ref_dir + "/prompt_ids.json").get<std::vector<int32_t>>();
  const auto gen_ref = read_json(ref_dir + "/gen_ids.json").get<std::vector<int32_t>>();
  const std::vector<int32_t> prompt = (*tok)->encode(prompt_text, /*add_special=*/true, /*parse_special=*/false);
  ASSERT_EQ(prompt, prompt_ref);
  GenerateOptions go;
  go.n_predict = static_cast<int64_t>(gen_ref.size());
  go.sampler.temperature = 0;
  go.stop_at_eog = false;
  std::string text;
  auto stats = generate(**session, **tok, prompt, go, [&](std::string_view t) {
    text.append(t);
    return true;
  });
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  const std::vector<int32_t>& hist = (*session)->history();
  // history = prompt + all generated tokens but the last (which was sampled, not evaluated).
  std::vector<int32_t> generated(hist.begin() + static_cast<long>(prompt.size()), hist.end());
  ASSERT_EQ(generated.size() + 1, gen_ref.size());
  EXPECT_TRUE(std::equal(generated.begin(), generated.end(), gen_ref.begin()));
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), gen_ref.begin(), gen_ref.end());
  // gen_text.txt: prompt + generation detokenized, BOS/EOS removed, SentencePiece leading space kept.
  std::vector<int32_t> no_special;
  for (int32_t id : all) {
    if (id != (*tok)->bos_id() && id != (*tok)->eos_id()) no_special.push_back(id);
  }
  std::string expected = read_text(ref_dir + "/gen_text.txt");
  std::string ours;
  for (int32_t id : no_special) ours += (*tok)->token_to_piece(id, false);
  EXPECT_EQ(ours, expected);
  // And what `sniper run` streams: the generated text equals the tail of gen_text after the prompt.
  EXPECT_NE(expected.find(text.substr(0, std::min<size_t>(text.size(), 40))), std::string::npos);
}

TEST(GreedyGeneration, Stories260KOnceUponATime200) {
  check_greedy_text("stories260K", "stories260K/gen200", "Once upon a time");
}

TEST(GreedyGeneration, Stories260KPrompt2) {
  check_greedy_text("stories260K", "stories260K/prompt2", "Lily wanted to play with the big red ball");
}

}  // namespace
}  // namespace sniper
