// SPDX-License-Identifier: MIT
// Hand-computed cases for the activation quantizers (Q8_0, Q8_1, Q8_K). These decide how our
// activations round before every quantized matmul, so they must not drift from ggml's
// definitions: Q8_0/Q8_1 round half away from zero (roundf), Q8_K rounds half to even
// (nearest_int) with the scale -127/max keeping max's sign.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "quant/q8_0.h"
#include "quant/q8_1.h"
#include "quant/q8_k.h"
#include "quant/quant.h"
#include "quant/rounding.h"

namespace sniper {
namespace {

TEST(NearestInt, RoundsHalfToEven) {
  EXPECT_EQ(nearest_int(2.5f), 2);
  EXPECT_EQ(nearest_int(3.5f), 4);
  EXPECT_EQ(nearest_int(-2.5f), -2);
  EXPECT_EQ(nearest_int(-0.5f), 0);
  EXPECT_EQ(nearest_int(0.49999997f), 0);
  EXPECT_EQ(nearest_int(-126.6f), -127);
  EXPECT_EQ(nearest_int(4194303.0f), 4194303);
  EXPECT_EQ(nearest_int(-4194303.0f), -4194303);
}

TEST(Q8_0, HandComputedBlock) {
  // amax = 127 -> d = 1 (f16 0x3c00), id = 1, q = roundf(x): halves go away from zero.
  float x[32] = {127.0f, 2.5f, -2.5f, 3.5f, 0.49f, -0.5f, 1.5f};
  x[31] = -100.25f;
  BlockQ8_0 b;
  quantize_row_q8_0_ref(x, &b, 32);
  EXPECT_EQ(b.d, 0x3c00);
  const int expect[7] = {127, 3, -3, 4, 0, -1, 2};
  for (int j = 0; j < 7; ++j) EXPECT_EQ(b.qs[j], expect[j]) << j;
  for (int j = 7; j < 31; ++j) EXPECT_EQ(b.qs[j], 0) << j;
  EXPECT_EQ(b.qs[31], -100);
}

TEST(Q8_0, ScaleIsAmaxOver127RoundedToHalf) {
  // amax = 1: d = 1/127 = 0.0078740157..; in [2^-7, 2^-6) the f16 ulp is 2^-17, and
  // 0.0078740157 / 2^-17 = 1032.06 -> mantissa 1032 - 1024 = 8, biased exponent 8 -> 0x2008.
  float x[32] = {};
  x[5] = -1.0f;
  x[6] = 0.25f;
  BlockQ8_0 b;
  quantize_row_q8_0_ref(x, &b, 32);
  EXPECT_EQ(b.d, 0x2008);
  EXPECT_EQ(b.qs[5], -127);
  EXPECT_EQ(b.qs[6], 32);  // 0.25 * 127.00000x = 31.75 -> 32
}

TEST(Q8_0, ZeroBlock) {
  float x[64] = {};
  BlockQ8_0 b[2];
  std::memset(b, 0x5a, sizeof(b));
  quantize_row_q8_0_ref(x, b, 64);
  for (const BlockQ8_0& blk : b) {
    EXPECT_EQ(blk.d, 0);
    for (int8_t q : blk.qs) EXPECT_EQ(q, 0);
  }
}

TEST(Q8_0Act, RoundsHalfToEvenWithScale127OverMax) {
  // amax = 127 -> id = 127/127 = 1, so q = x rounded half to even (the weight quantizer's roundf
  // would send 2.5 to 3 and -0.5 to -1).
  float x[32] = {127.0f, 2.5f, -2.5f, 3.5f, -0.5f, 0.5f, 1.5f, -1.5f};
  BlockQ8_0 b;
  quantize_act_q8_0_ref(x, &b, 32);
  const int8_t want[8] = {127, 2, -2, 4, 0, 0, 2, -2};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(b.qs[j], want[j]) << j;
  EXPECT_EQ(b.d, fp32_to_fp16(1.0f));
  BlockQ8_1 c;
  quantize_act_q8_1_ref(x, &c, 32);
  for (int j = 0; j < 8; ++j) EXPECT_EQ(c.qs[j], want[j]) << j;
  EXPECT_EQ(c.s, fp32_to_fp16(127.0f + 2 - 2 + 4 + 0 + 0 + 2 - 2));
}

TEST(Q8_0Act, OverflowingScaleSaturatesLikeX86) {
  // max|x| denormal: 127/max overflows to inf, x * inf converts to INT32_MIN, packs saturate.
  float x[32] = {};
  x[0] = 2e-42f;
  x[1] = -1e-42f;
  BlockQ8_0 b;
  quantize_act_q8_0_ref(x, &b, 32);
  EXPECT_EQ(b.qs[0], -128);
  EXPECT_EQ(b.qs[1], -128);
  EXPECT_EQ(b.qs[2], -128);  // 0 * inf is NaN, which also converts to INT32_MIN
  EXPECT_EQ(b.d, 0);         // d = max / 127 underflows in f16
}

TEST(Q8_1, HandComputedBlockIncludingSum) {
  float x[32] = {127.0f, 2.5f, -2.5f, 3.5f, 0.49f, -0.5f, 1.5f};
  x[16] = -50.0f;
  BlockQ8_1 b;
  quantize_row_q8_1_ref(x, &b, 32);
  EXPECT_EQ(b.d, 0x3c00);
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[1], 3);
  EXPECT_EQ(b.qs[5], -1);
  EXPECT_EQ(b.qs[16], -50);
  // sum q = 127 + 3 - 3 + 4 + 0 - 1 + 2 - 50 = 82; s = f16(82 * 1) = 1.28125 * 2^6 -> 0x5520.
  EXPECT_EQ(b.s, 0x5520);
}

TEST(Q8_1, SumUsesUnroundedScale) {
  // s = f16(sum * d) with the f32 d = amax/127, not the f16-rounded d. With every x = 1.014
  // (q = 127 each, sum = 4064) the two choices give different halves.
  const float a = 1.014f;
  float x[32];
  for (float& v : x) v = a;
  BlockQ8_1 b;
  quantize_row_q8_1_ref(x, &b, 32);
  for (int8_t q : b.qs) EXPECT_EQ(q, 127);
  const float d32 = a / 127.0f;
  EXPECT_EQ(b.d, fp32_to_fp16(d32));
  EXPECT_EQ(b.s, fp32_to_fp16(4064.0f * d32));
  EXPECT_NE(b.s, fp32_to_fp16(4064.0f * fp16_to_fp32(b.d)));
}

TEST(Q8_K, NegativeMaxGivesPositiveScaleAndEvenRounding) {
  // max = -127 (first element of largest magnitude) -> iscale = -127/-127 = 1, d = 1.
  std::vector<float> x(256, 0.0f);
  x[0] = -127.0f;
  x[1] = 127.0f;  // same magnitude, later: does not replace max
  x[2] = 2.5f;
  x[3] = 3.5f;
  x[4] = -2.5f;
  x[5] = 0.5f;
  x[6] = 1.5f;
  x[17] = -7.0f;
  x[255] = 100.4f;
  BlockQ8_K b;
  quantize_row_q8_K_ref(x.data(), &b, 256);
  EXPECT_EQ(b.d, 1.0f);
  const int expect[7] = {-127, 127, 2, 4, -2, 0, 2};
  for (int j = 0; j < 7; ++j) EXPECT_EQ(b.qs[j], expect[j]) << j;
  EXPECT_EQ(b.qs[17], -7);
  EXPECT_EQ(b.qs[255], 100);
  EXPECT_EQ(b.bsums[0], -127 + 127 + 2 + 4 - 2 + 0 + 2);
  EXPECT_EQ(b.bsums[1], -7);
  EXPECT_EQ(b.bsums[15], 100);
  for (int g = 2; g < 15; ++g) EXPECT_EQ(b.bsums[g], 0) << g;
}

TEST(Q8_K, PositiveMaxFlipsSigns) {
  // max = +127 -> iscale = -1: quants are the negated inputs and d = -1.
  std::vector<float> x(256, 0.0f);
  x[0] = 127.0f;
  x[5] = -127.0f;
  x[9] = 2.5f;
  BlockQ8_K b;
  quantize_row_q8_K_ref(x.data(), &b, 256);
  EXPECT_EQ(b.d, -1.0f);
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[5], 127);
  EXPECT_EQ(b.qs[9], -2);
  std::vector<float> y(256);
  dequantize_row_q8_K_ref(&b, y.data(), 256);
  EXPECT_EQ(y[0], 127.0f);
  EXPECT_EQ(y[9], 2.0f);
}

TEST(Q8_K, FractionalScale) {
  // max = -2 -> iscale = 63.5 exactly, d = 1/63.5.
  std::vector<float> x(256, 0.0f);
  x[0] = -2.0f;
  x[1] = 1.0f;    // 63.5 -> 64 (even)
  x[2] = 0.25f;   // 15.875 -> 16
  x[3] = -0.75f;  // -47.625 -> -48
  BlockQ8_K b;
  quantize_row_q8_K_ref(x.data(), &b, 256);
  EXPECT_EQ(b.d, 1.0f / 63.5f);
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], 64);
  EXPECT_EQ(b.qs[2], 16);
  EXPECT_EQ(b.qs[3], -48);
  EXPECT_EQ(b.bsums[0], -127 + 64 + 16 - 48);
}

TEST(Q8_K, ZeroBlockIsAllZero) {
  std::vector<float> x(512, 0.0f);
  x[300] = 1.0f;  // second block non-zero
  BlockQ8_K b[2];
  std::memset(b, 0x5a, sizeof(b));
  quantize_row_q8_K_ref(x.data(), b, 512);
  EXPECT_EQ(b[0].d, 0.0f);
  for (int8_t q : b[0].qs) EXPECT_EQ(q, 0);
  for (int16_t s : b[0].bsums) EXPECT_EQ(s, 0);
  EXPECT_EQ(b[1].d, -1.0f / 127.0f);
  EXPECT_EQ(b[1].qs[300 - 256], -127);
}

TEST(ActivationTypes, GenericQuantizeMatchesTypedFunctions) {
  std::vector<float> x(512);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101) * 0.013f - 0.6f;
  std::vector<BlockQ8_0> a0(16), b0(16);
  quantize_row_q8_0_ref(x.data(), a0.data(), 512);
  quantize_row_ref(GgmlType::kQ8_0, x.data(), b0.data(), 512);
  EXPECT_EQ(std::memcmp(a0.data(), b0.data(), sizeof(BlockQ8_0) * 16), 0);
  std::vector<BlockQ8_1> a1(16), b1(16);
  quantize_row_q8_1_ref(x.data(), a1.data(), 512);
  quantize_row_ref(GgmlType::kQ8_1, x.data(), b1.data(), 512);
  EXPECT_EQ(std::memcmp(a1.data(), b1.data(), sizeof(BlockQ8_1) * 16), 0);
  std::vector<BlockQ8_K> ak(2), bk(2);
  quantize_row_q8_K_ref(x.data(), ak.data(), 512);
  quantize_row_ref(GgmlType::kQ8_K, x.data(), bk.data(), 512);
  EXPECT_EQ(std::memcmp(ak.data(), bk.data(), sizeof(BlockQ8_K) * 2), 0);
}

}  // namespace
}  // namespace sniper
