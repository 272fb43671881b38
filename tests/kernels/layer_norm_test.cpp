// SPDX-License-Identifier: MIT
// LayerNorm (kernels/layer_norm.h): the scalar twin against a double-precision formula, and every
// tier against the scalar twin bit for bit (lengths around the 16-lane variance blocks and the
// 8-lane halves, with and without weight and bias, well- and ill-conditioned rows, NaN-filled
// outputs, in place).
#include "kernels/layer_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/kernel_test_util.h"

namespace sniper {
namespace {

using test::bits;
using test::Cond;
using test::host_has;
using test::kAllTiers;
using test::nan_f;
using test::random_floats;

TEST(LayerNorm, RefMatchesTheFormula) {
  for (int64_t n : {1, 7, 16, 33, 64, 1152}) {
    const auto x = random_floats(n, 3, Cond::kWell);
    const auto w = random_floats(n, 4, Cond::kWell);
    const auto b = random_floats(n, 5, Cond::kWell);
    std::vector<float> y(static_cast<size_t>(n), nan_f());
    layer_norm_ref(x.data(), w.data(), b.data(), y.data(), n, 1e-6f);
    double mean = 0, var = 0;
    for (float v : x) mean += v;
    mean /= static_cast<double>(n);
    for (float v : x) var += (v - mean) * (v - mean);
    var /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) {
      const double want = (x[static_cast<size_t>(i)] - mean) / std::sqrt(var + 1e-6) * w[static_cast<size_t>(i)] +
                          b[static_cast<size_t>(i)];
      EXPECT_NEAR(y[static_cast<size_t>(i)], want, 1e-4 * (1 + std::fabs(want))) << n << " " << i;
    }
  }
}

TEST(LayerNorm, EveryTierMatchesTheRefBitForBit) {
  for (Cond cond : {Cond::kWell, Cond::kIll}) {
    for (int64_t n = 1; n <= 80; ++n) {
      for (int variant = 0; variant < 3; ++variant) {
        const auto x = random_floats(n, static_cast<uint32_t>(n), cond);
        const auto w = random_floats(n, static_cast<uint32_t>(n) + 100, Cond::kWell);
        const auto b = random_floats(n, static_cast<uint32_t>(n) + 200, Cond::kWell);
        const float* wp = variant >= 1 ? w.data() : nullptr;
        const float* bp = variant >= 2 ? b.data() : nullptr;
        std::vector<float> want(static_cast<size_t>(n), nan_f());
        layer_norm_ref(x.data(), wp, bp, want.data(), n, 1e-5f);
        for (IsaTier tier : kAllTiers) {
          if (!host_has(tier)) continue;
          std::vector<float> got(static_cast<size_t>(n), nan_f());
          find_layer_norm(tier)(x.data(), wp, bp, got.data(), n, 1e-5f);
          std::vector<float> inplace = x;
          find_layer_norm(tier)(inplace.data(), wp, bp, inplace.data(), n, 1e-5f);
          for (int64_t i = 0; i < n; ++i) {
            ASSERT_EQ(bits(got[static_cast<size_t>(i)]), bits(want[static_cast<size_t>(i)]))
                << isa_tier_name(tier) << " n " << n << " variant " << variant << " i " << i;
            ASSERT_EQ(bits(inplace[static_cast<size_t>(i)]), bits(want[static_cast<size_t>(i)]));
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace sniper
