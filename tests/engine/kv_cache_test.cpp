// SPDX-License-Identifier: MIT
// KvCache (kv/kv_cache.h): values land where its AttentionLayout says (each kv head's positions
// contiguous, f16 V transposed), saved layers come out in the layout-independent order of saved
// contexts, and load_layer is save_layer's exact inverse. Bad shapes are errors.
#include "kv/kv_cache.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "quant/q8_0.h"

namespace sniper {
namespace {

constexpr int64_t kLayers = 2, kCtx = 40, kHeads = 3, kHd = 64;

// The bytes the cache type gives one head's slice of values.
std::vector<uint8_t> encode(KvType type, const float* x) {
  if (type == KvType::kF16) {
    std::vector<uint8_t> out(sizeof(fp16_t) * kHd);
    auto* h = reinterpret_cast<fp16_t*>(out.data());
    for (int64_t i = 0; i < kHd; ++i) h[i] = fp32_to_fp16(x[i]);
    return out;
  }
  std::vector<uint8_t> out(sizeof(BlockQ8_0) * kHd / 32);
  quantize_row_q8_0_ref(x, reinterpret_cast<BlockQ8_0*>(out.data()), kHd);
  return out;
}

class KvCacheTest : public ::testing::TestWithParam<KvType> {};

TEST_P(KvCacheTest, LayoutSaveAndLoad) {
  const KvType type = GetParam();
  auto made = KvCache::create(kLayers, kCtx, kHeads, kHd, type);
  ASSERT_TRUE(made.ok()) << made.error().message;
  KvCache& kv = **made;
  const AttentionLayout& lay = kv.layout();
  ASSERT_EQ(lay.row_bytes, lay.head_bytes);  // a head's positions are contiguous
  ASSERT_EQ(lay.head_stride, lay.head_bytes * kCtx);
  ASSERT_EQ(kv.position_bytes(), lay.head_bytes * kHeads);
  EXPECT_EQ(lay.v_transposed, type == KvType::kF16);
  if (lay.v_transposed) {
    // V^T rows are whole 64-byte lines (kCtx = 40 positions -> 64), and the cache's size counts them.
    EXPECT_EQ(lay.vt_row_bytes, sizeof(fp16_t) * 64);
    EXPECT_EQ(kv.bytes(), static_cast<size_t>(kLayers) * (lay.head_bytes * kHeads * kCtx + lay.vt_row_bytes * kHeads * kHd));
  }
  EXPECT_EQ(kv.bytes(), KvCache::bytes_for(kLayers, kCtx, kHeads, kHd, type));

  const int64_t n = 29, width = kHeads * kHd;
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> k(static_cast<size_t>(kLayers * n * width)), v(k.size());
  for (float& x : k) x = dist(rng);
  for (float& x : v) x = dist(rng);
  auto at = [&](int64_t l, int64_t p) { return static_cast<size_t>((l * n + p) * width); };
  for (int64_t l = 0; l < kLayers; ++l) {
    for (int64_t p = 0; p < n; ++p) kv.store(l, p, k.data() + at(l, p), v.data() + at(l, p));
  }

  const size_t pb = kv.position_bytes();
  std::vector<uint8_t> saved(2 * pb * n);
  for (int64_t l = 0; l < kLayers; ++l) {
    kv.save_layer(l, n, saved.data());
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t h = 0; h < kHeads; ++h) {
        const std::vector<uint8_t> ke = encode(type, k.data() + at(l, p) + h * kHd);
        const size_t in_cache = lay.head_stride * h + lay.row_bytes * p;
        ASSERT_EQ(0, std::memcmp(kv.k_rows(l) + in_cache, ke.data(), ke.size())) << "K l " << l << " p " << p;
        ASSERT_EQ(0, std::memcmp(saved.data() + pb * p + lay.head_bytes * h, ke.data(), ke.size()));
        const float* vs = v.data() + at(l, p) + h * kHd;
        if (type == KvType::kQ8_0) {
          const std::vector<uint8_t> ve = encode(type, vs);
          ASSERT_EQ(0, std::memcmp(kv.v_rows(l) + in_cache, ve.data(), ve.size()));
          ASSERT_EQ(0, std::memcmp(saved.data() + pb * (n + p) + lay.head_bytes * h, ve.data(), ve.size()));
        } else {
          for (int64_t d = 0; d < kHd; ++d) {
            const fp16_t want = fp32_to_fp16(vs[d]);
            const int64_t row = h * kHd + d;
            fp16_t got, got_saved;
            std::memcpy(&got, kv.v_rows(l) + lay.vt_row_bytes * row + sizeof(fp16_t) * p, sizeof(fp16_t));
            std::memcpy(&got_saved, saved.data() + pb * n + sizeof(fp16_t) * (row * n + p), sizeof(fp16_t));
            ASSERT_EQ(got, want);
            ASSERT_EQ(got_saved, want);
          }
        }
      }
    }
    // A fresh cache loaded from the saved bytes saves the same bytes and holds the same rows.
    auto other = KvCache::create(kLayers, kCtx, kHeads, kHd, type);
    ASSERT_TRUE(other.ok());
    (*other)->load_layer(l, n, saved.data());
    std::vector<uint8_t> again(saved.size());
    (*other)->save_layer(l, n, again.data());
    EXPECT_EQ(saved, again);
    for (int64_t h = 0; h < kHeads; ++h) {
      const size_t off = lay.head_stride * h;
      EXPECT_EQ(0, std::memcmp((*other)->k_rows(l) + off, kv.k_rows(l) + off, lay.row_bytes * n));
    }
    if (lay.v_transposed) {
      for (int64_t row = 0; row < kHeads * kHd; ++row) {
        const size_t off = lay.vt_row_bytes * row;
        EXPECT_EQ(0, std::memcmp((*other)->v_rows(l) + off, kv.v_rows(l) + off, sizeof(fp16_t) * n)) << "V^T row " << row;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, KvCacheTest, ::testing::Values(KvType::kF16, KvType::kQ8_0),
                         [](const auto& info) { return std::string(kv_type_name(info.param)); });

TEST(KvCache, BadShapesAreErrors) {
  auto bad_ctx = KvCache::create(1, 0, 2, 64, KvType::kF16);
  ASSERT_FALSE(bad_ctx.ok());
  EXPECT_NE(bad_ctx.error().message.find("context"), std::string::npos);
  auto bad_hd = KvCache::create(1, 8, 2, 48, KvType::kQ8_0);
  ASSERT_FALSE(bad_hd.ok());
  EXPECT_NE(bad_hd.error().message.find("multiple of 32"), std::string::npos);
}

}  // namespace
}  // namespace sniper
