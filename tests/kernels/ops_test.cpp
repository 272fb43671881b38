// SPDX-License-Identifier: MIT
// Row ops against straightforward double-precision formulas.
#include "kernels/ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/fp16.h"

namespace sniper {
namespace {

std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

TEST(Ops, RmsNorm) {
  for (size_t n : {1u, 7u, 64u, 4096u}) {
    auto x = random_vec(n, 1), w = random_vec(n, 2);
    std::vector<float> out(n);
    rms_norm(x.data(), w.data(), out.data(), static_cast<int64_t>(n), 1e-5f);
    double ss = 0;
    for (float v : x) ss += static_cast<double>(v) * v;
    const double scale = 1.0 / std::sqrt(ss / static_cast<double>(n) + 1e-5);
    for (size_t i = 0; i < n; ++i) EXPECT_NEAR(out[i], x[i] * scale * w[i], 1e-5 * (1 + std::fabs(out[i])));
    rms_norm(x.data(), nullptr, x.data(), static_cast<int64_t>(n), 1e-5f);  // in place, no weight
    for (size_t i = 0; i < n; ++i) EXPECT_NEAR(x[i] * w[i], out[i], 1e-5 * (1 + std::fabs(out[i])));
  }
}

TEST(Ops, RopeMatchesDefinitionAndPreservesNorm) {
  const int64_t head_dim = 64, n_heads = 3, pos = 37;
  for (RopeStyle style : {RopeStyle::kNorm, RopeStyle::kNeox}) {
    auto x = random_vec(static_cast<size_t>(head_dim * n_heads), 3);
    std::vector<float> y = x, c(head_dim / 2), s(head_dim / 2);
    rope_angles(pos, head_dim, 10000.0f, 1.0f, nullptr, c.data(), s.data());
    rope_apply(y.data(), n_heads, head_dim, head_dim, style, c.data(), s.data());
    for (int64_t h = 0; h < n_heads; ++h) {
      for (int64_t i = 0; i < head_dim / 2; ++i) {
        const double theta = pos * std::pow(10000.0, -2.0 * static_cast<double>(i) / head_dim);
        const int64_t a = style == RopeStyle::kNorm ? 2 * i : i;
        const int64_t b = style == RopeStyle::kNorm ? 2 * i + 1 : i + head_dim / 2;
        const double x0 = x[static_cast<size_t>(h * head_dim + a)], x1 = x[static_cast<size_t>(h * head_dim + b)];
        EXPECT_NEAR(y[static_cast<size_t>(h * head_dim + a)], x0 * std::cos(theta) - x1 * std::sin(theta), 2e-4);
        EXPECT_NEAR(y[static_cast<size_t>(h * head_dim + b)], x0 * std::sin(theta) + x1 * std::cos(theta), 2e-4);
      }
    }
  }
  // Position 0 is the identity.
  std::vector<float> c(8), s(8);
  rope_angles(0, 16, 1e6f, 1.0f, nullptr, c.data(), s.data());
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(c[static_cast<size_t>(i)], 1.0f);
    EXPECT_EQ(s[static_cast<size_t>(i)], 0.0f);
  }
}

TEST(Ops, RopeFreqFactorsAndScale) {
  std::vector<float> c1(4), s1(4), c2(4), s2(4);
  const float ff[4] = {1.0f, 2.0f, 4.0f, 8.0f};
  rope_angles(10, 8, 10000.0f, 0.5f, ff, c1.data(), s1.data());
  for (int i = 0; i < 4; ++i) {
    const double theta = 0.5 * 10 * std::pow(10000.0, -2.0 * i / 8) / ff[i];
    EXPECT_NEAR(c1[static_cast<size_t>(i)], std::cos(theta), 1e-5);
    EXPECT_NEAR(s1[static_cast<size_t>(i)], std::sin(theta), 1e-5);
  }
}

TEST(Ops, SoftmaxSumsToOneAndHandlesMask) {
  auto x = random_vec(100, 4, 10.0f);
  x[3] = -INFINITY;
  softmax(x.data(), 100);
  double sum = 0;
  for (float v : x) {
    EXPECT_GE(v, 0.0f);
    sum += v;
  }
  EXPECT_NEAR(sum, 1.0, 1e-5);
  EXPECT_EQ(x[3], 0.0f);
}

TEST(Ops, TopKDescendingLowestIndexOnTies) {
  const float x[8] = {0.1f, 0.5f, 0.5f, -1.0f, 0.9f, 0.5f, 0.0f, 0.9f};
  int32_t idx[4];
  top_k(x, 8, 4, idx);
  EXPECT_EQ(idx[0], 4);
  EXPECT_EQ(idx[1], 7);
  EXPECT_EQ(idx[2], 1);
  EXPECT_EQ(idx[3], 2);
  for (uint32_t seed = 0; seed < 20; ++seed) {
    auto v = random_vec(128, seed);
    std::vector<int32_t> got(8);
    top_k(v.data(), 128, 8, got.data());
    std::vector<int32_t> order(128);
    for (int i = 0; i < 128; ++i) order[static_cast<size_t>(i)] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return v[static_cast<size_t>(a)] > v[static_cast<size_t>(b)]; });
    for (int i = 0; i < 8; ++i) EXPECT_EQ(got[static_cast<size_t>(i)], order[static_cast<size_t>(i)]);
  }
  EXPECT_EQ(argmax(x, 8), 4);
}

TEST(Ops, SiluMul) {
  auto g = random_vec(33, 5, 3.0f), u = random_vec(33, 6);
  std::vector<float> out(33);
  silu_mul(g.data(), u.data(), out.data(), 33);
  for (size_t i = 0; i < 33; ++i) {
    const double s = g[i] / (1.0 + std::exp(-static_cast<double>(g[i])));
    EXPECT_NEAR(out[i], s * u[i], 1e-5 * (1 + std::fabs(out[i])));
  }
}

// Every runnable tier's softmax and silu_mul give the scalar reference's bits: lengths around
// the 16-lane blocks, scales from tiny to beyond exp's saturation (|x| > 88 underflows or
// overflows, |n| > 192 takes the saturated path), masked (-inf) cells, and all-masked rows.
TEST(Ops, EveryTierMatchesRefBitwise) {
  for (IsaTier tier : arch_tiers()) {
    if (tier == IsaTier::kRef || !host_runs(tier)) continue;
    const RowOps& ops = find_row_ops(tier);
    const RowOps& ref = find_row_ops(IsaTier::kRef);
    uint32_t seed = 100;
    for (size_t n : {1u, 15u, 16u, 17u, 31u, 100u, 257u, 4096u}) {
      for (float scale : {1e-3f, 1.0f, 30.0f, 150.0f, 400.0f}) {
        auto x = random_vec(n, ++seed, scale);
        if (n > 5) x[n / 3] = -INFINITY;
        auto y = x;
        ops.softmax(x.data(), static_cast<int64_t>(n));
        ref.softmax(y.data(), static_cast<int64_t>(n));
        ASSERT_EQ(std::memcmp(x.data(), y.data(), n * sizeof(float)), 0)
            << "softmax " << isa_tier_name(tier) << " n=" << n << " scale=" << scale;
        const auto g = random_vec(n, ++seed, scale), u = random_vec(n, ++seed);
        std::vector<float> out(n), want(n);
        ops.silu_mul(g.data(), u.data(), out.data(), static_cast<int64_t>(n));
        ref.silu_mul(g.data(), u.data(), want.data(), static_cast<int64_t>(n));
        ASSERT_EQ(std::memcmp(out.data(), want.data(), n * sizeof(float)), 0)
            << "silu_mul " << isa_tier_name(tier) << " n=" << n << " scale=" << scale;
      }
    }
    std::vector<float> masked(40, -INFINITY), masked_ref(masked);
    ops.softmax(masked.data(), 40);
    ref.softmax(masked_ref.data(), 40);
    for (size_t i = 0; i < 40; ++i) ASSERT_EQ(std::isnan(masked[i]), std::isnan(masked_ref[i])) << i;
  }
}

// attention_weights is the composition it documents (scale, mask, softmax, round, zero-fill) on
// every tier, bit for bit: lengths around the 16-lane blocks for each of its three bounds, scales
// past exp's saturation, and an all-masked row. A NaN score makes the row NaN on every tier (the
// sign of a NaN from exp is the ISA's, so only NaN-ness is compared there).
TEST(Ops, AttentionWeightsEveryTier) {
  uint32_t seed = 300;
  struct Shape {
    int64_t n_kv, n_soft, n_dot;
  };
  const Shape shapes[] = {{1, 1, 1},       {1, 16, 64},     {15, 16, 16},       {16, 16, 64}, {17, 32, 64},
                          {100, 112, 128}, {257, 272, 320}, {4095, 4096, 4096}, {33, 40, 33}};
  for (IsaTier tier : arch_tiers()) {
    if (!host_runs(tier)) continue;
    const RowOps& ops = find_row_ops(tier);
    for (const Shape& sh : shapes) {
      for (float scale : {1e-3f, 1.0f, 30.0f, 400.0f}) {
        for (int special = 0; special < 2; ++special) {
          auto x = random_vec(static_cast<size_t>(sh.n_soft), ++seed, 3.0f);
          if (special == 1 && sh.n_kv > 3) x[static_cast<size_t>(sh.n_kv / 2)] = std::nanf("");
          std::vector<float> want(static_cast<size_t>(sh.n_dot), std::nanf("")), got(want);
          // The documented composition, from the ref row ops.
          std::vector<float> y = x;
          for (int64_t i = 0; i < sh.n_kv; ++i) y[static_cast<size_t>(i)] *= scale;
          for (int64_t i = sh.n_kv; i < sh.n_soft; ++i) y[static_cast<size_t>(i)] = -INFINITY;
          softmax_ref(y.data(), sh.n_soft);
          round_fp16_row_ref(y.data(), want.data(), sh.n_kv);
          for (int64_t i = sh.n_kv; i < sh.n_dot; ++i) want[static_cast<size_t>(i)] = 0.0f;
          ops.attention_weights(x.data(), sh.n_kv, sh.n_soft, scale, got.data(), sh.n_dot);
          for (size_t i = 0; i < want.size(); ++i) {
            if (std::isnan(want[i])) {
              ASSERT_TRUE(std::isnan(got[i])) << isa_tier_name(tier) << " i " << i;
              continue;
            }
            ASSERT_EQ(0, std::memcmp(&got[i], &want[i], sizeof(float)))
                << isa_tier_name(tier) << " n_kv " << sh.n_kv << " n_soft " << sh.n_soft << " n_dot " << sh.n_dot
                << " scale " << scale << " nan " << special << " i " << i << ": " << got[i] << " vs " << want[i];
          }
        }
      }
    }
    std::vector<float> masked(16, -INFINITY), w(16, std::nanf(""));
    ops.attention_weights(masked.data(), 0, 16, 1.0f, w.data(), 16);
    EXPECT_EQ(w, std::vector<float>(16, 0.0f)) << "an all-masked row has only zero weights";
  }
}

// round_fp16_row is round_fp16 per element on every tier: halfway cases, the f16 limits
// (65504 and beyond, subnormals, underflow to zero), infinities and NaNs (encoded as sign | 0x7E00).
TEST(Ops, RoundFp16RowEveryTier) {
  std::vector<float> x = random_vec(1000, 5, 3.0f);
  const float specials[] = {
      0.0f,          -0.0f, 65504.0f,        65520.0f,        -65536.0f, 1e-5f,     -6e-8f,
      2.9e-8f,       1e-9f, 1.0f + 0x1p-11f, 1.0f + 0x3p-11f, INFINITY,  -INFINITY, std::nanf("0x123"),
      -std::nanf("")};
  for (size_t i = 0; i < std::size(specials); ++i) x[i * 37] = specials[i];
  for (IsaTier tier : arch_tiers()) {
    if (!host_runs(tier)) continue;
    for (size_t n : {1u, 15u, 16u, 33u, 1000u}) {
      std::vector<float> y(n);
      find_row_ops(tier).round_fp16_row(x.data(), y.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i) {
        const float want = round_fp16(x[i]);
        ASSERT_EQ(0, std::memcmp(&y[i], &want, sizeof(float))) << isa_tier_name(tier) << " x=" << x[i];
      }
    }
  }
}

// IMRoPE / MRoPE: text tokens (t = h = w) give rope_angles' bits for Qwen3.5's sections (the
// small fixture's [3,3,2,0] at n_rot 16, the real [11,11,10,0] at n_rot 64), and distinct
// positions follow the sector rule, transcribed here directly (ggml_mrope_cache_init).
TEST(Ops, RopeMultiSections) {
  const int32_t configs[][4] = {{3, 3, 2, 0}, {11, 11, 10, 0}, {2, 1, 1, 2}};
  const int64_t n_rots[] = {16, 64, 24};
  for (int ci = 0; ci < 3; ++ci) {
    const int32_t* sec = configs[ci];
    const int64_t n_rot = n_rots[ci];
    const size_t half = static_cast<size_t>(n_rot / 2);
    for (bool interleaved : {true, false}) {
      for (int64_t pos : {0, 1, 37, 4095}) {
        const int64_t p4[4] = {pos, pos, pos, interleaved && sec[3] == 0 ? 0 : pos};
        std::vector<float> c(half), s(half), c1(half), s1(half);
        rope_angles_multi(p4, sec, interleaved, n_rot, 1e7f, 1.0f, nullptr, c.data(), s.data());
        rope_angles(pos, n_rot, 1e7f, 1.0f, nullptr, c1.data(), s1.data());
        for (size_t i = 0; i < half; ++i) {
          ASSERT_EQ(std::memcmp(&c[i], &c1[i], 4), 0) << ci << " pos " << pos << " pair " << i;
          ASSERT_EQ(std::memcmp(&s[i], &s1[i], 4), 0) << ci << " pos " << pos << " pair " << i;
        }
      }
      const int64_t p4[4] = {100, 7, 300, 11};
      std::vector<float> c(half), s(half);
      rope_angles_multi(p4, sec, interleaved, n_rot, 1e4f, 1.0f, nullptr, c.data(), s.data());
      const int64_t sect_dims = sec[0] + sec[1] + sec[2] + sec[3];
      for (int64_t i = 0; i < n_rot / 2; ++i) {
        const int64_t sector = i % sect_dims;
        int comp;
        if (interleaved) {
          comp = sector % 3 == 1 && sector < 3 * sec[1]   ? 1
                 : sector % 3 == 2 && sector < 3 * sec[2] ? 2
                 : sector % 3 == 0 && sector < 3 * sec[0] ? 0
                                                          : 3;
        } else {
          comp = sector < sec[0] ? 0 : sector < sec[0] + sec[1] ? 1 : sector < sec[0] + sec[1] + sec[2] ? 2 : 3;
        }
        const double theta =
            static_cast<double>(p4[comp]) * std::pow(1e4, -2.0 * static_cast<double>(i) / static_cast<double>(n_rot));
        EXPECT_NEAR(c[static_cast<size_t>(i)], std::cos(theta), 2e-4) << ci << " pair " << i;
        EXPECT_NEAR(s[static_cast<size_t>(i)], std::sin(theta), 2e-4) << ci << " pair " << i;
      }
    }
  }
}

// Vision M-RoPE (qwen3vl's ViT): head_dim / 2 pairs, each section's angle restarting at its own
// position (the exponent counts from the section's first pair), theta_scale over n_dims =
// head_dim / 2; sections of zero width pass over to the next.
TEST(Ops, RopeVisionSections) {
  const int32_t configs[][4] = {{16, 16, 16, 16}, {18, 18, 18, 18}, {0, 4, 4, 0}, {3, 2, 1, 2}};
  const int64_t head_dims[] = {64, 72, 16, 16};
  for (int ci = 0; ci < 4; ++ci) {
    const int32_t* sec = configs[ci];
    const int64_t hd = head_dims[ci];
    const int64_t p4[4] = {13, 5, 40, 2};
    std::vector<float> c(static_cast<size_t>(hd / 2), std::nanf("")), s(c.size(), std::nanf(""));
    rope_angles_vision(p4, sec, hd, 1e4f, c.data(), s.data());
    const int64_t sect_dims = sec[0] + sec[1] + sec[2] + sec[3];
    for (int64_t i = 0; i < hd / 2; ++i) {
      const int64_t sector = i % sect_dims;
      const int64_t starts[4] = {0, sec[0], sec[0] + sec[1], sec[0] + sec[1] + sec[2]};
      const int comp = sector < starts[1] ? 0 : sector < starts[2] ? 1 : sector < starts[3] ? 2 : 3;
      // Sections restart at their first pair; a zero-width first section leaves t running.
      const int64_t from = comp == 0 ? i - sector : (i - sector) + starts[comp];
      const double theta = static_cast<double>(p4[comp]) *
                           std::pow(1e4, -2.0 * static_cast<double>(i - from) / static_cast<double>(hd / 2));
      EXPECT_NEAR(c[static_cast<size_t>(i)], std::cos(theta), 2e-4) << ci << " pair " << i;
      EXPECT_NEAR(s[static_cast<size_t>(i)], std::sin(theta), 2e-4) << ci << " pair " << i;
    }
  }
}

// Gemma 4's partial rotation: rope_freqs = 16 x 1 then 48 x 1e30 on a 128-wide head (n_rot 128,
// NeoX): the first 16 pairs rotate as theta / 1, the other 48 stay as they are bit for bit, and
// a head dim beyond n_rot is untouched.
TEST(Ops, RopeFreqFactorOf1e30LeavesThePairAlone) {
  const int64_t n_rot = 128, head_dim = 160, n_heads = 2;
  std::vector<float> ff(64, 1.0f);
  for (size_t i = 16; i < 64; ++i) ff[i] = 1e30f;
  for (int64_t pos : {1, 15, 511, 4000}) {
    std::vector<float> c(64), s(64), c1(64), s1(64);
    rope_angles(pos, n_rot, 1e6f, 1.0f, ff.data(), c.data(), s.data());
    rope_angles(pos, n_rot, 1e6f, 1.0f, nullptr, c1.data(), s1.data());
    const auto x = random_vec(static_cast<size_t>(head_dim * n_heads), 40 + static_cast<uint32_t>(pos));
    auto y = x;
    rope_apply(y.data(), n_heads, head_dim, n_rot, RopeStyle::kNeox, c.data(), s.data());
    for (int64_t h = 0; h < n_heads; ++h) {
      const float* xh = x.data() + h * head_dim;
      const float* yh = y.data() + h * head_dim;
      for (int64_t i = 0; i < 64; ++i) {
        const size_t iu = static_cast<size_t>(i);
        if (i < 16) {
          ASSERT_EQ(c[iu], c1[iu]);
          ASSERT_EQ(s[iu], s1[iu]);
          const double th = static_cast<double>(pos) * std::pow(1e6, -2.0 * static_cast<double>(i) / 128.0);
          // theta is a float advanced by repeated multiplication: its error grows with pos.
          EXPECT_NEAR(yh[i], xh[i] * std::cos(th) - xh[i + 64] * std::sin(th),
                      1e-4 * (1.0 + static_cast<double>(pos) / 256.0));
        } else {
          EXPECT_EQ(c[iu], 1.0f);
          EXPECT_LT(std::fabs(s[iu]), 1e-25f);
          ASSERT_EQ(std::memcmp(&yh[i], &xh[i], 4), 0) << "pos " << pos << " pair " << i;
          ASSERT_EQ(std::memcmp(&yh[i + 64], &xh[i + 64], 4), 0) << "pos " << pos << " pair " << i;
        }
      }
      for (int64_t i = n_rot; i < head_dim; ++i) ASSERT_EQ(std::memcmp(&yh[i], &xh[i], 4), 0);
    }
  }
}

}  // namespace
}  // namespace sniper
