// SPDX-License-Identifier: MIT
// Activations and gate forms (kernels/activations.h) against their double-precision formulas,
// the softplus threshold and l2-norm epsilon, the fused gates against their compositions bit
// for bit, the f16 GELU table exhaustively, and every tier's GELU / GEGLU against the scalar
// twins bit for bit (lengths around the 16-lane blocks, the +-10 cut-offs, NaN-filled outputs).
#include "kernels/activations.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "kernels/kernel_test_util.h"
#include "kernels/ops.h"

namespace sniper {
namespace {

using test::bits;
using test::host_has;
using test::kAllTiers;
using test::nan_f;

std::vector<float> normal_vec(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

double silu_d(double x) { return x / (1.0 + std::exp(-x)); }
double sigmoid_d(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double gelu_d(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * x * (1.0 + 0.044715 * x * x))); }

TEST(Activations, SiluRow) {
  for (size_t n : {1u, 15u, 16u, 17u, 100u}) {
    const auto x = normal_vec(n, 1, 4.0f);
    std::vector<float> y(n, nan_f());
    silu_row(x.data(), y.data(), static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], silu_d(x[i]), 1e-6 * (1 + std::fabs(y[i]))) << n << " " << i;
    // Equals ggml's swiglu with up = 1 (same blocks, same expf).
    const std::vector<float> ones(n, 1.0f);
    std::vector<float> s(n);
    silu_mul_ref(x.data(), ones.data(), s.data(), static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(bits(s[i]), bits(y[i]));
  }
}

TEST(Activations, L2NormAndItsEpsilon) {
  for (size_t n : {1u, 7u, 64u, 128u}) {
    auto x = normal_vec(n, 2, 1.0f);
    std::vector<float> y(n, nan_f());
    l2_norm(x.data(), y.data(), static_cast<int64_t>(n), 1e-6f);
    double ss = 0;
    for (float v : x) ss += static_cast<double>(v) * v;
    for (size_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], x[i] / std::sqrt(ss), 1e-6);
    // Norm below eps: divided by eps instead; the zero vector stays zero.
    for (auto& v : x) v *= 1e-9f;
    l2_norm(x.data(), y.data(), static_cast<int64_t>(n), 1e-6f);
    for (size_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], x[i] / 1e-6, 1e-6);
    std::vector<float> zero(n, 0.0f);
    l2_norm(zero.data(), zero.data(), static_cast<int64_t>(n), 1e-6f);
    for (float v : zero) EXPECT_EQ(v, 0.0f);
  }
}

TEST(Activations, SigmoidSoftplusAndTheDeltaNetGates) {
  for (float x : {-30.0f, -5.0f, -0.5f, 0.0f, 0.25f, 3.0f, 19.5f, 20.0f, 20.5f, 50.0f}) {
    EXPECT_NEAR(sigmoid(x), sigmoid_d(x), 1e-7);
    const double sp = x > 20.0f ? x : std::log1p(std::exp(static_cast<double>(x)));
    EXPECT_NEAR(softplus(x), sp, 2e-6 * (1 + std::fabs(sp))) << x;
  }
  EXPECT_EQ(softplus(20.5f), 20.5f);  // above the threshold: x itself
  EXPECT_EQ(softplus(20.0f), std::log(1.0f + std::exp(20.0f)));
  const int64_t n = 32;
  const auto b = normal_vec(n, 3, 2.0f), a = normal_vec(n, 4, 2.0f), dt = normal_vec(n, 5, 1.0f);
  std::vector<float> ssm_a(n), beta(n, nan_f()), g(n, nan_f());
  for (int64_t j = 0; j < n; ++j) ssm_a[static_cast<size_t>(j)] = -0.05f - 0.01f * static_cast<float>(j);
  delta_net_gates(b.data(), a.data(), dt.data(), ssm_a.data(), beta.data(), g.data(), n);
  for (size_t j = 0; j < static_cast<size_t>(n); ++j) {
    EXPECT_NEAR(beta[j], sigmoid_d(b[j]), 1e-7);
    const double z = static_cast<double>(a[j]) + dt[j];
    EXPECT_NEAR(g[j], std::log1p(std::exp(z)) * ssm_a[j], 1e-6);
    EXPECT_EQ(bits(g[j]), bits(softplus(a[j] + dt[j]) * ssm_a[j]));
  }
}

TEST(Activations, GatedRmsNormIsRmsNormTimesSilu) {
  for (int64_t n : {16, 64, 128, 37}) {
    const auto x = normal_vec(static_cast<size_t>(n), 6, 1.0f), w = normal_vec(static_cast<size_t>(n), 7, 1.0f),
               z = normal_vec(static_cast<size_t>(n), 8, 3.0f);
    std::vector<float> out(static_cast<size_t>(n), nan_f()), norm(static_cast<size_t>(n)), silu(static_cast<size_t>(n));
    gated_rms_norm(x.data(), w.data(), z.data(), out.data(), n, 1e-6f);
    rms_norm(x.data(), w.data(), norm.data(), n, 1e-6f);
    silu_row(z.data(), silu.data(), n);
    double ss = 0;
    for (float v : x) ss += static_cast<double>(v) * v;
    const double s = 1.0 / std::sqrt(ss / static_cast<double>(n) + 1e-6);
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      EXPECT_EQ(bits(out[i]), bits(norm[i] * silu[i])) << n << " " << i;
      EXPECT_NEAR(out[i], x[i] * s * w[i] * silu_d(z[i]), 1e-5 * (1 + std::fabs(out[i])));
    }
  }
}

TEST(Activations, SigmoidGateAndSoftcap) {
  const int64_t n = 50;
  const auto gate = normal_vec(n, 9, 3.0f), x0 = normal_vec(n, 10, 20.0f);
  auto x = x0;
  sigmoid_gate(gate.data(), x.data(), n);
  for (size_t i = 0; i < static_cast<size_t>(n); ++i)
    EXPECT_NEAR(x[i], x0[i] * sigmoid_d(gate[i]), 1e-5 * (1 + std::fabs(x[i])));
  x = x0;
  softcap(x.data(), n, 30.0f);
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    EXPECT_NEAR(x[i], 30.0 * std::tanh(x0[i] / 30.0), 1e-5 * (1 + std::fabs(x[i])));
    EXPECT_EQ(bits(x[i]), bits(std::tanh(x0[i] * (1.0f / 30.0f)) * 30.0f));  // ggml_scale, tanh, ggml_scale
    EXPECT_LT(std::fabs(x[i]), 30.0f);
  }
}

// Every f16 value's table entry is f16(gelu(x)) up to the rounding of the f32 formula: within one
// f16 ulp of the double-precision GELU plus the f32 cancellation in 1 + tanh(.) near -1
// (a few f32 ulps of 0.5 |x|).
TEST(Activations, GeluTableExhaustive) {
  for (uint32_t h = 0; h < (1u << 16); ++h) {
    const float x = fp16_to_fp32(static_cast<fp16_t>(h));
    const float t = gelu_table_value(static_cast<uint16_t>(h));
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(t)) << h;
      continue;
    }
    const double want = gelu_d(x);
    if (std::isinf(x) || std::fabs(want) > 65504.0) continue;  // beyond f16: the row functions never look these up
    const float wr = round_fp16(static_cast<float>(want));
    const double ulp = std::max(std::fabs(static_cast<double>(wr)) * std::ldexp(1.0, -10), std::ldexp(1.0, -24));
    ASSERT_LE(std::fabs(t - want), ulp + std::fabs(x) * std::ldexp(1.0, -22))
        << "h=" << h << " x=" << x << " table " << t << " want " << want;
  }
}

TEST(Activations, GeluMatchesTanhFormulaAndCutoffs) {
  const float xs[] = {-12.0f, -10.0f, -9.999f, -3.0f, -0.1f, 0.0f, 0.3f, 1.0f, 4.5f, 9.99f, 10.0f, 25.0f};
  for (float x : xs) {
    float y;
    gelu(&x, &y, 1);
    if (x <= -10.0f) {
      EXPECT_EQ(bits(y), bits(0.0f));
    } else if (x >= 10.0f) {
      EXPECT_EQ(y, x);
    } else {
      EXPECT_NEAR(y, gelu_d(x), 2e-3 * (1 + std::fabs(y))) << x;  // the input and the result go through f16
    }
  }
}

TEST(Activations, EveryTierGeluMatchesRefBitwise) {
  uint32_t seed = 50;
  for (IsaTier tier : kAllTiers) {
    if (!host_has(tier)) continue;
    const GeluOps& ops = find_gelu_ops(tier);
    for (size_t n : {1u, 15u, 16u, 17u, 33u, 100u, 1000u}) {
      for (float scale : {0.01f, 1.0f, 4.0f, 15.0f}) {
        auto x = normal_vec(n, ++seed, scale);
        const auto up = normal_vec(n, ++seed, 1.0f);
        if (n > 8) {  // the cut-offs and infinities, wherever they land in a block
          x[1] = -10.0f;
          x[2] = 10.0f;
          x[3] = INFINITY;
          x[4] = -INFINITY;
          x[5] = 65520.0f;  // rounds to f16 infinity
          x[6] = -9.9999f;
        }
        std::vector<float> y(n, nan_f()), want(n, nan_f()), o(n, nan_f()), o_want(n, nan_f());
        ops.gelu(x.data(), y.data(), static_cast<int64_t>(n));
        gelu_ref(x.data(), want.data(), static_cast<int64_t>(n));
        ops.geglu(x.data(), up.data(), o.data(), static_cast<int64_t>(n));
        geglu_ref(x.data(), up.data(), o_want.data(), static_cast<int64_t>(n));
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(bits(y[i]), bits(want[i])) << isa_tier_name(tier) << " gelu n=" << n << " i=" << i << " x=" << x[i];
          ASSERT_EQ(bits(o[i]), bits(o_want[i])) << isa_tier_name(tier) << " geglu n=" << n << " i=" << i;
          ASSERT_FALSE(std::isnan(want[i])) << i;
          if (x[i] > -10.0f) {
            ASSERT_EQ(bits(o_want[i]), bits(want[i] * up[i])) << i;  // geglu = gelu * up
          }
        }
      }
    }
  }
}

// GELU-quick: the table against x * sigmoid(1.702 x) over every finite f16 value, and every tier
// against the scalar twins bit for bit (no cut-offs: infinities go through the table).
TEST(Activations, GeluQuickTableAndEveryTier) {
  for (uint32_t h = 0; h < (1u << 16); ++h) {
    const float x = fp16_to_fp32(static_cast<fp16_t>(h));
    if (!std::isfinite(x) || std::fabs(x) > 60000.0f) continue;
    const double want = x * sigmoid_d(1.702 * x);
    ASSERT_NEAR(gelu_quick_table_value(static_cast<uint16_t>(h)), want, 2e-3 * (1 + std::fabs(want))) << x;
  }
  uint32_t seed = 90;
  for (IsaTier tier : kAllTiers) {
    if (!host_has(tier)) continue;
    const GeluOps& ops = find_gelu_ops(tier);
    for (size_t n : {1u, 7u, 8u, 15u, 16u, 17u, 33u, 1000u}) {
      auto x = normal_vec(n, ++seed, 6.0f);
      const auto up = normal_vec(n, ++seed, 1.0f);
      if (n > 8) {
        x[1] = INFINITY;
        x[2] = -INFINITY;
        x[3] = 65520.0f;
      }
      std::vector<float> y(n, nan_f()), want(n, nan_f()), o(n, nan_f()), o_want(n, nan_f());
      ops.gelu_quick(x.data(), y.data(), static_cast<int64_t>(n));
      gelu_quick_ref(x.data(), want.data(), static_cast<int64_t>(n));
      ops.geglu_quick(x.data(), up.data(), o.data(), static_cast<int64_t>(n));
      geglu_quick_ref(x.data(), up.data(), o_want.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(bits(y[i]), bits(want[i])) << isa_tier_name(tier) << " n=" << n << " i=" << i;
        ASSERT_EQ(bits(o[i]), bits(o_want[i])) << isa_tier_name(tier) << " n=" << n << " i=" << i;
        ASSERT_EQ(bits(o_want[i]), bits(want[i] * up[i])) << i;
      }
    }
  }
}

}  // namespace
}  // namespace sniper
