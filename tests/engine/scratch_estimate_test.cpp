// SPDX-License-Identifier: MIT
// The plan's activation scratch (Transformer::estimate_scratch_bytes) is an upper bound of what a
// session really allocates: for each block family (dense, MoE, gated attention + delta-net,
// hybrid MoE, gemma4's per-layer inputs and sliding rings), one token and a 64-token chunk, the plain
// and the flash-attention cache, with the attention scratch at its widest, the session's
// last-token logits and, where asked for, every row of a chunk. It also stays close: at most a few times the real use,
// with no batch of logits that forward() never writes.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/batch_eval.h"
#include "engine/model.h"
#include "engine/plan.h"
#include "engine/session.h"
#include "golden/shared_dir.h"
#include "model/transformer.h"

namespace sniper {
namespace {

constexpr int64_t kCtx = 128;
constexpr int kThreads = 2;

std::vector<int32_t> ids(int64_t n, int64_t vocab, uint32_t seed) {
  std::vector<int32_t> out;
  for (int64_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    out.push_back(static_cast<int32_t>((seed >> 8) % static_cast<uint32_t>(vocab)));
  }
  return out;
}

struct Case {
  const char* model;
  const char* kv;  // "f16" (no flash attention), "f16-flash" (flash, tiled at 64 tokens), "q8_0-flash"
};

KvConfig kv_config(const std::string& kv) {
  if (kv == "f16-flash") return KvConfig(KvType::kF16, KvType::kF16, FlashAttn::kOn);
  if (kv == "q8_0-flash") return KvConfig(KvType::kQ8_0, KvType::kQ8_0, FlashAttn::kOn);
  return KvConfig(KvType::kF16, KvType::kF16, FlashAttn::kOff);
}

class ScratchEstimateTest : public ::testing::TestWithParam<Case> {};

TEST_P(ScratchEstimateTest, EstimateBoundsTheRealAllocation) {
  const Case& tc = GetParam();
  ModelLoadOptions lo;
  lo.n_ctx = kCtx;
  auto model = Model::load(shared_dir() + "/models/" + tc.model + ".gguf", lo);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModelConfig& c = (*model)->config();
  const size_t row_bytes = static_cast<size_t>(c.vocab_size) * sizeof(float);
  for (const int64_t batch : {int64_t{1}, int64_t{64}}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    SessionOptions so;
    so.n_ctx = kCtx;
    so.batch = batch;
    so.n_threads = kThreads;
    so.kv_type = kv_config(tc.kv);
    auto session = Session::create(**model, so);
    ASSERT_TRUE(session.ok()) << session.error().message;
    Session& s = **session;
    // A chunk with every row's logits. The context is under the 256 cells llama.cpp pads the KV
    // length to, so every call's attention rows already span the whole context (the widest
    // attention scratch), and a chunk of 64 takes flash attention's tiled path.
    std::vector<float> rows;
    ASSERT_TRUE(s.eval(ids(batch, c.vocab_size, 9), &rows).ok());
    const size_t scratch = s.memory_bytes() - s.state().bytes() - s.checkpoint_bytes();
    const size_t real_last = scratch + row_bytes;                         // the session's own row
    const size_t real_all = real_last + rows.capacity() * sizeof(float);  // and the caller's rows
    const size_t est_last = Transformer::estimate_scratch_bytes(c, batch, kCtx, kThreads);
    const size_t est_all = Transformer::estimate_scratch_bytes(c, batch, kCtx, kThreads, 1 + batch);
    EXPECT_GE(est_last, real_last);
    EXPECT_GE(est_all, real_all);
    EXPECT_EQ(est_all - est_last, static_cast<size_t>(batch) * row_bytes);  // each caller row counts once
    // Close, not just above: the fixed terms (quantized activation buffers sized for any type)
    // keep it within a few times the real use.
    EXPECT_LE(est_last, 4 * real_last + (1u << 16));
  }
}

// The server's batched pass (engine/batch_eval.h, --batch + one row per slot): the plan counts
// its scratch on top of the slots' own (PlanRequest::batch_pass_rows), `inspect --plan --slots`
// and the budget included, and the count bounds what the pass really holds.
TEST(BatchPassEstimate, PlanCountsTheBatchedPass) {
  for (const char* name : {"stories260K", "syn-qwen3moe-Q4_K_M"}) {
    SCOPED_TRACE(name);
    constexpr int64_t kSlots = 4, kBatch = 16;
    ModelLoadOptions lo;
    lo.n_ctx = kCtx;
    lo.batch = kBatch;
    lo.n_sessions = kSlots;
    lo.batch_pass_rows = kBatch + kSlots;
    auto model = Model::load(shared_dir() + "/models/" + name + ".gguf", lo);
    ASSERT_TRUE(model.ok()) << model.error().message;
    const ModelConfig& c = (*model)->config();
    const MemoryPlan& plan = (*model)->plan();
    EXPECT_EQ(plan.batch_scratch_bytes,
              Transformer::estimate_scratch_bytes(c, kBatch + kSlots, kCtx, kThreads, kSlots));
    EXPECT_NE(plan.describe().find("batch pass scratch"), std::string::npos) << plan.describe();
    PlanRequest req;
    req.budget_bytes = UINT64_MAX / 4;
    req.n_ctx = kCtx;
    req.batch = kBatch;
    req.n_sessions = kSlots;
    auto without = make_plan((*model)->gguf(), c, req);
    req.batch_pass_rows = kBatch + kSlots;
    auto with = make_plan((*model)->gguf(), c, req);
    ASSERT_TRUE(without.ok() && with.ok());
    EXPECT_EQ(with->planned_bytes() - without->planned_bytes(), plan.batch_scratch_bytes);
    // A full pass: every slot brings rows, kBatch + kSlots in all.
    std::vector<std::unique_ptr<Session>> sessions;
    SessionOptions so;
    so.n_ctx = kCtx;
    so.batch = kBatch;
    so.n_threads = kThreads;
    for (int64_t i = 0; i < kSlots; ++i) {
      auto s = Session::create(**model, so);
      ASSERT_TRUE(s.ok()) << s.error().message;
      sessions.push_back(std::move(s).value());
    }
    auto batcher = BatchEvaluator::create(**model, kBatch + kSlots, kCtx, RoutingBias(), sessions[0]->pool());
    ASSERT_TRUE(batcher.ok()) << batcher.error().message;
    std::vector<std::vector<int32_t>> tokens;
    std::vector<BatchItem> items;
    for (int64_t i = 0; i < kSlots; ++i) {  // 16 + 1 + 2 + 1 = kBatch + kSlots rows
      tokens.push_back(ids(i == 0 ? kBatch : (i == 2 ? 2 : 1), c.vocab_size, 7 + static_cast<uint32_t>(i)));
    }
    int64_t rows = 0;
    for (int64_t i = 0; i < kSlots; ++i) {
      items.push_back({sessions[static_cast<size_t>(i)].get(), tokens[static_cast<size_t>(i)]});
      rows += static_cast<int64_t>(tokens[static_cast<size_t>(i)].size());
    }
    ASSERT_LE(rows, kBatch + kSlots);
    ASSERT_TRUE((*batcher)->eval(items).ok());
    EXPECT_GE(plan.batch_scratch_bytes, (*batcher)->scratch_bytes());
  }
}

// With speculative slots verifying in the pass, it is sized for their drafts (pass_rows) and
// keeps the logits of every verification row: the plan (n_logit_rows = draft_max + 2) bounds it
// when every slot verifies a full draft at once.
TEST(BatchPassEstimate, PlanCountsVerificationRows) {
  for (const char* name : {"stories260K", "syn-qwen3moe-Q4_K_M"}) {
    SCOPED_TRACE(name);
    constexpr int64_t kSlots = 4, kBatch = 16, kDraft = 8;
    ModelLoadOptions lo;
    lo.n_ctx = kCtx;
    lo.batch = kBatch;
    lo.n_sessions = kSlots;
    lo.n_logit_rows = kDraft + 2;
    lo.batch_pass_rows = pass_rows(kBatch, kSlots, 1 + kDraft);
    auto model = Model::load(shared_dir() + "/models/" + name + ".gguf", lo);
    ASSERT_TRUE(model.ok()) << model.error().message;
    const ModelConfig& c = (*model)->config();
    std::vector<std::unique_ptr<Session>> sessions;
    SessionOptions so;
    so.n_ctx = kCtx;
    so.batch = kBatch;
    so.n_threads = kThreads;
    for (int64_t i = 0; i < kSlots; ++i) {
      auto s = Session::create(**model, so);
      ASSERT_TRUE(s.ok()) << s.error().message;
      sessions.push_back(std::move(s).value());
    }
    auto batcher = BatchEvaluator::create(**model, lo.batch_pass_rows, kCtx, RoutingBias(), sessions[0]->pool());
    ASSERT_TRUE(batcher.ok()) << batcher.error().message;
    std::vector<std::vector<int32_t>> tokens;
    std::vector<BatchItem> items;
    for (int64_t i = 0; i < kSlots; ++i) tokens.push_back(ids(1 + kDraft, c.vocab_size, 11 + static_cast<uint32_t>(i)));
    for (int64_t i = 0; i < kSlots; ++i)
      items.push_back({sessions[static_cast<size_t>(i)].get(), tokens[static_cast<size_t>(i)], true});
    ASSERT_TRUE((*batcher)->eval(items).ok());
    EXPECT_EQ((*batcher)->logits(kSlots - 1).size(), static_cast<size_t>((1 + kDraft) * c.vocab_size));
    EXPECT_GE((*model)->plan().batch_scratch_bytes, (*batcher)->scratch_bytes());
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ScratchEstimateTest,
                         ::testing::Values(Case{"stories260K", "f16"}, Case{"stories260K", "f16-flash"},
                                           Case{"syn-qwen3moe-Q4_K_M", "q8_0-flash"}, Case{"syn-qwen35-Q4_K_M", "f16"},
                                           Case{"syn-qwen35moe-small", "f16-flash"}, Case{"syn-gemma4e-small", "f16"},
                                           Case{"syn-gemma4moe-small", "f16-flash"}),
                         [](const auto& info) {
                           std::string n = info.param.model;
                           for (char& ch : n) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           std::string kv = info.param.kv;
                           for (char& ch : kv) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n + "_" + kv;
                         });

}  // namespace
}  // namespace sniper
