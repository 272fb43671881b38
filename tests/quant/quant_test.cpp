// SPDX-License-Identifier: MIT
// Property tests of every reference codec through the type-generic API (quant.h): round-trip
// RMSE and quantized-dot error bounds per type on N(0,1) data (several seeds and lengths,
// including odd block counts), agreement of vec_dot with the dequantized operands,
// determinism, all-zero blocks, and blocks with a huge dynamic range.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gguf/format.h"
#include "quant/quant.h"
#include "quant/quant_test_util.h"

namespace sniper {
namespace {

struct TypeBounds {
  GgmlType type;
  double max_rel_rmse;  // round trip of N(0,1) data, per row
  double max_dot_err;   // |vec_dot - exact dot| / (||x|| * ||y||)
};

// Bounds set from measurement (worst case over the seeds and lengths below, plus ~15%).
// Measured worst rel_rmse / dot_err: f16 2.3e-4/8.8e-5, bf16 2.2e-3/5.1e-4, q4_0 .097/.028,
// q4_1 .089/.015, q5_0 .048/.012, q5_1 .038/.006, q8_0 .0055/.0013, q2_K .31/.027,
// q3_K .16/.022, q4_K .079/.0047, q5_K .038/.0028, q6_K .021/.0012, iq4_nl .085/.021,
// iq4_xs .079/.0099. (For N(0,1) data the optimal 2/3/4-bit scalar quantizers have rel RMSE
// .34/.19/.097, so these are the expected sizes.)
constexpr TypeBounds kBounds[] = {
    {GgmlType::kF32, 0.0, 1e-6},      {GgmlType::kF16, 2.7e-4, 1.1e-4},  {GgmlType::kBF16, 2.6e-3, 6.0e-4},
    {GgmlType::kQ4_0, 0.11, 0.033},   {GgmlType::kQ4_1, 0.10, 0.018},    {GgmlType::kQ5_0, 0.055, 0.014},
    {GgmlType::kQ5_1, 0.044, 0.007},  {GgmlType::kQ8_0, 0.0064, 0.0015}, {GgmlType::kQ2_K, 0.36, 0.031},
    {GgmlType::kQ3_K, 0.185, 0.025},  {GgmlType::kQ4_K, 0.091, 0.0055},  {GgmlType::kQ5_K, 0.043, 0.0033},
    {GgmlType::kQ6_K, 0.024, 0.0015}, {GgmlType::kIQ4_NL, 0.098, 0.025}, {GgmlType::kIQ4_XS, 0.091, 0.0115},
};

std::vector<uint8_t> quantize(GgmlType type, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(row_bytes(type, n));
  quantize_row_ref(type, x.data(), q.data(), n);
  return q;
}

std::vector<float> dequantize(GgmlType type, const std::vector<uint8_t>& q, size_t n) {
  std::vector<float> y(n);
  dequantize_row_ref(type, q.data(), y.data(), static_cast<int64_t>(n));
  return y;
}

// Lengths: one block, an odd number of blocks, and a long row.
std::vector<int64_t> test_lengths(GgmlType type) {
  const int64_t bs = std::max<int64_t>(get_type_info(type).block_size, 32);
  return {bs, 3 * bs, 4096};
}

TEST(QuantTable, SupportedWeightTypesAndActivationPairing) {
  const std::pair<GgmlType, GgmlType> expected[] = {
      {GgmlType::kF32, GgmlType::kF32},     {GgmlType::kF16, GgmlType::kF16},   {GgmlType::kBF16, GgmlType::kBF16},
      {GgmlType::kQ4_0, GgmlType::kQ8_0},   {GgmlType::kQ5_0, GgmlType::kQ8_0}, {GgmlType::kQ8_0, GgmlType::kQ8_0},
      {GgmlType::kIQ4_NL, GgmlType::kQ8_0}, {GgmlType::kQ4_1, GgmlType::kQ8_1}, {GgmlType::kQ5_1, GgmlType::kQ8_1},
      {GgmlType::kQ2_K, GgmlType::kQ8_K},   {GgmlType::kQ3_K, GgmlType::kQ8_K}, {GgmlType::kQ4_K, GgmlType::kQ8_K},
      {GgmlType::kQ5_K, GgmlType::kQ8_K},   {GgmlType::kQ6_K, GgmlType::kQ8_K}, {GgmlType::kIQ4_XS, GgmlType::kQ8_K},
  };
  for (const auto& [w, a] : expected) {
    EXPECT_TRUE(is_supported_weight_type(w)) << get_type_info(w).name;
    EXPECT_EQ(vec_dot_type(w), a) << get_type_info(w).name;
  }
  for (GgmlType t : {GgmlType::kQ8_1, GgmlType::kQ8_K, GgmlType::kI8, GgmlType::kI32, GgmlType::kF64}) {
    EXPECT_FALSE(is_supported_weight_type(t)) << get_type_info(t).name;
  }
  EXPECT_FALSE(is_supported_weight_type(static_cast<GgmlType>(4)));  // removed Q4_2
}

TEST(QuantRoundTrip, RelativeRmseAndDotErrorWithinBounds) {
  for (const TypeBounds& tb : kBounds) {
    const char* name = get_type_info(tb.type).name;
    const GgmlType act = vec_dot_type(tb.type);
    double worst_rmse = 0;
    double worst_dot = 0;
    double worst_consistency = 0;
    for (uint32_t seed : {1u, 2u, 3u}) {
      for (int64_t n : test_lengths(tb.type)) {
        const auto un = static_cast<size_t>(n);
        const std::vector<float> x = testing::random_normal(un, seed * 1000 + 17);
        const std::vector<float> y = testing::random_normal(un, seed * 1000 + 18);
        const std::vector<uint8_t> qx = quantize(tb.type, x);
        const std::vector<float> dx = dequantize(tb.type, qx, un);
        const double rmse = testing::rel_rmse(dx.data(), x.data(), un);
        worst_rmse = std::max(worst_rmse, rmse);
        EXPECT_LE(rmse, tb.max_rel_rmse) << name << " seed " << seed << " n " << n;

        const std::vector<uint8_t> qy = quantize(act, y);
        const std::vector<float> dy = dequantize(act, qy, un);
        const float dot = vec_dot_ref(tb.type, n, qx.data(), qy.data());
        const double exact = testing::dot_f64(x.data(), y.data(), un);
        const double dot_err =
            std::fabs(dot - exact) / (testing::norm_f64(x.data(), un) * testing::norm_f64(y.data(), un));
        worst_dot = std::max(worst_dot, dot_err);
        EXPECT_LE(dot_err, tb.max_dot_err) << name << " seed " << seed << " n " << n;

        // vec_dot must equal the dot of the decoded operands up to float accumulation error:
        // this pins the kernel's block layout to the decoder's. With Q8_1 activations the min
        // term uses the cached s = f16(d * sum q) instead of sum(f16(d) * q): two f16
        // roundings, so allow 2^-10 * |m| * |sum of the block's activations| per block
        // (|m| <= the block's largest decoded magnitude).
        double abs_sum = 0;
        for (size_t i = 0; i < un; ++i) abs_sum += std::fabs(static_cast<double>(dx[i]) * dy[i]);
        double s_slack = 0;
        if (act == GgmlType::kQ8_1) {
          for (size_t b = 0; b < un; b += 32) {
            double max_w = 0;
            double sum_a = 0;
            for (size_t j = b; j < b + 32; ++j) {
              max_w = std::max(max_w, std::fabs(static_cast<double>(dx[j])));
              sum_a += dy[j];
            }
            s_slack += max_w * std::fabs(sum_a) * 0x1p-10;
          }
        }
        const double decoded = testing::dot_f64(dx.data(), dy.data(), un);
        const double consistency = std::fabs(dot - decoded) / (5e-7 * abs_sum + s_slack + 1e-30);
        worst_consistency = std::max(worst_consistency, consistency);
        EXPECT_LE(consistency, 1.0) << name << " seed " << seed << " n " << n;
      }
    }
    std::printf("%-7s worst rel_rmse %.4g  dot_err %.4g  vec_dot vs decoded %.3g of bound\n", name, worst_rmse,
                worst_dot, worst_consistency);
  }
}

TEST(QuantRoundTrip, Deterministic) {
  const std::vector<float> x = testing::random_normal(1024, 99);
  for (const TypeBounds& tb : kBounds) {
    EXPECT_EQ(quantize(tb.type, x), quantize(tb.type, x)) << get_type_info(tb.type).name;
  }
}

TEST(QuantRoundTrip, AllZeroBlocksDecodeToZero) {
  const std::vector<float> x(512, 0.0f);
  const std::vector<float> y = testing::random_normal(512, 5);
  for (const TypeBounds& tb : kBounds) {
    const char* name = get_type_info(tb.type).name;
    const std::vector<uint8_t> q = quantize(tb.type, x);
    const std::vector<float> d = dequantize(tb.type, q, x.size());
    for (size_t i = 0; i < d.size(); ++i) ASSERT_EQ(d[i], 0.0f) << name << " at " << i;
    const std::vector<uint8_t> qy = quantize(vec_dot_type(tb.type), y);
    EXPECT_EQ(vec_dot_ref(tb.type, 512, q.data(), qy.data()), 0.0f) << name;
    // Zero activations against non-zero weights also give exactly 0.
    const std::vector<uint8_t> qa = quantize(vec_dot_type(tb.type), x);
    const std::vector<uint8_t> qw = quantize(tb.type, y);
    EXPECT_EQ(vec_dot_ref(tb.type, 512, qw.data(), qa.data()), 0.0f) << name;
  }
}

// One element of magnitude 1000 among values ~1e-6, blocks at scales from 1e-12 to 1e3, and
// exact ties: everything must decode to finite values and the large elements must survive.
TEST(QuantRoundTrip, HugeDynamicRangeStaysFinite) {
  std::vector<float> x = testing::random_normal(2048, 123, 1e-6f);
  x[3] = 1000.0f;
  x[700] = -1000.0f;
  const float block_scales[8] = {1e-12f, 1e-8f, 1e-4f, 1e-2f, 1.0f, 10.0f, 1e3f, 1e-30f};
  for (size_t i = 1024; i < 2048; ++i) x[i] *= 1e6f * block_scales[(i - 1024) / 128];
  for (size_t i = 1900; i < 1940; ++i) x[i] = 0.5f;  // a run of identical values
  for (const TypeBounds& tb : kBounds) {
    const char* name = get_type_info(tb.type).name;
    const std::vector<uint8_t> q = quantize(tb.type, x);
    const std::vector<float> d = dequantize(tb.type, q, x.size());
    for (size_t i = 0; i < d.size(); ++i) ASSERT_TRUE(std::isfinite(d[i])) << name << " at " << i;
    EXPECT_NEAR(d[3], 1000.0f, 1000.0f * 0.1f) << name;
    EXPECT_NEAR(d[700], -1000.0f, 1000.0f * 0.1f) << name;
    const std::vector<float> y = testing::random_normal(2048, 321);
    const std::vector<uint8_t> qy = quantize(vec_dot_type(tb.type), y);
    EXPECT_TRUE(std::isfinite(vec_dot_ref(tb.type, 2048, q.data(), qy.data()))) << name;
  }
}

}  // namespace
}  // namespace sniper
