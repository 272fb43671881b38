// SPDX-License-Identifier: MIT
// Sliding-window attention over a ring (kernels/window_attention.h): every host tier gives the
// bits of the scalar twin attend_window_ref, for f16, bf16 and quantized caches (Hadamard-rotated
// K and V), transposed V and V in rows, windows that wrap around the ring, head groups of 1 to 4,
// scales 1 and 1/8, and queries that also see later positions (`ahead`: a chunk attending both
// ways); outputs start as NaN so an unwritten element shows. The twin itself agrees with a plain
// double-precision attention over the window's cached values (and the positions ahead).
#include "kernels/window_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernel_test_util.h"
#include "kv/kv_cache.h"

namespace sniper {
namespace {

using test::bits;
using test::host_has;
using test::kAllTiers;

struct Setting {
  const char* name;
  KvConfig kv;
};

std::vector<Setting> settings() {
  KvConfig q8k(KvType::kQ8_0, KvType::kF16, FlashAttn::kOff);
  KvConfig q4(KvType::kQ4_0, KvType::kQ4_0, FlashAttn::kOn);
  KvConfig q8_norot(KvType::kQ8_0, KvType::kQ8_0, FlashAttn::kOn);
  q8_norot.rotate = false;
  return {{"f16", KvConfig(KvType::kF16, KvType::kF16, FlashAttn::kOff)},
          {"f16-flash", KvConfig(KvType::kF16, KvType::kF16, FlashAttn::kOn)},
          {"bf16", KvConfig(KvType::kBF16, KvType::kBF16, FlashAttn::kOff)},
          {"q8_0k-f16v", q8k},
          {"q4_0-flash", q4},
          {"q8_0-flash-norot", q8_norot}};
}

// A ring of 2 * window cells with positions [0, n_pos) stored (later ones overwrite earlier
// cells); keeps what was stored per position, [pos][kv_head][d].
struct Ring {
  std::unique_ptr<KvCache> cache;
  std::vector<float> k, v;
};

Ring make_ring(const KvConfig& kv, int64_t n_kv_heads, int64_t hd, int64_t window, int64_t n_pos, uint32_t seed) {
  Ring r;
  auto cache = KvCache::create(1, 2 * window, n_kv_heads, hd, kv, /*ring=*/true);
  EXPECT_TRUE(cache.ok()) << cache.error().message;
  r.cache = std::move(cache).value();
  const int64_t row = n_kv_heads * hd;
  r.k = test::random_floats(n_pos * row, seed, test::Cond::kWell);
  r.v = test::random_floats(n_pos * row, seed + 1, test::Cond::kWell);
  for (int64_t p = 0; p < n_pos; ++p) r.cache->store(0, p, r.k.data() + p * row, r.v.data() + p * row);
  return r;
}

TEST(WindowAttention, EveryTierMatchesTheScalarTwinBitForBit) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  int checked = 0;
  for (const Setting& s : settings()) {
    for (const int64_t hd : {64, 128}) {
      for (const int64_t window : {1, 5, 16}) {
        const int64_t n_kv_heads = 2, n_pos = 3 * 2 * window + 3;
        const Ring ring = make_ring(s.kv, n_kv_heads, hd, window, n_pos, static_cast<uint32_t>(hd + window));
        const AttentionLayout& layout = ring.cache->layout();
        for (const int64_t n_heads : {1, 3, 4}) {
          for (const float scale : {1.0f, 0.125f}) {
            for (int64_t ahead = 0; ahead < window; ahead += std::max<int64_t>(1, window - 1)) {
              const std::vector<float> q =
                  test::random_floats(n_heads * hd, static_cast<uint32_t>(n_heads * 7 + hd), test::Cond::kWell);
              std::vector<float> scratch(window_attention_scratch_floats(hd, window + ahead, n_heads));
              // The last 2 * window positions are in the ring; attend at each of the last few,
              // whose windows (and positions ahead) start anywhere in it (and wrap).
              for (int64_t pos = n_pos - window - 1; pos + ahead < n_pos; ++pos) {
                if (pos < 0) continue;
                for (int64_t kvh = 0; kvh < n_kv_heads; ++kvh) {
                  std::vector<float> want(static_cast<size_t>(n_heads * hd), nan);
                  attend_window_ref(layout, ring.cache->k_rows(0), ring.cache->v_rows(0), kvh, q.data(), n_heads, pos,
                                    window, ahead, scale, want.data(), scratch.data());
                  for (const IsaTier tier : kAllTiers) {
                    if (!host_has(tier)) continue;
                    std::vector<float> got(want.size(), nan);
                    attend_window(layout, ring.cache->k_rows(0), ring.cache->v_rows(0), kvh, q.data(), n_heads, pos,
                                  window, ahead, scale, got.data(), scratch.data(), tier);
                    for (size_t i = 0; i < got.size(); ++i) {
                      ASSERT_EQ(bits(got[i]), bits(want[i]))
                          << s.name << " hd " << hd << " window " << window << " heads " << n_heads << " scale "
                          << scale << " pos " << pos << " ahead " << ahead << " kv head " << kvh << " tier "
                          << isa_tier_name(tier) << " element " << i << ": " << got[i] << " vs " << want[i];
                    }
                    ++checked;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 500);
}

TEST(WindowAttention, TheTwinIsAttentionOverTheWindow) {
  // f16 K and V^T without rotation: the cached values are the stored ones rounded to f16, so a
  // double-precision softmax attention over the window's positions (and only those) agrees to
  // the f16 rounding of Q and of the weights; with positions ahead, over first .. pos + ahead.
  const int64_t hd = 64, window = 7, n_kv_heads = 1, n_heads = 2, n_pos = 2 * window;  // nothing overwritten
  const Ring ring = make_ring(KvConfig(KvType::kF16, KvType::kF16, FlashAttn::kOff), n_kv_heads, hd, window, n_pos, 3);
  const std::vector<float> q = test::random_floats(n_heads * hd, 11, test::Cond::kWell);
  std::vector<float> scratch(window_attention_scratch_floats(hd, 2 * window, n_heads));
  for (const auto& [pos, ahead] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 0}, {3, 0}, {6, 0}, {7, 0}, {10, 0}, {13, 0}, {0, 5}, {6, 7}, {8, 5}}) {
    std::vector<float> out(static_cast<size_t>(n_heads * hd));
    attend_window_ref(ring.cache->layout(), ring.cache->k_rows(0), ring.cache->v_rows(0), 0, q.data(), n_heads, pos,
                      window, ahead, 0.5f, out.data(), scratch.data());
    const int64_t first = std::max<int64_t>(0, pos - window + 1), last = pos + ahead;
    for (int64_t g = 0; g < n_heads; ++g) {
      std::vector<double> w;
      double max = -INFINITY, sum = 0;
      for (int64_t p = first; p <= last; ++p) {
        double s = 0;
        for (int64_t d = 0; d < hd; ++d) s += static_cast<double>(q[g * hd + d]) * ring.k[p * hd + d];
        w.push_back(0.5 * s);
        max = std::max(max, w.back());
      }
      for (double& x : w) sum += (x = std::exp(x - max));
      for (int64_t d = 0; d < hd; ++d) {
        double o = 0;
        for (int64_t p = first; p <= last; ++p) o += w[static_cast<size_t>(p - first)] / sum * ring.v[p * hd + d];
        EXPECT_NEAR(out[static_cast<size_t>(g * hd + d)], o, 2e-2 * (1 + std::fabs(o)))
            << "pos " << pos << " ahead " << ahead;
      }
    }
  }
}

}  // namespace
}  // namespace sniper
