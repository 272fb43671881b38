// SPDX-License-Identifier: MIT
// Session behaviour: chunked prefill equals one-token-at-a-time decode; thread counts and
// chunk sizes do not change logits; the context limit and bad token ids are clear errors;
// q8_0 KV cache stays close to f16 (gemma4's sliding rings and qwen35's hybrid layers included).
#include "engine/session.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/generate.h"
#include "engine/model.h"
#include "golden/shared_dir.h"
#include "kernels/kernels.h"

namespace sniper {
namespace {

std::unique_ptr<Model> load(const std::string& name) {
  auto m = Model::load(shared_dir() + "/models/" + name, {});
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? std::move(m).value() : nullptr;
}

std::vector<float> run(Model& model, const std::vector<int32_t>& ids, int64_t batch, int threads,
                       KvType kv = KvType::kF16, bool token_by_token = false) {
  SessionOptions so;
  so.n_ctx = 256;
  so.batch = batch;
  so.n_threads = threads;
  so.kv_type = kv;
  auto s = Session::create(model, so);
  EXPECT_TRUE(s.ok()) << s.error().message;
  std::vector<float> all;
  if (token_by_token) {
    for (int32_t id : ids) {
      const int32_t one[1] = {id};
      EXPECT_TRUE((*s)->eval(one).ok());
      all.insert(all.end(), (*s)->last_logits().begin(), (*s)->last_logits().end());
    }
  } else {
    EXPECT_TRUE((*s)->eval(ids, &all).ok());
  }
  return all;
}

const std::vector<int32_t> kIds = {1, 501, 500, 505, 196, 90, 472, 56, 136, 73, 165, 275, 63, 408, 126, 403, 165};

double nse(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return num / den;
}

// eval_with_progress (the prompt progress lines of run and chat) evaluates the chunks eval() would,
// so the logits are bit for bit one eval()'s; a false return stops it with the chunks so far kept.
TEST(Session, EvalWithProgressEqualsOneEvalAndStops) {
  auto model = load("stories260K.gguf");
  ASSERT_NE(model, nullptr);
  SessionOptions so;
  so.n_ctx = 256;
  so.batch = 5;
  so.n_threads = 2;
  auto whole = Session::create(*model, so);
  ASSERT_TRUE(whole.ok());
  ASSERT_TRUE((*whole)->eval(kIds).ok());
  auto stepped = Session::create(*model, so);
  ASSERT_TRUE(stepped.ok());
  std::vector<std::pair<int64_t, int64_t>> calls;
  auto complete = eval_with_progress(**stepped, kIds, [&](int64_t done, int64_t total) {
    calls.emplace_back(done, total);
    return true;
  });
  ASSERT_TRUE(complete.ok());
  EXPECT_TRUE(*complete);
  const std::vector<std::pair<int64_t, int64_t>> want = {{5, 17}, {10, 17}, {15, 17}, {17, 17}};
  EXPECT_EQ(calls, want);
  EXPECT_EQ((*stepped)->last_logits(), (*whole)->last_logits());
  EXPECT_EQ((*stepped)->history(), (*whole)->history());

  auto stopped = Session::create(*model, so);
  ASSERT_TRUE(stopped.ok());
  auto partial = eval_with_progress(**stopped, kIds, [](int64_t done, int64_t) { return done < 10; });
  ASSERT_TRUE(partial.ok());
  EXPECT_FALSE(*partial);
  EXPECT_EQ((*stopped)->n_past(), 10);
}

TEST(Session, ThreadsGiveIdenticalAndChunkingCloseLogits) {
  // Q4_K batches of at least rows_min_tokens take the row-lane gemm where the tier has one (in
  // vec_dot's order, like every quantized kernel).
  const KernelTable& q4_k = get_kernels(GgmlType::kQ4_K);
  const bool q4_k_rows = q4_k.gemm_rows != nullptr;
  for (const char* name : {"syn-qwen3moe-Q4_K_M.gguf", "syn-llama-Q4_0.gguf", "stories260K.gguf"}) {
    SCOPED_TRACE(name);
    auto model = load(name);
    ASSERT_NE(model, nullptr);
    const std::vector<float> base = run(*model, kIds, 64, 1);
    EXPECT_EQ(run(*model, kIds, 64, 2), base);  // thread count never changes a result
    // Chunk sizes and one-token decode may take other kernels (as in the reference engine, whose
    // batched and single-token matmuls also differ in summation order): close, not bitwise.
    // Only float rounding differs (the F32 weights' tinyBLAS order, attention's batch kernels):
    // 1e-10. A quantized kernel of another order would show here: a rounding difference can move
    // an activation across a q8 rounding step, and the next layers carry that step (Q4_K's
    // row-lane gemm in its former single-accumulator order: 4e-5).
    EXPECT_LT(nse(run(*model, kIds, 5, 2), base), 1e-10);
    // One-token decode takes vec_dot order where batches take tinyBLAS order (F32 weights of
    // stories260K: measured 1.1e-10, the same split the reference engine has).
    EXPECT_LT(nse(run(*model, kIds, 1, 2, KvType::kF16, true), base), 1e-9);
  }
  // Chunks that all take the row-lane gemm (17 tokens as 9 + 8) give the one-chunk logits up to
  // the attention's float order, as above.
  if (q4_k_rows && q4_k.rows_min_tokens <= 8) {
    auto model = load("syn-qwen3-Q4_K_M.gguf");
    ASSERT_NE(model, nullptr);
    EXPECT_LT(nse(run(*model, kIds, 9, 2), run(*model, kIds, 64, 2)), 1e-10);
  }
}

TEST(Session, Q8KvCacheIsClose) {
  auto model = load("syn-qwen3moe-Q8_0.gguf");
  ASSERT_NE(model, nullptr);
  const std::vector<float> f16 = run(*model, kIds, 64, 2);
  const std::vector<float> q8 = run(*model, kIds, 64, 2, KvType::kQ8_0);
  double num = 0, den = 0;
  for (size_t i = 0; i < f16.size(); ++i) {
    num += (q8[i] - f16[i]) * (q8[i] - f16[i]);
    den += f16[i] * f16[i];
  }
  EXPECT_LT(num / den, 1e-3);
  EXPECT_GT(num, 0.0);  // the option really changes the cache type
}

TEST(Session, ContextLimitAndBadTokensAreErrors) {
  auto model = load("stories260K.gguf");
  ASSERT_NE(model, nullptr);
  SessionOptions so;
  so.n_ctx = 8;
  auto s = Session::create(*model, so);
  ASSERT_TRUE(s.ok());
  std::vector<int32_t> ids(9, 5);
  Status st = (*s)->eval(ids);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("context"), std::string::npos) << st.error().message;
  EXPECT_EQ((*s)->n_past(), 0);
  const int32_t bad[2] = {5, 512};
  st = (*s)->eval(bad);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("512"), std::string::npos) << st.error().message;
  EXPECT_FALSE((*s)->eval(std::span<const int32_t>()).ok());
  so.n_ctx = 1 << 20;
  EXPECT_FALSE(Session::create(*model, so).ok());
  so.n_ctx = 64;
  so.kv_type = KvType::kQ8_0;  // stories260K has head_dim 8
  auto q8 = Session::create(*model, so);
  ASSERT_FALSE(q8.ok());
  EXPECT_NE(q8.error().message.find("head_dim"), std::string::npos);
}

TEST(Session, MmapResidencyMatchesResident) {
  auto resident = load("syn-mixtral-Q4_K_M.gguf");
  ModelLoadOptions lo;
  lo.residency = ResidencyMode::kMmap;
  auto mm = Model::load(shared_dir() + "/models/syn-mixtral-Q4_K_M.gguf", lo);
  ASSERT_TRUE(mm.ok());
  EXPECT_EQ(run(*resident, kIds, 64, 2), run(**mm, kIds, 64, 2));
}

TEST(Session, KvStateRewindsToAnyPrefix) {
  auto model = load("syn-qwen3.gguf");
  ASSERT_NE(model, nullptr);
  SessionOptions so;
  so.n_ctx = 64;
  so.n_threads = 2;
  auto s = Session::create(*model, so);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->eval(kIds).ok());
  EXPECT_EQ((*s)->truncate(100), static_cast<int64_t>(kIds.size()));  // keeping everything
  EXPECT_EQ((*s)->truncate(5), 5);
  EXPECT_EQ((*s)->n_past(), 5);
}

// A hybrid model's delta-net state folds every past token in: it cannot be cut back to a prefix,
// so truncate() starts over (0 kept) and re-evaluating the prefix gives the fresh logits again;
// chunked and token-by-token evaluation carry the state across calls.
TEST(Session, RecurrentStateStartsOverInsteadOfRewinding) {
  for (const char* name : {"syn-qwen35moe-small.gguf", "syn-qwen3next-small.gguf", "syn-qwen35-small.gguf"}) {
    SCOPED_TRACE(name);
    auto model = load(name);
    ASSERT_NE(model, nullptr);
    const std::vector<float> fresh = run(*model, kIds, 64, 2);
    // Other chunkings: rounding only (batched products sum in another order; llama.cpp itself
    // differs by ~1e-9 between one batch and single steps on these files), the state carried.
    EXPECT_LT(nse(run(*model, kIds, 5, 2), fresh), 1e-8);
    EXPECT_LT(nse(run(*model, kIds, 64, 1, KvType::kF16, /*token_by_token=*/true), fresh), 1e-8);
    EXPECT_EQ(run(*model, kIds, 64, 1), fresh);  // threads do not change a bit
    SessionOptions so;
    so.n_ctx = 64;
    so.n_threads = 2;
    auto s = Session::create(*model, so);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->eval(kIds).ok());
    EXPECT_EQ((*s)->truncate(static_cast<int64_t>(kIds.size())), static_cast<int64_t>(kIds.size()));
    EXPECT_EQ((*s)->truncate(6), 0);
    EXPECT_EQ((*s)->n_past(), 0);
    std::vector<float> again;
    ASSERT_TRUE((*s)->eval(kIds, &again).ok());
    EXPECT_EQ(again, fresh);
    // q8_0 KV for the attention layers works too (head_dim 64).
    const std::vector<float> q8 = run(*model, kIds, 64, 2, KvType::kQ8_0);
    EXPECT_LT(nse(q8, fresh), 1e-3);
  }
}

// gemma4's sliding rings and full layers in q8_0: close to f16 past the 16-token window (48
// tokens), on both gemma4 fixtures and the dense qwen35 one (measured
// NMSE: gemma4e 5.5e-4, qwen35 4e-6). The gemma4 MoE fixture's router sends a few tokens to
// another expert once q8's rounding moves a score across the top-k boundary (rows 6, 13, 34:
// row NMSE 0.1-0.44, the rows after them carry the change through attention): measured 0.046
// over all rows, so its bound is 0.1.
TEST(Session, Q8KvCacheIsCloseOnGemma4AndQwen35) {
  std::vector<int32_t> ids;
  for (int i = 0; i < 48; ++i) ids.push_back(1 + (i * 37 + 11) % 480);
  for (const auto& [name, bound] : std::vector<std::pair<const char*, double>>{
           {"syn-gemma4e-small.gguf", 1e-3}, {"syn-gemma4moe-small.gguf", 0.1}, {"syn-qwen35-small.gguf", 1e-3}}) {
    SCOPED_TRACE(name);
    auto model = load(name);
    ASSERT_NE(model, nullptr);
    const std::vector<float> f16 = run(*model, ids, 16, 2);
    const std::vector<float> q8 = run(*model, ids, 16, 2, KvType::kQ8_0);
    EXPECT_LT(nse(q8, f16), bound);
    EXPECT_GT(nse(q8, f16), 0.0);  // the option really changes the cache type
  }
}

}  // namespace
}  // namespace sniper
