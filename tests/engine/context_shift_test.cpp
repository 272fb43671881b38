// SPDX-License-Identifier: MIT
// Context shift (Session::shift_context, generate() with GenerateOptions::context_shift):
// after a shift the session's logits stay close to a fresh evaluation of the kept tokens at
// their new positions (the shifted keys are rotated, not recomputed, so not bit-equal), for f16
// and quantized, Hadamard-rotated K; generation goes on past the context with the first n_keep
// tokens intact and without growing memory; off, a full context ends generation; models whose
// state cannot shift (delta-net, sliding windows) and bad arguments are clear errors.
#include "engine/session.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/process_stats.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "golden/shared_dir.h"

namespace sniper {
namespace {

std::unique_ptr<Model> load(const std::string& name) {
  auto m = Model::load(shared_dir() + "/models/" + name, {});
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? std::move(m).value() : nullptr;
}

std::unique_ptr<Session> session(Model& model, int64_t n_ctx, KvConfig kv = KvConfig()) {
  SessionOptions so;
  so.n_ctx = n_ctx;
  so.batch = 16;
  so.n_threads = 2;
  so.kv_type = kv;
  auto s = Session::create(model, so);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? std::move(s).value() : nullptr;
}

std::vector<int32_t> tokens(int64_t n, int64_t vocab) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>(1 + (i * 37 + 11) % (vocab - 1)));
  return ids;
}

double nse(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return num / den;
}

struct ShiftCase {
  const char* model;
  KvConfig kv;
  double bound;
};

// Shift 40 tokens (keep 4, drop 16), then evaluate 3 more: the logits of each are close to a
// fresh session's for the same 24 + 3 tokens; and far from those of a session that dropped the
// tokens without rotating the keys (what the test would see if the shift did not rope).
TEST(ContextShift, ShiftedSessionIsCloseToAFreshEvaluation) {
  for (const ShiftCase& c : {ShiftCase{"syn-llama.gguf", KvConfig(), 1e-4}, ShiftCase{"syn-qwen3.gguf", KvConfig(), 1e-4},
                             ShiftCase{"syn-qwen3.gguf", KvConfig(KvType::kQ4_0, KvType::kQ4_0, FlashAttn::kOn), 1e-2}}) {
    SCOPED_TRACE(std::string(c.model) + " " + kv_config_name(c.kv));
    auto model = load(c.model);
    ASSERT_NE(model, nullptr);
    const std::vector<int32_t> ids = tokens(43, model->config().vocab_size);
    auto a = session(*model, 64, c.kv);
    ASSERT_NE(a, nullptr);
    ASSERT_TRUE(a->eval(std::span<const int32_t>(ids.data(), 40)).ok());
    ASSERT_TRUE(a->shift_context(4, 16).ok());
    ASSERT_EQ(a->n_past(), 24);
    std::vector<int32_t> kept(ids.begin(), ids.begin() + 4);
    kept.insert(kept.end(), ids.begin() + 20, ids.begin() + 40);
    EXPECT_EQ(a->history(), kept);
    auto fresh = session(*model, 64, c.kv);
    ASSERT_TRUE(fresh->eval(kept).ok());
    for (int i = 40; i < 43; ++i) {
      const int32_t one[1] = {ids[static_cast<size_t>(i)]};
      ASSERT_TRUE(a->eval(one).ok());
      ASSERT_TRUE(fresh->eval(one).ok());
      EXPECT_LT(nse(a->last_logits(), fresh->last_logits()), c.bound) << "token " << i;
    }
  }
}

TEST(ContextShift, GenerationGoesPastTheContextWithThePrefixKeptAndFlatMemory) {
  auto model = load("syn-qwen3.gguf");
  ASSERT_NE(model, nullptr);
  auto tok = model->tokenizer();
  ASSERT_TRUE(tok.ok());
  const std::vector<int32_t> prompt = tokens(10, model->config().vocab_size);
  auto s = session(*model, 32);
  ASSERT_NE(s, nullptr);
  GenerateOptions go;
  go.n_predict = 40;
  go.stop_at_eog = false;
  go.context_shift = true;
  go.n_keep = resolve_n_keep(3, prompt, -1);
  ASSERT_EQ(go.n_keep, 3);
  auto warm = generate(*s, **tok, prompt, go, nullptr);  // first shifts: any lazy allocation happens here
  ASSERT_TRUE(warm.ok()) << warm.error().message;
  EXPECT_EQ(warm->n_gen, 40);
  EXPECT_GE(warm->n_shifts, 1);
  const uint64_t rss = current_rss_bytes();
  const size_t bytes = s->memory_bytes();
  go.n_predict = 300;
  auto stats = generate(*s, **tok, {}, go, nullptr);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->n_gen, 300);
  EXPECT_EQ(stats->finish_reason, "length");
  EXPECT_GE(stats->n_shifts, 300 / 16);  // each shift frees (31 - 3) / 2 = 14 positions
  EXPECT_LT(s->n_past(), 32);
  EXPECT_EQ(std::vector<int32_t>(s->history().begin(), s->history().begin() + 3),
            std::vector<int32_t>(prompt.begin(), prompt.begin() + 3));
  EXPECT_EQ(s->memory_bytes(), bytes);
  EXPECT_LT(current_rss_bytes(), rss + (4u << 20));  // 300 tokens and ~20 shifts later, no growth

  // Off: the full context ends generation, as before.
  auto off = session(*model, 32);
  go.context_shift = false;
  auto ended = generate(*off, **tok, prompt, go, nullptr);
  ASSERT_TRUE(ended.ok());
  EXPECT_EQ(ended->finish_reason, "context");
  EXPECT_EQ(off->n_past(), 32);
}

TEST(ContextShift, KeepFollowsLlamaCpp) {
  const std::vector<int32_t> prompt = {1, 7, 8, 9};
  EXPECT_EQ(resolve_n_keep(0, prompt, 1), 1);   // BOS is always kept
  EXPECT_EQ(resolve_n_keep(2, prompt, 1), 3);
  EXPECT_EQ(resolve_n_keep(2, prompt, -1), 2);  // no BOS in this vocabulary
  EXPECT_EQ(resolve_n_keep(-1, prompt, 1), 4);  // the whole prompt
  EXPECT_EQ(resolve_n_keep(9, prompt, 1), 4);
}

TEST(ContextShift, UnshiftableModelsAndBadArgumentsAreErrors) {
  for (const auto& [name, why] : std::vector<std::pair<const char*, const char*>>{
           {"syn-qwen35-small.gguf", "recurrent state"}, {"syn-gemma4e-small.gguf", "sliding window"}}) {
    SCOPED_TRACE(name);
    auto model = load(name);
    ASSERT_NE(model, nullptr);
    auto s = session(*model, 64);
    const std::vector<int32_t> ids = tokens(20, model->config().vocab_size);
    ASSERT_TRUE(s->eval(ids).ok());
    Status st = s->shift_context(2, 8);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find(why), std::string::npos) << st.error().message;
    EXPECT_EQ(s->n_past(), 20);  // nothing changed
    auto tok = model->tokenizer();
    ASSERT_TRUE(tok.ok());
    GenerateOptions go;
    go.context_shift = true;
    auto gen = generate(*s, **tok, ids, go, nullptr);
    ASSERT_FALSE(gen.ok());
    EXPECT_NE(gen.error().message.find("--context-shift"), std::string::npos) << gen.error().message;
  }
  auto model = load("syn-llama.gguf");
  ASSERT_NE(model, nullptr);
  auto s = session(*model, 64);
  ASSERT_TRUE(s->eval(tokens(20, model->config().vocab_size)).ok());
  EXPECT_FALSE(s->shift_context(-1, 4).ok());
  EXPECT_FALSE(s->shift_context(4, 0).ok());
  Status past = s->shift_context(10, 11);
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.error().message.find("20"), std::string::npos) << past.error().message;
  EXPECT_EQ(s->n_past(), 20);
  // --keep covering the whole context leaves nothing to discard.
  Status full = shift_full_context(*s, 20);
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.error().message.find("nothing left to discard"), std::string::npos) << full.error().message;
}

}  // namespace
}  // namespace sniper
