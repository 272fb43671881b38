// SPDX-License-Identifier: MIT
// State checkpoints (kv/state_checkpoints.h) and the prefix reuse they give hybrid models:
// the unit keeps at most max_count in increasing position, drops the oldest, reuses buffers
// and restores exactly what it saved (recurrent states and ring rows); a Session of every
// hybrid fixture (delta-net layers) truncated to a
// shared prefix that falls on, before or after a checkpoint comes back to the latest checkpoint
// at or before it, and evaluating the rest gives the same logits, bit for bit, as a fresh
// session evaluating the same tokens in the same chunks.
#include "kv/state_checkpoints.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "engine/model.h"
#include "engine/plan.h"
#include "engine/session.h"
#include "golden/shared_dir.h"
#include "model/config.h"

namespace sniper {
namespace {

// A recurrent layer, a full KV layer and a sliding layer with a ring of 4 slots.
std::vector<LayerStateSpec> mixed_specs() {
  LayerStateSpec rec;
  rec.kind = LayerStateKind::kRecurrent;
  rec.conv_floats = 6;
  rec.recurrent_floats = 10;
  LayerStateSpec full;
  full.n_kv_heads = 2;
  full.head_dim = 32;
  LayerStateSpec ring = full;
  ring.window = 4;
  return {rec, full, ring};
}

// Writes position-and-seed dependent rows and states into every layer for positions [0, n).
void fill(SequenceState& st, int64_t n, float seed) {
  std::vector<float> k(64), v(64);
  for (int64_t pos = 0; pos < n; ++pos) {
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = seed + 0.01f * static_cast<float>(pos) + 0.001f * static_cast<float>(i);
      v[i] = -k[i];
    }
    for (int64_t l = 1; l < 3; ++l) {
      const KvSlot slot = st.kv_slot(l);
      slot.cache->store(slot.index, pos, k.data(), v.data());
    }
  }
  for (int i = 0; i < 16; ++i) st.conv_state(0)[i] = seed + static_cast<float>(n) + static_cast<float>(i);
}

std::vector<uint8_t> snapshot(const SequenceState& st, int64_t n) {
  std::vector<uint8_t> out(st.checkpoint_bytes(n));
  st.save_checkpoint(n, out.data());
  return out;
}

TEST(StateCheckpoints, KeepsTheLatestAndRestoresExactly) {
  const std::vector<LayerStateSpec> specs = mixed_specs();
  auto st = SequenceState::create(specs, 32, KvType::kF16);
  ASSERT_TRUE(st.ok()) << st.error().message;
  SequenceState& s = **st;
  EXPECT_TRUE(s.needs_checkpoints());
  // Recurrent floats, then the ring's min(n, 4) rows of K and V (2 heads x 32 f16).
  EXPECT_EQ(s.checkpoint_bytes(2), 16 * 4 + 2 * 2 * 128u);
  EXPECT_EQ(s.checkpoint_bytes(30), 16 * 4 + 2 * 4 * 128u);
  EXPECT_LE(s.checkpoint_bytes(32), SequenceState::checkpoint_bytes_for(specs, 32, KvType::kF16));

  StateCheckpoints cps(3, s.checkpoint_bytes(32));
  std::vector<std::vector<uint8_t>> saved(33);
  for (int64_t n : {3, 7, 11, 15}) {
    fill(s, n, static_cast<float>(n));
    saved[static_cast<size_t>(n)] = snapshot(s, n);
    cps.save(s, n);
  }
  EXPECT_EQ(cps.count(), 3);  // 3 dropped as the oldest
  EXPECT_EQ(cps.bytes(), cps.max_bytes());
  EXPECT_EQ(cps.latest_at_or_before(6), 0);
  EXPECT_EQ(cps.latest_at_or_before(10), 7);
  EXPECT_EQ(cps.latest_at_or_before(11), 11);
  EXPECT_EQ(cps.latest_at_or_before(100), 15);
  fill(s, 20, 99.0f);  // the state moves on
  EXPECT_EQ(cps.restore(s, 13), 11);
  EXPECT_EQ(snapshot(s, 11), saved[11]);
  EXPECT_EQ(cps.count(), 2);  // 15 is past the restored prefix
  EXPECT_EQ(cps.latest(), 11);
  // Buffers are reused: saving again allocates nothing new.
  cps.save(s, 12);
  cps.save(s, 12);  // the same position replaces
  EXPECT_EQ(cps.count(), 3);
  EXPECT_EQ(cps.bytes(), cps.max_bytes());
  EXPECT_EQ(cps.restore(s, 2), 0);
  EXPECT_EQ(cps.count(), 0);

  // A state with neither recurrent layers nor rings needs none.
  auto kv_only = SequenceState::create(std::vector<LayerStateSpec>{specs[1]}, 32, KvType::kF16);
  ASSERT_TRUE(kv_only.ok());
  EXPECT_FALSE((*kv_only)->needs_checkpoints());
  EXPECT_EQ((*kv_only)->checkpoint_bytes(32), 0u);
}

std::vector<int32_t> tokens(size_t n, int32_t salt) {
  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i)
    ids[i] = 1 + static_cast<int32_t>((i * 37 + static_cast<size_t>(salt) * 101 + 11) % 480);
  return ids;
}

std::unique_ptr<Session> make_session(Model& model, int64_t n_checkpoints, KvType kv = KvType::kF16) {
  SessionOptions so;
  so.kv_type = kv;
  so.n_ctx = 96;
  so.batch = 4;
  so.n_threads = 2;
  so.n_checkpoints = n_checkpoints;
  so.checkpoint_interval = 8;
  auto s = Session::create(model, so);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? std::move(s).value() : nullptr;
}

// Fresh evaluation of `ids` as the reusing session evaluates them: [0, c) then [c, end).
std::vector<float> fresh_logits(Model& model, const std::vector<int32_t>& ids, int64_t c, KvType kv = KvType::kF16) {
  auto s = make_session(model, 0, kv);
  std::vector<float> all;
  if (s == nullptr) return all;
  if (c > 0) {
    EXPECT_TRUE(s->eval(std::span<const int32_t>(ids.data(), static_cast<size_t>(c))).ok());
  }
  EXPECT_TRUE(s->eval(std::span<const int32_t>(ids.data() + c, ids.size() - static_cast<size_t>(c)), &all).ok());
  return all;
}

TEST(StateCheckpoints, HybridPrefixReuseEqualsAFreshEvaluation) {
  // Checkpoints every 8 tokens (chunks of 4): 8 .. 48. (gemma4's sliding rings are llama.cpp's
  // SWA cache size, 768 cells for the fixtures' 16-token window: in this 96-token context they
  // are plain caches that rewind by themselves, so gemma4 is not among these hybrids.)
  const std::vector<int32_t> first = tokens(48, 1);
  for (const char* name : {"syn-qwen35moe-small.gguf", "syn-qwen35-small.gguf", "syn-qwen3next-small.gguf"}) {
    SCOPED_TRACE(name);
    auto model = Model::load(shared_dir() + "/models/" + name, {});
    ASSERT_TRUE(model.ok()) << model.error().message;
    // The shared prefix on a checkpoint, just before one and just after one.
    for (const auto& [common, want] : std::vector<std::pair<int64_t, int64_t>>{{24, 24}, {23, 16}, {27, 24}}) {
      SCOPED_TRACE("common prefix " + std::to_string(common));
      auto s = make_session(**model, 8);
      ASSERT_NE(s, nullptr);
      ASSERT_TRUE(s->eval(first).ok());
      EXPECT_EQ(s->n_checkpoints(), 6);
      EXPECT_EQ(s->reusable_prefix(common), want);
      ASSERT_EQ(s->truncate(common), want);
      EXPECT_EQ(s->n_past(), want);
      std::vector<int32_t> second(first.begin(), first.begin() + common);
      const std::vector<int32_t> tail = tokens(13, 2);
      second.insert(second.end(), tail.begin(), tail.end());
      std::vector<float> reused;
      ASSERT_TRUE(
          s->eval(std::span<const int32_t>(second.data() + want, second.size() - static_cast<size_t>(want)), &reused)
              .ok());
      EXPECT_EQ(reused, fresh_logits(**model, second, want));
    }
    // q8_0 rings and KV rows come back the same way.
    {
      auto s = make_session(**model, 8, KvType::kQ8_0);
      ASSERT_NE(s, nullptr);
      ASSERT_TRUE(s->eval(first).ok());
      ASSERT_EQ(s->truncate(23), 16);
      std::vector<int32_t> second(first.begin(), first.begin() + 23);
      const std::vector<int32_t> tail = tokens(13, 2);
      second.insert(second.end(), tail.begin(), tail.end());
      std::vector<float> reused;
      ASSERT_TRUE(s->eval(std::span<const int32_t>(second.data() + 16, second.size() - 16), &reused).ok());
      EXPECT_EQ(reused, fresh_logits(**model, second, 16, KvType::kQ8_0));
    }
    // Two checkpoints kept: the oldest are dropped, and a prefix before the kept ones starts over.
    auto s = make_session(**model, 2);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->eval(first).ok());
    EXPECT_EQ(s->n_checkpoints(), 2);
    EXPECT_GT(s->checkpoint_bytes(), 0u);
    EXPECT_EQ(s->reusable_prefix(45), 40);
    EXPECT_EQ(s->truncate(39), 0);
    EXPECT_EQ(s->n_checkpoints(), 0);
    std::vector<float> again;
    ASSERT_TRUE(s->eval(first, &again).ok());
    EXPECT_EQ(again, fresh_logits(**model, first, 0));
  }
}

// The memory plan counts every session's checkpoints at their largest; a model that can always
// rewind plans none. A session's checkpoints stay within its share.
TEST(StateCheckpoints, CountedInTheMemoryPlan) {
  ModelLoadOptions lo;
  lo.n_ctx = 96;
  lo.n_sessions = 2;
  lo.n_checkpoints = 3;
  for (const char* name : {"syn-qwen35moe-small.gguf", "syn-gemma4e-small.gguf", "syn-qwen3.gguf"}) {
    SCOPED_TRACE(name);
    auto model = Model::load(shared_dir() + "/models/" + name, lo);
    ASSERT_TRUE(model.ok()) << model.error().message;
    const MemoryPlan& p = (*model)->plan();
    const size_t one = SequenceState::checkpoint_bytes_for(layer_state_specs((*model)->config()), 96, KvType::kF16);
    EXPECT_EQ(p.checkpoint_bytes, 2 * 3 * one);
    EXPECT_EQ(p.describe().find("state checkpoints") != std::string::npos, one > 0);
    if (one == 0) continue;
    auto s = make_session(**model, 3);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->eval(tokens(60, 4)).ok());
    EXPECT_EQ(s->n_checkpoints(), 3);
    EXPECT_GT(s->checkpoint_bytes(), 0u);
    EXPECT_LE(s->checkpoint_bytes(), 3 * one);
  }
}

// --ctx-checkpoints auto: 8, fewer when they would take over an eighth of the budget, none for a
// model that needs none; whatever the residency.
TEST(StateCheckpoints, AutomaticCountFitsTheBudget) {
  constexpr uint64_t kMiB = 1 << 20;
  EXPECT_EQ(auto_checkpoint_count(8192 * kMiB, 1, 63 * kMiB), 8);   // Qwen3.5-35B-A3B in 8 GiB
  EXPECT_EQ(auto_checkpoint_count(8192 * kMiB, 1, 400 * kMiB), 2);  // Gemma 4 26B's rings
  EXPECT_EQ(auto_checkpoint_count(8192 * kMiB, 2, 400 * kMiB), 1);
  EXPECT_EQ(auto_checkpoint_count(1024 * kMiB, 1, 400 * kMiB), 0);
  EXPECT_EQ(auto_checkpoint_count(8192 * kMiB, 1, 0), 0);
  for (ResidencyMode mode : {ResidencyMode::kAuto, ResidencyMode::kMmap}) {
    ModelLoadOptions lo;
    lo.n_ctx = 96;
    lo.residency = mode;
    lo.n_checkpoints = kAutoCheckpoints;
    auto hybrid = Model::load(shared_dir() + "/models/syn-qwen35moe-small.gguf", lo);
    ASSERT_TRUE(hybrid.ok()) << hybrid.error().message;
    EXPECT_EQ((*hybrid)->plan().n_checkpoints, kMaxAutoCheckpoints);
    auto kv_only = Model::load(shared_dir() + "/models/syn-qwen3.gguf", lo);
    ASSERT_TRUE(kv_only.ok()) << kv_only.error().message;
    EXPECT_EQ((*kv_only)->plan().n_checkpoints, 0);
  }
}

// A streamed read that fails mid-prompt leaves a hybrid session at its latest checkpoint, from
// which it continues exactly as a fresh session does.
TEST(StateCheckpoints, FailedPassFallsBackToTheLatestCheckpoint) {
  const std::string path = shared_dir() + "/models/syn-qwen35moe-small.gguf";
  ModelLoadOptions lo;
  lo.residency = ResidencyMode::kStream;
  lo.mem_bytes = 1ull << 30;
  lo.batch = 4;
  lo.n_ctx = 96;
  {
    auto probe = Model::load(path, lo);
    ASSERT_TRUE(probe.ok()) << probe.error().message;
    lo.mem_bytes = (*probe)->plan().min_budget_bytes;  // the fewest expert slots: reads every pass
  }
  std::atomic<bool> failing{false};
  lo.io_fault_injector = [&failing](uint64_t, uint64_t) {
    FaultAction a;
    if (failing) a.error = EIO;
    return a;
  };
  auto streamed = Model::load(path, lo);
  ASSERT_TRUE(streamed.ok()) << streamed.error().message;
  ASSERT_TRUE((*streamed)->streams());
  auto s = make_session(**streamed, 8);
  ASSERT_NE(s, nullptr);
  const std::vector<int32_t> ids = tokens(40, 5);
  ASSERT_TRUE(s->eval(std::span<const int32_t>(ids.data(), 20)).ok());  // checkpoints at 8 and 16
  failing = true;
  ASSERT_FALSE(s->eval(std::span<const int32_t>(ids.data() + 20, 12)).ok());
  failing = false;
  EXPECT_EQ(s->n_past(), 16);
  std::vector<float> after;
  ASSERT_TRUE(s->eval(std::span<const int32_t>(ids.data() + 16, ids.size() - 16), &after).ok());
  auto resident = Model::load(path, {});
  ASSERT_TRUE(resident.ok());
  EXPECT_EQ(after, fresh_logits(**resident, ids, 16));
}

// Without checkpoints (the default) a hybrid session starts over, as before.
TEST(StateCheckpoints, OffByDefault) {
  auto model = Model::load(shared_dir() + "/models/syn-qwen35moe-small.gguf", {});
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto s = make_session(**model, 0);
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->eval(tokens(20, 3)).ok());
  EXPECT_EQ(s->n_checkpoints(), 0);
  EXPECT_EQ(s->truncate(10), 0);
  SessionOptions bad;
  bad.n_checkpoints = 257;
  auto e = Session::create(**model, bad);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("checkpoint count"), std::string::npos) << e.error().message;
  bad.n_checkpoints = 1;
  bad.checkpoint_interval = 0;
  e = Session::create(**model, bad);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("checkpoint interval"), std::string::npos) << e.error().message;
}

}  // namespace
}  // namespace sniper
