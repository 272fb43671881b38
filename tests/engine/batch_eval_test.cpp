// SPDX-License-Identifier: MIT
// BatchEvaluator (engine/batch_eval.h): several sessions of different prompt lengths evaluated
// together, pass after pass (prompt chunks of several sizes beside single decode tokens, a
// session joining late, one resting), end with the history and last logits each session's own
// eval() of the same chunks gives: bit for bit on quantized fixtures (dense, routed experts
// resident and streamed through the smallest expert cache, a delta-net hybrid), and greedy
// decoding driven by each session's logits yields the same tokens. Errors name the item; a pass
// whose streamed read fails rolls every session back as its own failed eval() would.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "engine/batch_eval.h"
#include "engine/plan.h"
#include "golden/shared_dir.h"

namespace sniper {
namespace {

constexpr int64_t kCtx = 64;
constexpr int64_t kBatch = 16;

std::string model_path(const std::string& name) { return shared_dir() + "/models/" + name + ".gguf"; }

std::vector<int32_t> prompt_of(int seq, int64_t n, int32_t vocab) {
  std::vector<int32_t> t;
  for (int64_t i = 0; i < n; ++i)
    t.push_back(static_cast<int32_t>((3 + 41 * i + 97 * seq + i * i * (seq + 2)) % vocab));
  return t;
}

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// Each pass: per session, how many prompt tokens it brings (0: none this pass; a session whose
// prompt is done decodes one greedy token instead, when `decode` is set).
struct Pass {
  std::vector<int64_t> prompt;  // per session
  std::vector<bool> decode;     // per session
};

const int kSeqs = 3;
const int64_t kPromptLen[kSeqs] = {11, 23, 5};
const std::vector<Pass> kPasses = {
    {{7, 9, 0}, {false, false, false}},   // A and B start; C waits
    {{4, 14, 5}, {false, false, false}},  // A done, B's last chunk of 14, C whole
    {{0, 0, 0}, {true, true, true}},      // all decode
    {{0, 0, 0}, {true, false, true}},     // B rests
    {{0, 0, 0}, {true, true, true}},     {{0, 0, 0}, {true, true, false}},
};

struct Trace {
  std::vector<std::vector<int32_t>> history;
  std::vector<std::vector<float>> last_logits;
};

std::unique_ptr<Session> make_session(Model& model) {
  SessionOptions so;
  so.n_ctx = kCtx;
  so.batch = kBatch;
  so.n_threads = 2;
  auto s = Session::create(model, so);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return std::move(s).value();
}

// The schedule, with every session's work of a pass either in one BatchEvaluator pass
// (batched) or as its own eval() calls.
Trace run(Model& model, bool batched) {
  const int32_t vocab = static_cast<int32_t>(model.config().vocab_size);
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int64_t> fed(kSeqs, 0);
  for (int s = 0; s < kSeqs; ++s) {
    sessions.push_back(make_session(model));
    prompts.push_back(prompt_of(s, kPromptLen[s], vocab));
  }
  ThreadPool pool(2);
  auto ev = BatchEvaluator::create(model, 2 * kBatch, kCtx, RoutingBias(), pool);
  EXPECT_TRUE(ev.ok()) << ev.error().message;
  for (const Pass& p : kPasses) {
    std::vector<std::vector<int32_t>> work(kSeqs);
    for (int s = 0; s < kSeqs; ++s) {
      if (p.prompt[s] > 0) {
        work[s].assign(prompts[s].begin() + fed[s], prompts[s].begin() + fed[s] + p.prompt[s]);
        fed[s] += p.prompt[s];
      } else if (p.decode[s]) {
        work[s] = {argmax(sessions[s]->last_logits())};
      }
    }
    if (batched) {
      std::vector<BatchItem> items;
      for (int s = 0; s < kSeqs; ++s) {
        if (!work[s].empty()) items.push_back({sessions[s].get(), work[s]});
      }
      Status st = (*ev)->eval(items);
      EXPECT_TRUE(st.ok()) << st.error().message;
    } else {
      for (int s = 0; s < kSeqs; ++s) {
        if (work[s].empty()) continue;
        Status st = sessions[s]->eval(work[s]);
        EXPECT_TRUE(st.ok()) << st.error().message;
      }
    }
  }
  Trace t;
  for (auto& s : sessions) {
    t.history.push_back(s->history());
    t.last_logits.push_back(s->last_logits());
  }
  return t;
}

void expect_batched_equals_alone(const std::string& name, const ModelLoadOptions& lo) {
  SCOPED_TRACE(name);
  auto model = Model::load(model_path(name), lo);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const Trace alone = run(**model, false);
  const Trace batched = run(**model, true);
  for (int s = 0; s < kSeqs; ++s) {
    EXPECT_EQ(alone.history[s], batched.history[s]) << "session " << s << ": the greedy tokens differ";
    ASSERT_EQ(alone.last_logits[s].size(), batched.last_logits[s].size());
    EXPECT_EQ(std::memcmp(alone.last_logits[s].data(), batched.last_logits[s].data(),
                          alone.last_logits[s].size() * sizeof(float)),
              0)
        << "session " << s << ": the last logits differ from its run alone";
  }
}

ModelLoadOptions resident() {
  ModelLoadOptions lo;
  lo.n_ctx = kCtx;
  lo.batch = kBatch;
  return lo;
}

ModelLoadOptions streamed_at_min_budget(const std::string& name) {
  ModelLoadOptions lo = resident();
  lo.residency = ResidencyMode::kStream;
  lo.mem_bytes = 1ull << 30;
  auto probe = Model::load(model_path(name), lo);
  EXPECT_TRUE(probe.ok()) << probe.error().message;
  lo.mem_bytes = (*probe)->plan().min_budget_bytes;  // the fewest expert slots: reads every pass
  return lo;
}

TEST(BatchEval, Dense) { expect_batched_equals_alone("syn-qwen3-Q4_K_M", resident()); }

TEST(BatchEval, ExpertsResident) { expect_batched_equals_alone("syn-qwen3moe-Q4_K_M", resident()); }

TEST(BatchEval, ExpertsStreamedAtTheSmallestBudget) {
  expect_batched_equals_alone("syn-qwen3moe-Q4_K_M", streamed_at_min_budget("syn-qwen3moe-Q4_K_M"));
}

TEST(BatchEval, DeltaNetHybrid) { expect_batched_equals_alone("syn-qwen35-Q4_K_M", resident()); }

// An item that keeps every row's logits (a speculative verification) gets its own eval()'s
// [rows, vocab] logits; the items around it get their last rows.
TEST(BatchEval, AllLogitsItemGetsEveryRow) {
  auto model = Model::load(model_path("syn-qwen3-Q4_K_M"), resident());
  ASSERT_TRUE(model.ok()) << model.error().message;
  const int32_t vocab = static_cast<int32_t>((*model)->config().vocab_size);
  ThreadPool pool(2);
  auto ev = BatchEvaluator::create(**model, 2 * kBatch, kCtx, RoutingBias(), pool);
  ASSERT_TRUE(ev.ok());
  auto a = make_session(**model), b = make_session(**model), solo = make_session(**model);
  const std::vector<int32_t> pa = prompt_of(0, 9, vocab), pb = prompt_of(1, 6, vocab);
  const std::vector<int32_t> more = prompt_of(2, 5, vocab);
  ASSERT_TRUE((*ev)->eval(std::vector<BatchItem>{{a.get(), pa}, {b.get(), pb}}).ok());
  ASSERT_TRUE(solo->eval(pa).ok());
  const int32_t next[1] = {argmax(b->last_logits())};
  ASSERT_TRUE((*ev)->eval(std::vector<BatchItem>{{b.get(), next}, {a.get(), more, true}}).ok());
  std::vector<float> rows;
  ASSERT_TRUE(solo->eval(more, &rows).ok());
  const std::span<const float> got = (*ev)->logits(1);
  ASSERT_EQ(got.size(), rows.size());
  EXPECT_EQ(std::memcmp(got.data(), rows.data(), rows.size() * sizeof(float)), 0);
  EXPECT_EQ(a->last_logits(), solo->last_logits());
  ASSERT_EQ((*ev)->logits(0).size(), static_cast<size_t>(vocab));
  EXPECT_EQ(std::memcmp((*ev)->logits(0).data(), b->last_logits().data(), b->last_logits().size() * sizeof(float)), 0);
}

TEST(BatchEval, ErrorsNameTheItemAndChangeNothing) {
  auto model = Model::load(model_path("syn-qwen3-Q4_K_M"), resident());
  ASSERT_TRUE(model.ok()) << model.error().message;
  ThreadPool pool(2);
  EXPECT_FALSE(BatchEvaluator::create(**model, 0, kCtx, RoutingBias(), pool).ok());
  auto ev = BatchEvaluator::create(**model, 8, kCtx, RoutingBias(), pool);
  ASSERT_TRUE(ev.ok());
  auto a = make_session(**model);
  auto b = make_session(**model);
  const std::vector<int32_t> good = {1, 2, 3};
  const std::vector<int32_t> bad = {1, static_cast<int32_t>((*model)->config().vocab_size)};
  const std::vector<int32_t> nine(9, 1);
  Status st = (*ev)->eval(std::vector<BatchItem>{{a.get(), good}, {b.get(), bad}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("batch item 1"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("outside the vocabulary"), std::string::npos) << st.error().message;
  st = (*ev)->eval(std::vector<BatchItem>{{a.get(), good}, {b.get(), std::vector<int32_t>(6, 1)}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("budget of 8"), std::string::npos) << st.error().message;
  st = (*ev)->eval(std::vector<BatchItem>{{a.get(), nine}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(a->n_past(), 0);
  EXPECT_EQ(b->n_past(), 0);
  EXPECT_FALSE((*ev)->eval({}).ok());
}

// A failed streamed read in a batched pass: each hybrid session goes back as its own failed
// eval() does (no checkpoints: to the start), and continues from there as fresh sessions do.
TEST(BatchEval, FailedPassRollsEverySessionBack) {
  const std::string name = "syn-qwen35moe-small";
  ModelLoadOptions lo = streamed_at_min_budget(name);
  std::atomic<bool> failing{false};
  lo.io_fault_injector = [&failing](uint64_t, uint64_t) {
    FaultAction f;
    if (failing) f.error = EIO;
    return f;
  };
  auto model = Model::load(model_path(name), lo);
  ASSERT_TRUE(model.ok()) << model.error().message;
  ASSERT_TRUE((*model)->streams());
  ThreadPool pool(2);
  auto ev = BatchEvaluator::create(**model, 2 * kBatch, kCtx, RoutingBias(), pool);
  ASSERT_TRUE(ev.ok());
  auto a = make_session(**model);
  auto b = make_session(**model);
  const int32_t vocab = static_cast<int32_t>((*model)->config().vocab_size);
  const std::vector<int32_t> pa = prompt_of(0, 12, vocab), pb = prompt_of(1, 9, vocab);
  ASSERT_TRUE((*ev)
                  ->eval(std::vector<BatchItem>{{a.get(), std::span<const int32_t>(pa).first(6)},
                                                {b.get(), std::span<const int32_t>(pb).first(4)}})
                  .ok());
  failing = true;
  EXPECT_FALSE((*ev)
                   ->eval(std::vector<BatchItem>{{a.get(), std::span<const int32_t>(pa).subspan(6)},
                                                 {b.get(), std::span<const int32_t>(pb).subspan(4)}})
                   .ok());
  failing = false;
  EXPECT_EQ(a->n_past(), 0);
  EXPECT_EQ(b->n_past(), 0);
  ASSERT_TRUE((*ev)->eval(std::vector<BatchItem>{{a.get(), pa}, {b.get(), pb}}).ok());
  // The same pass over fresh sessions (an F32 fixture: the same shapes, for the same bits).
  auto fa = make_session(**model);
  auto fb = make_session(**model);
  ASSERT_TRUE((*ev)->eval(std::vector<BatchItem>{{fa.get(), pa}, {fb.get(), pb}}).ok());
  EXPECT_EQ(fa->last_logits(), a->last_logits());
  EXPECT_EQ(fb->last_logits(), b->last_logits());
  EXPECT_EQ(fa->history(), a->history());
}

}  // namespace
}  // namespace sniper
