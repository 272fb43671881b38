// SPDX-License-Identifier: MIT
// SequenceState: layers of the same KV shape share one cache, a shared-KV layer reads its
// source's rows, recurrent slots are separate f32 states, a window is a ring, the byte count
// matches what create() allocates, save/load round-trips every kind, rewinding is refused where
// the past cannot be recovered, and bad specs are errors naming the layer.
#include "kv/sequence_state.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace sniper {
namespace {

LayerStateSpec kv(int64_t heads, int64_t hd, int64_t window = 0) {
  LayerStateSpec s;
  s.kind = LayerStateKind::kKv;
  s.n_kv_heads = heads;
  s.head_dim = hd;
  s.window = window;
  return s;
}

LayerStateSpec shared(int64_t with) {
  LayerStateSpec s = kv(2, 32);
  s.kind = LayerStateKind::kSharedKv;
  s.shared_with = with;
  return s;
}

LayerStateSpec recurrent(int64_t conv, int64_t rec) {
  LayerStateSpec s;
  s.kind = LayerStateKind::kRecurrent;
  s.conv_floats = conv;
  s.recurrent_floats = rec;
  return s;
}

std::vector<float> row(int64_t n, float base) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = base + 0.25f * static_cast<float>(i);
  return v;
}

TEST(SequenceState, GroupsSharingRingsAndRecurrentSlots) {
  // layer 0: kv [2 x 32], 1: recurrent, 2: kv [2 x 32] (same group as 0), 3: shares 0,
  // 4: kv [1 x 64], 5: a window of 8 over [2 x 32] (a ring: its own group).
  const std::vector<LayerStateSpec> specs = {kv(2, 32), recurrent(12, 40), kv(2, 32),
                                             shared(0), kv(1, 64),         kv(2, 32, 8)};
  for (KvType type : {KvType::kF16, KvType::kQ8_0}) {
    auto st = SequenceState::create(specs, 64, type);
    ASSERT_TRUE(st.ok()) << st.error().message;
    SequenceState& s = **st;
    EXPECT_EQ(s.bytes(), SequenceState::bytes_for(specs, 64, type));
    const size_t full = KvCache::bytes_for(2, 64, 2, 32, type) + KvCache::bytes_for(1, 64, 1, 64, type) +
                        KvCache::bytes_for(1, 8, 2, 32, type) + sizeof(float) * 52;
    EXPECT_EQ(s.bytes(), full);
    EXPECT_EQ(s.kv_slot(0).cache, s.kv_slot(2).cache);
    EXPECT_EQ(s.kv_slot(0).index, 0);
    EXPECT_EQ(s.kv_slot(2).index, 1);
    EXPECT_EQ(s.kv_slot(3).cache, s.kv_slot(0).cache);
    EXPECT_EQ(s.kv_slot(3).index, 0);
    EXPECT_NE(s.kv_slot(4).cache, s.kv_slot(0).cache);
    EXPECT_TRUE(s.kv_slot(5).cache->ring());
    EXPECT_EQ(s.kv_slot(5).cache->n_ctx(), 8);
    EXPECT_FALSE(s.kv_slot(0).cache->ring());
    EXPECT_EQ(s.recurrent_state(1), s.conv_state(1) + 12);
    for (int i = 0; i < 52; ++i) EXPECT_EQ(s.conv_state(1)[i], 0.0f);
    EXPECT_TRUE(s.has_recurrent());
    EXPECT_FALSE(s.rewindable(1));
  }
}

TEST(SequenceState, RingWrapsAndRewindIsRefusedOnceWrapped) {
  const std::vector<LayerStateSpec> specs = {kv(1, 32, 4)};
  auto st = SequenceState::create(specs, 16, KvType::kF16);
  ASSERT_TRUE(st.ok()) << st.error().message;
  SequenceState& s = **st;
  EXPECT_FALSE(s.has_recurrent());
  EXPECT_TRUE(s.rewindable(4));
  EXPECT_FALSE(s.rewindable(5));
  KvCache& cache = *s.kv_slot(0).cache;
  // Positions 0..5 into 4 slots: slot 1 ends up with position 5.
  for (int64_t pos = 0; pos < 6; ++pos) {
    const std::vector<float> k = row(32, static_cast<float>(pos)), v = row(32, -static_cast<float>(pos));
    cache.store(0, pos, k.data(), v.data());
  }
  std::vector<uint8_t> saved(s.saved_layer_bytes(0, 6));
  EXPECT_EQ(saved.size(), 2 * cache.position_bytes() * 4);  // the ring's 4 slots, not 6 positions
  s.save_layer(0, 6, saved.data());
  const size_t pb = cache.position_bytes();
  std::vector<uint8_t> pos5(2 * pb);  // K then V of one position
  auto other = KvCache::create(1, 1, 1, 32, KvType::kF16);
  ASSERT_TRUE(other.ok());
  const std::vector<float> k5 = row(32, 5.0f), v5 = row(32, -5.0f);
  (*other)->store(0, 0, k5.data(), v5.data());
  (*other)->save_layer(0, 1, pos5.data());
  EXPECT_EQ(0, std::memcmp(saved.data() + pb * 1, pos5.data(), pb));  // slot 1 holds position 5's K
  // Round trip into a fresh state of another context size with the same window.
  auto back = SequenceState::create(specs, 32, KvType::kF16);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ((*back)->saved_layer_bytes(0, 6), saved.size());
  (*back)->load_layer(0, 6, saved.data());
  std::vector<uint8_t> again(saved.size());
  (*back)->save_layer(0, 6, again.data());
  EXPECT_EQ(again, saved);
}

TEST(SequenceState, RecurrentStateRoundTripsAndResets) {
  const std::vector<LayerStateSpec> specs = {recurrent(3, 5), kv(1, 32)};
  auto st = SequenceState::create(specs, 8, KvType::kF16);
  ASSERT_TRUE(st.ok());
  SequenceState& s = **st;
  for (int i = 0; i < 8; ++i) s.conv_state(0)[i] = static_cast<float>(i) + 0.5f;
  ASSERT_EQ(s.saved_layer_bytes(0, 3), 8 * sizeof(float));
  std::vector<uint8_t> saved(s.saved_layer_bytes(0, 3));
  s.save_layer(0, 3, saved.data());
  s.reset_recurrent();
  EXPECT_EQ(s.recurrent_state(0)[4], 0.0f);
  s.load_layer(0, 3, saved.data());
  EXPECT_EQ(s.recurrent_state(0)[4], 7.5f);
  EXPECT_EQ(s.conv_state(0)[0], 0.5f);
}

TEST(SequenceState, BadSpecsAreErrorsNamingTheLayer) {
  auto expect_error = [](std::vector<LayerStateSpec> specs, KvType type, const char* needle) {
    auto st = SequenceState::create(specs, 16, type);
    ASSERT_FALSE(st.ok()) << needle;
    EXPECT_NE(st.error().message.find(needle), std::string::npos) << st.error().message;
  };
  expect_error({kv(2, 32), shared(1)}, KvType::kF16, "layer 1 shares");
  expect_error({recurrent(1, 1), shared(0)}, KvType::kF16, "layer 1 shares");
  expect_error({kv(0, 32)}, KvType::kF16, "layer 0");
  expect_error({kv(1, 32), kv(1, 16)}, KvType::kQ8_0,
               "layer 1: K cache type q8_0 has block size 32, which does not divide head_dim 16");
  expect_error({recurrent(2, 0)}, KvType::kF16, "recurrent_floats");
  expect_error({}, KvType::kF16, "at least one layer");
  auto zero = SequenceState::create(std::vector<LayerStateSpec>{kv(1, 32)}, 0, KvType::kF16);
  EXPECT_FALSE(zero.ok());
}

}  // namespace
}  // namespace sniper
