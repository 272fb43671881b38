// SPDX-License-Identifier: MIT
// The automatic prefill chunk (engine/prefill_chunk.h): which chunk the planner picks under
// various budgets, context sizes and expert sizes, and that streamed runs in those long chunks
// give the resident run's logits bit for bit (with eviction, prefetch and reads overlapping).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/memory_limit.h"
#include "engine/model.h"
#include "engine/plan.h"
#include "engine/prefill_chunk.h"
#include "engine/session.h"
#include "golden/shared_dir.h"

namespace sniper {
namespace {

std::string model_path(const std::string& name) { return shared_dir() + "/models/" + name + ".gguf"; }

struct Fixture {
  GgufFile file;
  ModelConfig config;
};

Fixture open_fixture(const std::string& name) {
  auto file = gguf_open(model_path(name));
  EXPECT_TRUE(file.ok()) << file.error().message;
  auto config = load_model_config(*file);
  EXPECT_TRUE(config.ok()) << config.error().message;
  return {std::move(file).value(), std::move(config).value()};
}

PlanRequest stream_request(uint64_t budget, int64_t n_ctx) {
  PlanRequest req;
  req.budget_bytes = budget;
  req.n_ctx = n_ctx;
  req.force_stream = true;
  return req;
}

// The candidate after `batch` going up: the next power of two, capped by the longest chunk.
int64_t next_longer(int64_t batch, int64_t longest) { return std::min(batch * 2, longest); }

TEST(PrefillChunk, FitRuleChecksScratchShareAndTwoLayersOfSlots) {
  ModelConfig c;
  c.n_layers = 10;
  c.n_experts = 8;
  MemoryPlan p;
  p.budget_bytes = 8000;
  p.scratch_bytes = 1000;
  p.stream_experts = true;
  p.n_expert_slots = 16;
  EXPECT_TRUE(stream_chunk_fits(p, c));
  p.scratch_bytes = 1001;  // over an eighth of the budget
  EXPECT_FALSE(stream_chunk_fits(p, c));
  p.scratch_bytes = 1000;
  p.n_expert_slots = 15;  // one slot short of two layers' experts
  EXPECT_FALSE(stream_chunk_fits(p, c));
  c.n_layers = 1;  // a one-layer model: all of its experts are enough
  p.n_expert_slots = 8;
  EXPECT_TRUE(stream_chunk_fits(p, c));
  p.stream_experts = false;  // dense streaming: only the scratch share counts
  p.n_expert_slots = 0;
  EXPECT_TRUE(stream_chunk_fits(p, c));
}

TEST(PrefillChunk, NothingStreamingKeepsTheResidentChunk) {
  const Fixture f = open_fixture("syn-qwen3moe-Q4_K_M");
  PlanRequest req;
  req.budget_bytes = UINT64_MAX / 4;
  req.n_ctx = 256;
  auto choice = choose_prefill_chunk(f.file, f.config, req);
  ASSERT_TRUE(choice.ok()) << choice.error().message;
  EXPECT_EQ(choice->batch, kResidentChunk);
  EXPECT_TRUE(choice->plan.all_resident);
}

TEST(PrefillChunk, RoomyStreamingTakesTheWholeContextUpTo4096) {
  for (const char* name : {"syn-qwen3moe-Q4_K_M", "syn-llama-Q4_K_M"}) {
    SCOPED_TRACE(name);
    const Fixture f = open_fixture(name);
    for (int64_t n_ctx : {int64_t{32}, int64_t{100}, int64_t{256}, std::min<int64_t>(f.config.n_ctx_train, 4096)}) {
      SCOPED_TRACE(n_ctx);
      auto choice = choose_prefill_chunk(f.file, f.config, stream_request(UINT64_MAX / 4, n_ctx));
      ASSERT_TRUE(choice.ok()) << choice.error().message;
      EXPECT_FALSE(choice->plan.all_resident);
      EXPECT_EQ(choice->batch, std::max<int64_t>(kShortPromptChunk, std::min(n_ctx, kMaxPrefillChunk)));
    }
  }
}

TEST(PrefillChunk, MinimumBudgetFallsBackTo64AndBelowItIsAnError) {
  const Fixture f = open_fixture("syn-qwen3moe-Q4_K_M");
  PlanRequest req = stream_request(UINT64_MAX / 4, 256);
  req.batch = kShortPromptChunk;
  auto min_plan = make_plan(f.file, f.config, req);
  ASSERT_TRUE(min_plan.ok());
  auto at_min = choose_prefill_chunk(f.file, f.config, stream_request(min_plan->min_budget_bytes, 256));
  ASSERT_TRUE(at_min.ok()) << at_min.error().message;
  EXPECT_EQ(at_min->batch, kShortPromptChunk);
  EXPECT_EQ(at_min->plan.n_expert_slots, f.config.n_experts_active + 2);
  auto below = choose_prefill_chunk(f.file, f.config, stream_request(min_plan->min_budget_bytes - 4096, 256));
  ASSERT_FALSE(below.ok());
  EXPECT_NE(below.error().message.find("minimum"), std::string::npos) << below.error().message;
}

// The scratch counts the logits a session really holds (its last token's row, plus the rows a
// caller asks for at once), not a row per chunk token: with Qwen3's 151,936-token vocabulary a
// 2 GiB budget gets a chunk of 1,024 tokens or more, where a chunk's worth of logit rows alone
// (1,024 x 594 KiB) would be over twice the eighth of the budget the scratch may take (such an
// estimate capped the chunk at 256).
TEST(PrefillChunk, LargeVocabularyLogitsDoNotCapTheChunk) {
  Fixture f = open_fixture("syn-qwen3moe-Q4_K_M");
  f.config.vocab_size = 151936;
  const uint64_t budget = uint64_t{2} << 30;
  const uint64_t row_bytes = static_cast<uint64_t>(f.config.vocab_size) * sizeof(float);
  auto choice = choose_prefill_chunk(f.file, f.config, stream_request(budget, 4096));
  ASSERT_TRUE(choice.ok()) << choice.error().message;
  EXPECT_GE(choice->batch, 1024);
  EXPECT_GT(1024 * row_bytes, 2 * (budget / kChunkScratchShare));
  EXPECT_TRUE(stream_chunk_fits(choice->plan, f.config));
  EXPECT_LE(choice->plan.scratch_bytes, budget / kChunkScratchShare);
  // Speculative decoding's verification rows (draft_max 16: 17 more) are counted, once per session.
  PlanRequest spec = stream_request(budget, 4096);
  spec.batch = choice->batch;
  spec.n_sessions = 2;
  PlanRequest plain = spec;
  spec.n_logit_rows = 18;
  auto p_spec = make_plan(f.file, f.config, spec);
  auto p_plain = make_plan(f.file, f.config, plain);
  ASSERT_TRUE(p_spec.ok() && p_plain.ok());
  EXPECT_EQ(p_spec->scratch_bytes - p_plain->scratch_bytes, 2 * 17 * row_bytes);
}

// --residency resident with --batch auto under too small a budget: the error names the budget the
// shortest automatic chunk would need (not a streaming chunk's).
TEST(PrefillChunk, ResidentOnlyErrorNamesTheShortChunksBudget) {
  const std::string path = model_path("syn-qwen3moe-Q8_0");
  ModelLoadOptions lo;
  lo.residency = ResidencyMode::kResident;
  lo.batch = kShortPromptChunk;
  auto at64 = Model::load(path, lo);
  ASSERT_TRUE(at64.ok()) << at64.error().message;
  const uint64_t need = (*at64)->plan().all_resident_bytes;
  lo.batch = 0;
  lo.mem_bytes = need - 4096;
  auto small = Model::load(path, lo);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.error().message.find("needs a budget of " + format_bytes(need)), std::string::npos)
      << small.error().message;
  lo.mem_bytes = need;
  auto exact = Model::load(path, lo);
  ASSERT_TRUE(exact.ok()) << exact.error().message;
  EXPECT_EQ((*exact)->planned_batch(), kShortPromptChunk);
}

// Over a sweep of budgets: the chosen chunk obeys the rule, the next longer one does not, the
// chunk never shrinks as the budget grows, and a file with larger experts (Q8_0 against Q4_K_M,
// the same shapes) never gets a longer chunk for the same budget.
TEST(PrefillChunk, ChosenChunkIsTheLongestThatFitsAndGrowsWithTheBudget) {
  const Fixture q4 = open_fixture("syn-qwen3moe-Q4_K_M");
  const Fixture q8 = open_fixture("syn-qwen3moe-Q8_0");
  const int64_t n_ctx = 2048;
  PlanRequest base = stream_request(UINT64_MAX / 4, n_ctx);
  base.batch = kShortPromptChunk;
  auto q8_min = make_plan(q8.file, q8.config, base);
  ASSERT_TRUE(q8_min.ok());
  auto q8_all = choose_prefill_chunk(q8.file, q8.config, stream_request(UINT64_MAX / 4, n_ctx));
  ASSERT_TRUE(q8_all.ok());
  // Up to where the whole context's scratch is an eighth of the budget (on these tiny models the
  // scratch, not the experts, decides the top).
  const uint64_t lo = q8_min->min_budget_bytes, hi = std::max(q8_all->plan.all_resident_bytes * 2,
                                                              q8_all->plan.scratch_bytes * kChunkScratchShare * 5 / 4);
  int64_t last_q4 = 0, last_q8 = 0;
  std::vector<int64_t> seen;
  for (int step = 0; step <= 60; ++step) {
    const uint64_t budget = lo + (hi - lo) / 60 * static_cast<uint64_t>(step);
    SCOPED_TRACE(budget);
    auto c4 = choose_prefill_chunk(q4.file, q4.config, stream_request(budget, n_ctx));
    auto c8 = choose_prefill_chunk(q8.file, q8.config, stream_request(budget, n_ctx));
    ASSERT_TRUE(c4.ok() && c8.ok());
    for (const auto* c : {&*c4, &*c8}) {
      const Fixture& f = c == &*c4 ? q4 : q8;
      EXPECT_LE(c->plan.planned_bytes(), budget);
      if (c->batch > kShortPromptChunk) {
        EXPECT_TRUE(stream_chunk_fits(c->plan, f.config));
      }
      if (c->batch < n_ctx) {
        PlanRequest longer = stream_request(budget, n_ctx);
        longer.batch = next_longer(c->batch, n_ctx);
        auto p = make_plan(f.file, f.config, longer);
        EXPECT_TRUE(!p.ok() || !stream_chunk_fits(*p, f.config)) << "chunk " << c->batch << " is not the longest";
      }
    }
    EXPECT_GE(c4->batch, last_q4);
    EXPECT_GE(c8->batch, last_q8);
    EXPECT_GE(c4->batch, c8->batch);
    last_q4 = c4->batch;
    last_q8 = c8->batch;
    seen.push_back(c8->batch);
  }
  // The sweep covers the whole range (Q8_0): today's 64 at its minimum budget, the whole context
  // at the top, and something in between.
  EXPECT_EQ(seen.front(), kShortPromptChunk);
  EXPECT_EQ(seen.back(), n_ctx);
  EXPECT_TRUE(std::any_of(seen.begin(), seen.end(), [&](int64_t b) { return b > kShortPromptChunk && b < n_ctx; }));
}

// Model::load with --batch auto under a streaming budget plans the long chunk, and sessions made
// with it evaluate a long prompt in fewer, longer chunks with the resident run's exact logits.
class LongChunkStreamingTest : public ::testing::TestWithParam<std::string> {};

std::vector<int32_t> prompt_ids(int64_t n, int64_t vocab) {
  std::vector<int32_t> ids;
  uint32_t s = 12345;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    ids.push_back(static_cast<int32_t>((s >> 8) % static_cast<uint32_t>(vocab)));
  }
  return ids;
}

Result<std::vector<float>> run_prompt(Model& model, int64_t batch, const std::vector<int32_t>& ids) {
  SessionOptions so;
  so.n_threads = 2;
  so.batch = batch;
  auto session = Session::create(model, so);
  if (!session.ok()) return session.error();
  std::vector<float> all;
  SNIPER_TRY((*session)->eval(ids, &all));
  for (int i = 0; i < 3; ++i) {  // a few decode steps after the long chunk
    const int32_t one[1] = {ids[static_cast<size_t>(i)]};
    SNIPER_TRY((*session)->eval(one));
    all.insert(all.end(), (*session)->last_logits().begin(), (*session)->last_logits().end());
  }
  return all;
}

TEST_P(LongChunkStreamingTest, AutoChunkStreamedEqualsResidentBitForBit) {
  const std::string path = model_path(GetParam());
  constexpr int64_t kCtx = 256;
  // A budget with exactly two layers of expert slots at the whole-context chunk: the rule's
  // smallest cache, so experts are evicted and re-read between layers.
  const Fixture f = open_fixture(GetParam());
  PlanRequest req = stream_request(UINT64_MAX / 4, kCtx);
  req.batch = kCtx;
  auto roomy = make_plan(f.file, f.config, req);
  ASSERT_TRUE(roomy.ok());
  const int64_t slots = 2 * f.config.n_experts;
  ASSERT_LT(slots, f.config.n_layers * f.config.n_experts) << "the fixture must have more than two MoE layers";
  const uint64_t budget = std::max(
      roomy->min_budget_bytes + roomy->slot.slot_bytes * static_cast<uint64_t>(slots - (f.config.n_experts_active + 2)),
      roomy->scratch_bytes * kChunkScratchShare);
  ModelLoadOptions lo;
  lo.residency = ResidencyMode::kStream;
  lo.mem_bytes = budget;
  lo.n_ctx = kCtx;
  lo.batch = 0;
  auto streamed = Model::load(path, lo);
  ASSERT_TRUE(streamed.ok()) << streamed.error().message;
  ASSERT_TRUE((*streamed)->streams());
  const int64_t chunk = (*streamed)->planned_batch();
  EXPECT_GT(chunk, kShortPromptChunk);
  ASSERT_NE((*streamed)->expert_cache(), nullptr);
  EXPECT_LT((*streamed)->expert_cache()->n_slots(), f.config.n_layers * f.config.n_experts);

  const std::vector<int32_t> ids = prompt_ids(200, f.config.vocab_size);
  ModelLoadOptions resident;
  resident.n_ctx = kCtx;
  resident.batch = chunk;
  auto base_model = Model::load(path, resident);
  ASSERT_TRUE(base_model.ok()) << base_model.error().message;
  auto base = run_prompt(**base_model, chunk, ids);
  ASSERT_TRUE(base.ok()) << base.error().message;
  auto out = run_prompt(**streamed, chunk, ids);
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_EQ(out->size(), base->size());
  EXPECT_TRUE(*out == *base) << "streamed logits in chunks of " << chunk << " differ from resident ones";
  // The next layer's experts were hinted while this layer's computed, and the hints were used.
  const LayerCacheStats t = (*streamed)->expert_cache()->stats().total();
  EXPECT_GT(t.prefetch_issued, 0u);
  EXPECT_GT(t.prefetch_useful, 0u);
  EXPECT_GT((*streamed)->expert_cache()->stats().evictions, 0u);
}

INSTANTIATE_TEST_SUITE_P(MoeModels, LongChunkStreamingTest,
                         ::testing::Values("syn-qwen3moe-Q4_K_M", "syn-qwen35moe-small", "syn-gemma4moe-small"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace sniper
