// SPDX-License-Identifier: MIT
// The plan of an expert-parallel serving rank (issue 44, src/dist): it loads only the routed
// experts (through its own expert cache, sized for the experts it owns) and the small per-layer
// tensors; no attention, embeddings, output head, KV cache or checkpoints. Rank 0's plan is the
// whole model's, and a dense model plans as usual.
#include <gtest/gtest.h>

#include <string>

#include "engine/plan.h"
#include "golden/shared_dir.h"
#include "model/tensor_catalog.h"
#include "model/tensor_names.h"

namespace sniper {
namespace {

std::string model_path(const std::string& name) { return shared_dir() + "/models/" + name + ".gguf"; }

TEST(PlanServing, AServingRankLoadsOnlyItsRoutedExperts) {
  for (const char* name : {"syn-qwen3moe-Q4_K_M", "syn-qwen35moe-small", "syn-gemma4moe-small"}) {
    SCOPED_TRACE(name);
    auto file = gguf_open(model_path(name));
    ASSERT_TRUE(file.ok()) << file.error().message;
    auto config = load_model_config(*file);
    ASSERT_TRUE(config.ok());
    const ModelConfig& c = *config;
    ASSERT_TRUE(c.is_moe());
    PlanRequest req;
    req.n_ctx = 512;
    req.budget_bytes = uint64_t{1} << 40;
    auto whole = make_plan(*file, c, req);
    ASSERT_TRUE(whole.ok()) << whole.error().message;
    EXPECT_TRUE(whole->all_resident);
    EXPECT_GT(whole->kv_bytes, 0u);

    const int64_t share = (c.n_experts + 2) / 3;  // rank 1 of 3
    req.serve_experts_per_layer = share;
    auto serving = make_plan(*file, c, req);
    ASSERT_TRUE(serving.ok()) << serving.error().message;
    EXPECT_FALSE(serving->all_resident);
    EXPECT_TRUE(serving->stream_experts);
    EXPECT_FALSE(serving->stream_embeddings);
    EXPECT_EQ(serving->kv_bytes, 0u);
    EXPECT_EQ(serving->checkpoint_bytes, 0u);
    // A roomy budget caches every expert it owns, and no more.
    EXPECT_EQ(serving->n_expert_slots, c.n_layers * share);
    EXPECT_LT(serving->planned_bytes(), whole->planned_bytes());
    EXPECT_LT(serving->resident_weight_bytes, whole->resident_weight_bytes - whole->total_expert_bytes + 1);
    // Nothing but routed experts and small per-layer tensors is loaded.
    const TensorCatalog catalog(c);
    int64_t attention = 0;
    for (const GgufTensorInfo& t : file->tensors()) {
      const TensorUse* u = catalog.find(t.name);
      if (u == nullptr) continue;
      const bool loaded = !serving->unloaded_tensors.count(t.name) && !serving->streamed_tensors.count(t.name);
      if (u->role == TensorRole::kAttention) ++attention;
      if (u->role == TensorRole::kAttention || u->role == TensorRole::kEmbedding || u->role == TensorRole::kDenseFfn ||
          t.name == kOutputName) {
        EXPECT_FALSE(loaded) << t.name;
      }
      if (u->role == TensorRole::kExpert) {
        EXPECT_TRUE(serving->streamed_tensors.count(t.name)) << t.name;
      }
    }
    EXPECT_GT(attention, 0);
    // Under a budget too small for all it owns, the cache holds what fits (at least a layer's active experts).
    req.budget_bytes = serving->min_budget_bytes;
    auto tight = make_plan(*file, c, req);
    ASSERT_TRUE(tight.ok()) << tight.error().message;
    EXPECT_LE(tight->planned_bytes(), req.budget_bytes);
    EXPECT_GE(tight->n_expert_slots, c.n_experts_active + 2);
  }
}

TEST(PlanServing, ADenseModelPlansAsUsual) {
  auto file = gguf_open(model_path("syn-qwen3"));
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto config = load_model_config(*file);
  ASSERT_TRUE(config.ok());
  PlanRequest req;
  req.n_ctx = 512;
  req.budget_bytes = uint64_t{1} << 40;
  auto whole = make_plan(*file, *config, req);
  req.serve_experts_per_layer = 4;
  auto serving = make_plan(*file, *config, req);
  ASSERT_TRUE(whole.ok() && serving.ok());
  EXPECT_EQ(serving->planned_bytes(), whole->planned_bytes());
  EXPECT_EQ(serving->kv_bytes, whole->kv_bytes);
}

}  // namespace
}  // namespace sniper
