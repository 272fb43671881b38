// SPDX-License-Identifier: MIT
// The delta-net short convolution (kernels/ssm_conv.h): the direct formula of ARCHITECTURES.md
// (c_t = sum_k w[k] qkv_{t-3+k}, zero history, then silu) in double precision; a prefill gives
// the bits of token-by-token calls and of any split into chunks (the carried state); the state
// holds the last three input rows; every output element is written (NaN-filled outputs).
#include "kernels/ssm_conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/kernel_test_util.h"

namespace sniper {
namespace {

using test::bits;
using test::nan_f;

std::vector<float> normal_vec(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(SsmConv, MatchesFormulaFromZeroState) {
  for (int64_t channels : {1, 16, 37, 512}) {
    for (int64_t n_tokens : {1, 2, 3, 9}) {
      const int64_t stride = channels + 5;  // rows with padding: strides are honoured
      const auto x = normal_vec(static_cast<size_t>(n_tokens * stride), 1, 1.0f);
      const auto w = normal_vec(static_cast<size_t>(channels * 4), 2, 0.5f);
      std::vector<float> state(static_cast<size_t>(3 * channels), 0.0f);
      std::vector<float> out(static_cast<size_t>(n_tokens * stride), nan_f());
      ssm_conv_silu(x.data(), stride, n_tokens, channels, w.data(), state.data(), out.data(), stride);
      for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t c = 0; c < channels; ++c) {
          double sum = 0;
          for (int64_t k = 0; k < 4; ++k) {
            const int64_t s = t - 3 + k;
            if (s >= 0)
              sum += static_cast<double>(w[static_cast<size_t>(c * 4 + k)]) * x[static_cast<size_t>(s * stride + c)];
          }
          const double want = sum / (1.0 + std::exp(-sum));
          EXPECT_NEAR(out[static_cast<size_t>(t * stride + c)], want, 1e-5 * (1 + std::fabs(want)))
              << "channels=" << channels << " t=" << t << " c=" << c;
        }
        for (int64_t c = channels; c < stride; ++c) EXPECT_TRUE(std::isnan(out[static_cast<size_t>(t * stride + c)]));
      }
      // The state is the last three input rows (zeros before the sequence start).
      for (int64_t r = 0; r < 3; ++r) {
        const int64_t s = n_tokens - 3 + r;
        for (int64_t c = 0; c < channels; ++c) {
          const float want = s >= 0 ? x[static_cast<size_t>(s * stride + c)] : 0.0f;
          EXPECT_EQ(bits(state[static_cast<size_t>(r * channels + c)]), bits(want)) << "row " << r << " c=" << c;
        }
      }
    }
  }
}

TEST(SsmConv, ChunksAndStepsGiveTheBitsOfOnePrefill) {
  const int64_t channels = 48, n_tokens = 11;
  for (uint32_t seed : {3u, 4u, 5u}) {
    const auto x = normal_vec(static_cast<size_t>(n_tokens * channels), seed, 2.0f);
    const auto w = normal_vec(static_cast<size_t>(channels * 4), seed + 10, 0.5f);
    const auto state0 = normal_vec(static_cast<size_t>(3 * channels), seed + 20, 1.0f);
    std::vector<float> st = state0, out(x.size(), nan_f());
    ssm_conv_silu(x.data(), channels, n_tokens, channels, w.data(), st.data(), out.data(), channels);
    for (int64_t chunk : {1, 2, 4}) {
      std::vector<float> st2 = state0, out2(x.size(), nan_f());
      for (int64_t t0 = 0; t0 < n_tokens; t0 += chunk) {
        const int64_t n = t0 + chunk < n_tokens ? chunk : n_tokens - t0;
        ssm_conv_silu(x.data() + t0 * channels, channels, n, channels, w.data(), st2.data(),
                      out2.data() + t0 * channels, channels);
      }
      for (size_t i = 0; i < out.size(); ++i)
        ASSERT_EQ(bits(out[i]), bits(out2[i])) << "chunk " << chunk << " at " << i;
      for (size_t i = 0; i < st.size(); ++i)
        ASSERT_EQ(bits(st[i]), bits(st2[i])) << "chunk " << chunk << " state " << i;
    }
  }
}

}  // namespace
}  // namespace sniper
