// SPDX-License-Identifier: MIT
// The memory plan at long context (issue 23, point 4): the KV cache keeps its place when the
// budget is small. With a large context and a q4_0 cache, a budget below the all-resident size
// still reserves the cache's exact bytes (SequenceState::bytes_for) and streams weights instead,
// stays within the budget, and a budget below the minimum is an error naming the KV bytes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "engine/plan.h"
#include "kv/sequence_state.h"
#include "synth/synth_model.h"

namespace sniper {
namespace {

TEST(PlanLongContext, KvKeepsItsPlaceAndWeightsStreamUnderASmallBudget) {
  // Twelve small layers: streaming them needs less than keeping them (two layer buffers).
  const std::string path =
      (std::filesystem::temp_directory_path() / ("sniper_plan_long_" + std::to_string(::getpid()) + ".gguf")).string();
  SynthSpec spec;
  spec.arch = "llama";
  spec.dim = 128;
  spec.n_layers = 12;
  spec.n_heads = 4;
  spec.n_kv_heads = 4;
  spec.head_dim = 32;
  spec.hidden_dim = 512;
  spec.vocab_size = 512;
  spec.n_ctx = 65536;
  spec.type = "q8_0";
  ASSERT_TRUE(write_synth_model(spec, path, nullptr).ok());
  auto file = gguf_open(path);
  std::filesystem::remove(path);  // the open file stays readable
  ASSERT_TRUE(file.ok());
  auto config = load_model_config(*file);
  ASSERT_TRUE(config.ok());
  PlanRequest req;
  req.n_ctx = 65536;
  req.kv_type = KvConfig(KvType::kQ4_0, KvType::kQ4_0, FlashAttn::kOn);
  req.budget_bytes = uint64_t{1} << 40;
  auto roomy = make_plan(*file, *config, req);
  ASSERT_TRUE(roomy.ok()) << roomy.error().message;
  const uint64_t kv = SequenceState::bytes_for(layer_state_specs(*config), req.n_ctx, req.kv_type);
  EXPECT_EQ(roomy->kv_bytes, kv);
  EXPECT_TRUE(roomy->all_resident);
  // At 64K the q4_0 cache is most of the memory (as for an 8-9B model on a 16 GB machine).
  ASSERT_GT(kv, roomy->resident_weight_bytes) << "kv " << kv << " weights " << roomy->resident_weight_bytes;

  // The smallest budget any plan works with (streaming forced; a roomy plan reports its own size).
  req.force_stream = true;
  auto streamed = make_plan(*file, *config, req);
  ASSERT_TRUE(streamed.ok()) << streamed.error().message;
  req.force_stream = false;
  EXPECT_EQ(streamed->kv_bytes, kv);
  // Between the minimum and all-resident: the KV cache is whole, weights stream.
  req.budget_bytes = (streamed->min_budget_bytes + roomy->all_resident_bytes) / 2;
  ASSERT_LT(req.budget_bytes, roomy->all_resident_bytes);
  auto tight = make_plan(*file, *config, req);
  ASSERT_TRUE(tight.ok()) << tight.error().message;
  EXPECT_EQ(tight->kv_bytes, kv);
  EXPECT_FALSE(tight->all_resident);
  EXPECT_TRUE(tight->stream_dense_ffn || tight->stream_attention);
  EXPECT_LE(tight->planned_bytes(), req.budget_bytes);
  EXPECT_LT(tight->resident_weight_bytes, roomy->resident_weight_bytes);
  EXPECT_GE(tight->min_budget_bytes, kv);

  // Below the minimum: an error that names the KV cache's share.
  req.budget_bytes = tight->min_budget_bytes - 1;
  auto refused = make_plan(*file, *config, req);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("KV"), std::string::npos) << refused.error().message;
}

}  // namespace
}  // namespace sniper
