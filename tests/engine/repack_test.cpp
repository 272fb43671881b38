// SPDX-License-Identifier: MIT
// The load-time repack of i-quant weights (quant/iq_repack.h, engine/plan.h): every i-quant
// model of ../shared/models/iq gives bit-identical logits with its weights repacked and in the
// file's layout; the plan repacks only when everything is resident, picks the tensors read
// every token first when the budget has room for some only, never exceeds the budget, and
// repacks nothing under --no-repack, mmap or streaming.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/model.h"
#include "engine/plan.h"
#include "engine/session.h"
#include "golden/shared_dir.h"
#include "model/tensor_catalog.h"
#include "quant/iq_repack.h"

namespace sniper {
namespace {

const std::vector<int32_t> kIds = {1, 501, 500, 505, 196, 90, 472, 56, 136, 73, 165, 275, 63, 408, 126, 403, 165};

std::string model_path(const std::string& name) { return shared_dir() + "/models/" + name + ".gguf"; }

// Logits of the prompt in chunks of 8 (the batch kernels) plus 4 single-token steps (the matvecs).
std::vector<float> run(Model& model) {
  SessionOptions so;
  so.n_threads = 2;
  so.batch = 8;
  auto session = Session::create(model, so);
  EXPECT_TRUE(session.ok());
  std::vector<float> all;
  EXPECT_TRUE((*session)->eval(kIds, &all).ok());
  for (int i = 0; i < 4; ++i) {
    const int32_t one[1] = {kIds[static_cast<size_t>(i) * 3]};
    EXPECT_TRUE((*session)->eval(one).ok());
    all.insert(all.end(), (*session)->last_logits().begin(), (*session)->last_logits().end());
  }
  return all;
}

class RepackModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RepackModelTest, RepackedEqualsFileLayoutBitForBit) {
  const std::string path = model_path(GetParam());
  ModelLoadOptions lo;
  lo.batch = 8;
  auto repacked = Model::load(path, lo);
  ASSERT_TRUE(repacked.ok()) << repacked.error().message;
  const Model& m = **repacked;
  ASSERT_GT(m.store().n_repacked(), 0);
  EXPECT_EQ(m.store().n_repacked(), static_cast<int64_t>(m.plan().repacked_tensors.size()));
  EXPECT_EQ(m.plan().repack_extra_bytes, m.plan().repack_all_extra_bytes);
  for (const std::string& name : m.plan().repacked_tensors) {
    const QTensor* t = m.store().find_tensor(name);
    ASSERT_NE(t, nullptr);
    const GgmlType file_type = m.gguf().find_tensor(name)->type;
    EXPECT_EQ(t->type, repacked_type(file_type)) << name;
    EXPECT_NE(t->type, file_type) << name;
    EXPECT_EQ(t->row_bytes, row_bytes(t->type, t->ne[0])) << name;
  }
  lo.repack = false;
  auto plain = Model::load(path, lo);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ((*plain)->store().n_repacked(), 0);
  EXPECT_TRUE((*plain)->plan().repacked_tensors.empty());
  EXPECT_GT((*plain)->plan().repack_all_extra_bytes, 0u);
  const std::vector<float> a = run(**repacked), b = run(**plain);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_TRUE(a == b) << "repacked logits differ from the file layout's";
}

INSTANTIATE_TEST_SUITE_P(IqModels, RepackModelTest,
                         ::testing::Values("iq/syn-llama-IQ1_S", "iq/syn-llama-IQ1_M", "iq/syn-llama-IQ2_XXS",
                                           "iq/syn-llama-IQ2_XS", "iq/syn-llama-IQ2_S", "iq/syn-llama-IQ2_M",
                                           "iq/syn-llama-IQ3_XXS", "iq/syn-llama-IQ3_S", "iq/syn-llama-IQ3_M",
                                           "iq/syn-llama-TQ1_0", "iq/syn-qwen3moe-IQ3_XXS"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string s = info.param.substr(3);
                           for (char& ch : s) ch = ch == '-' ? '_' : ch;
                           return s;
                         });

struct Planned {
  GgufFile file;
  ModelConfig config;
};

Planned open_planned(const std::string& name) {
  auto file = gguf_open(model_path(name));
  EXPECT_TRUE(file.ok());
  auto config = load_model_config(*file);
  EXPECT_TRUE(config.ok());
  return {std::move(file).value(), std::move(config).value()};
}

MemoryPlan plan_for(const Planned& p, uint64_t budget, bool repack = true, bool force_stream = false) {
  PlanRequest req;
  req.budget_bytes = budget;
  req.n_ctx = 256;
  req.batch = 8;
  req.repack = repack;
  req.force_stream = force_stream;
  auto plan = make_plan(p.file, p.config, req);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_LE(plan->planned_bytes(), budget);
  return std::move(plan).value();
}

TEST(RepackPlan, BudgetDecidesHowMuchIsRepackedExpertsLast) {
  const Planned p = open_planned("iq/syn-qwen3moe-IQ3_XXS");
  const MemoryPlan all = plan_for(p, uint64_t{1} << 40);
  ASSERT_TRUE(all.all_resident);
  ASSERT_GT(all.repack_all_extra_bytes, 0u);
  EXPECT_EQ(all.repack_extra_bytes, all.repack_all_extra_bytes);
  // Roles as the plan reads them: from the blocks' tensor tables.
  const TensorCatalog catalog(p.config);
  auto is_expert = [&](const std::string& name) {
    const TensorUse* u = catalog.find(name);
    return u != nullptr && u->role == TensorRole::kExpert;
  };
  uint64_t expert_extra = 0;
  int64_t n_experts = 0;
  for (const std::string& name : all.repacked_tensors) {
    if (!is_expert(name)) continue;
    ++n_experts;
    const GgufTensorInfo* t = p.file.find_tensor(name);
    expert_extra += t->nbytes / t->row_bytes() * row_bytes(repacked_type(t->type), t->ne[0]) - t->nbytes;
  }
  ASSERT_GT(n_experts, 0);
  ASSERT_LT(expert_extra, all.repack_all_extra_bytes);

  // No room beyond the weights: nothing repacked, the cost still reported.
  const MemoryPlan none = plan_for(p, all.all_resident_bytes);
  EXPECT_TRUE(none.all_resident);
  EXPECT_TRUE(none.repacked_tensors.empty());
  EXPECT_EQ(none.repack_all_extra_bytes, all.repack_all_extra_bytes);
  EXPECT_EQ(
      none.resident_weight_bytes + none.kv_bytes + none.checkpoint_bytes + none.scratch_bytes + none.overhead_bytes,
      all.all_resident_bytes);

  // Room for the tensors read every token but not for the experts: those go first.
  const uint64_t some_room = all.repack_all_extra_bytes - expert_extra;
  const MemoryPlan some = plan_for(p, all.all_resident_bytes + some_room);
  EXPECT_EQ(some.repack_extra_bytes, some_room);
  for (const std::string& name : some.repacked_tensors) {
    EXPECT_FALSE(is_expert(name)) << name << " repacked before the tensors read every token";
  }
  EXPECT_NE(some.describe().find("of which repack"), std::string::npos) << some.describe();
  EXPECT_EQ(some.resident_weight_bytes, none.resident_weight_bytes + some_room);

  EXPECT_TRUE(plan_for(p, uint64_t{1} << 40, /*repack=*/false).repacked_tensors.empty());
}

TEST(RepackPlan, NeverWhenWeightsStreamOrMapped) {
  const Planned p = open_planned("iq/syn-qwen3moe-IQ3_XXS");
  const MemoryPlan streamed = plan_for(p, uint64_t{1} << 40, true, /*force_stream=*/true);
  EXPECT_FALSE(streamed.all_resident);
  EXPECT_TRUE(streamed.repacked_tensors.empty());
  EXPECT_EQ(streamed.repack_extra_bytes, 0u);

  ModelLoadOptions lo;
  lo.residency = ResidencyMode::kMmap;
  auto mapped = Model::load(model_path("iq/syn-llama-IQ2_M"), lo);
  ASSERT_TRUE(mapped.ok()) << mapped.error().message;
  EXPECT_EQ((*mapped)->store().n_repacked(), 0);
}

}  // namespace
}  // namespace sniper
