// SPDX-License-Identifier: MIT
// WeightStore (weights/weight_store.h): every tensor it loads holds exactly the file's bytes, in
// both residencies, including a tensor larger than one read chunk (the resident load splits it
// among its threads), with streamed tensors left out, and a file that changed after it was
// parsed is refused with an error naming it.
#include "weights/weight_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gguf/writer.h"

namespace sniper {
namespace {

// Deterministic bytes of tensor `seed`: a different pattern per tensor and per position.
uint8_t pattern(uint64_t seed, uint64_t i) {
  uint64_t x = (i / 8 + 1) * 0x9E3779B97F4A7C15ull ^ (seed + 1) * 0xD1B54A32D192ED03ull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return static_cast<uint8_t>(x >> (8 * (i % 8)));
}

struct Spec {
  std::string name;
  std::vector<int64_t> ne;  // F32
};

// small, big (70 MB: more than one 64 MiB read), small again, odd-sized.
const std::vector<Spec>& specs() {
  static const std::vector<Spec> s = {
      {"a.weight", {64, 3}}, {"big.weight", {4096, 4273}}, {"b.weight", {16}}, {"c.weight", {7, 5}}};
  return s;
}

class WeightStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/sniper_weight_store_" + std::to_string(getpid()) + ".gguf";
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    for (size_t k = 0; k < specs().size(); ++k) {
      w.add_tensor(specs()[k].name, GgmlType::kF32, specs()[k].ne, [k](uint8_t* dst, size_t n) {
        for (size_t i = 0; i < n; ++i) dst[i] = pattern(k, i);
      });
    }
    ASSERT_TRUE(w.write(path_).ok());
    auto g = gguf_open(path_);
    ASSERT_TRUE(g.ok()) << g.error().message;
    gguf_ = std::make_unique<GgufFile>(std::move(*g));
  }
  void TearDown() override { std::remove(path_.c_str()); }

  // Checks every tensor of `store` against the pattern; `absent` must have no data.
  void expect_bytes(const WeightStore& store, const std::string& absent = "") {
    for (size_t k = 0; k < specs().size(); ++k) {
      const QTensor* t = store.find_tensor(specs()[k].name);
      ASSERT_NE(t, nullptr) << specs()[k].name;
      if (specs()[k].name == absent) {
        EXPECT_EQ(t->data, nullptr);
        continue;
      }
      ASSERT_NE(t->data, nullptr) << specs()[k].name;
      size_t n = sizeof(float);
      for (int64_t d : specs()[k].ne) n *= static_cast<size_t>(d);
      std::vector<uint8_t> want(n);
      for (size_t i = 0; i < n; ++i) want[i] = pattern(k, i);
      ASSERT_EQ(0, std::memcmp(t->data, want.data(), n)) << specs()[k].name;
    }
  }

  std::string path_;
  std::unique_ptr<GgufFile> gguf_;
};

TEST_F(WeightStoreTest, ResidentHoldsTheFileBytes) {
  auto store = WeightStore::open(*gguf_, Residency::kResident);
  ASSERT_TRUE(store.ok()) << store.error().message;
  expect_bytes(**store);
  EXPECT_GT((*store)->resident_bytes(), 70'000'000u);
}

TEST_F(WeightStoreTest, ResidentLeavesStreamedTensorsOut) {
  const std::unordered_set<std::string> streamed = {"big.weight"};
  auto store = WeightStore::open(*gguf_, Residency::kResident, &streamed);
  ASSERT_TRUE(store.ok()) << store.error().message;
  expect_bytes(**store, "big.weight");
  EXPECT_LT((*store)->resident_bytes(), 4096u);
}

TEST_F(WeightStoreTest, MmapHoldsTheFileBytes) {
  auto store = WeightStore::open(*gguf_, Residency::kMmap);
  ASSERT_TRUE(store.ok()) << store.error().message;
  expect_bytes(**store);
  EXPECT_EQ((*store)->resident_bytes(), 0u);
}

TEST_F(WeightStoreTest, FileChangedSinceParsedIsRefused) {
  ASSERT_EQ(0, truncate(path_.c_str(), static_cast<off_t>(gguf_->file_size - 100)));
  auto store = WeightStore::open(*gguf_, Residency::kResident);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message.find("changed size since it was parsed"), std::string::npos) << store.error().message;
  EXPECT_NE(store.error().message.find(path_), std::string::npos) << store.error().message;
}

}  // namespace
}  // namespace sniper
