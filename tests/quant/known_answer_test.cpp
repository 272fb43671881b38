// SPDX-License-Identifier: MIT
// Known-answer decode tests: blocks with hand-set fields, checked against values worked out by
// hand from each format's formula (the arithmetic is in the comments), so a decoder cannot
// silently change its bit layout. Each test also checks that untouched elements decode to the
// value the formula gives for zero fields.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "quant/float.h"
#include "quant/iq4_nl.h"
#include "quant/iq4_xs.h"
#include "quant/q2_k.h"
#include "quant/q3_k.h"
#include "quant/q4_0.h"
#include "quant/q4_1.h"
#include "quant/q4_k.h"
#include "quant/q5_0.h"
#include "quant/q5_1.h"
#include "quant/q5_k.h"
#include "quant/q6_k.h"
#include "quant/q8_0.h"
#include "quant/q8_k.h"
#include "quant/quant.h"

namespace sniper {
namespace {

// f16 codes used below.
constexpr fp16_t kHalf0_125 = 0x3000;
constexpr fp16_t kHalf0_25 = 0x3400;
constexpr fp16_t kHalf0_5 = 0x3800;
constexpr fp16_t kHalf1 = 0x3c00;
constexpr fp16_t kHalf2 = 0x4000;
constexpr fp16_t kHalfMinus1 = 0xbc00;

template <typename Block>
Block zeroed() {
  Block b;
  std::memset(&b, 0, sizeof(b));
  return b;
}

// Decodes through the generic entry point too, and checks both agree.
template <typename Block>
std::vector<float> decode(GgmlType type, const Block& b, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  dequantize_row_ref(type, &b, y.data(), n);
  return y;
}

TEST(KnownAnswer, Q4_0) {
  auto b = zeroed<BlockQ4_0>();
  b.d = kHalf0_5;
  b.qs[0] = 0x3A;  // element 0: (0xA - 8) * 0.5 = 1; element 16: (3 - 8) * 0.5 = -2.5
  const auto y = decode(GgmlType::kQ4_0, b, 32);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[16], -2.5f);
  EXPECT_EQ(y[1], -4.0f);  // q = 0 -> (0 - 8) * 0.5
}

TEST(KnownAnswer, Q4_1) {
  auto b = zeroed<BlockQ4_1>();
  b.d = kHalf2;
  b.m = kHalf0_5;
  b.qs[5] = 0x3E;  // element 5: 14 * 2 + 0.5 = 28.5; element 21: 3 * 2 + 0.5 = 6.5
  const auto y = decode(GgmlType::kQ4_1, b, 32);
  EXPECT_EQ(y[5], 28.5f);
  EXPECT_EQ(y[21], 6.5f);
  EXPECT_EQ(y[0], 0.5f);
}

TEST(KnownAnswer, Q5_0) {
  auto b = zeroed<BlockQ5_0>();
  b.d = kHalf0_25;
  b.qs[3] = 0x5C;
  b.qh[0] = 0x08;  // bit 3: element 3 = (12 | 16) - 16 = 12 -> 3.0; element 19: 5 - 16 -> -2.75
  b.qh[3] = 0x80;  // bit 31: element 31 = (0 | 16) - 16 = 0
  const auto y = decode(GgmlType::kQ5_0, b, 32);
  EXPECT_EQ(y[3], 3.0f);
  EXPECT_EQ(y[19], -2.75f);
  EXPECT_EQ(y[31], 0.0f);
  EXPECT_EQ(y[0], -4.0f);  // (0 - 16) * 0.25
}

TEST(KnownAnswer, Q5_1) {
  auto b = zeroed<BlockQ5_1>();
  b.d = kHalf0_5;
  b.m = kHalfMinus1;
  b.qs[0] = 0xF1;
  b.qh[2] = 0x01;  // bit 16: element 16 = (15 | 16) = 31 -> 31 * 0.5 - 1 = 14.5
  const auto y = decode(GgmlType::kQ5_1, b, 32);
  EXPECT_EQ(y[0], -0.5f);  // 1 * 0.5 - 1
  EXPECT_EQ(y[16], 14.5f);
  EXPECT_EQ(y[1], -1.0f);
}

TEST(KnownAnswer, Q8_0) {
  auto b = zeroed<BlockQ8_0>();
  b.d = kHalf0_125;
  b.qs[7] = -100;
  b.qs[31] = 127;
  const auto y = decode(GgmlType::kQ8_0, b, 32);
  EXPECT_EQ(y[7], -12.5f);
  EXPECT_EQ(y[31], 15.875f);
  EXPECT_EQ(y[0], 0.0f);
}

TEST(KnownAnswer, Q8_K) {
  auto b = zeroed<BlockQ8_K>();
  b.d = 0.5f;
  b.qs[10] = -7;
  std::vector<float> y(256);
  dequantize_row_q8_K_ref(&b, y.data(), 256);
  EXPECT_EQ(y[10], -3.5f);
  EXPECT_EQ(y[11], 0.0f);
}

// Q2_K/Q3_K element e: half h = e / 128, r = e % 128, shift = 2 * (r / 32), group e / 16,
// byte qs[32h + r % 32].
TEST(KnownAnswer, Q2_K) {
  auto b = zeroed<BlockQ2_K>();
  b.d = kHalf0_5;
  b.dmin = kHalf0_25;
  b.scales[0] = 0x37;   // group 0: sc 7, m 3
  b.qs[0] = 0x02;       // element 0: q = 2 -> 0.5*7*2 - 0.25*3 = 6.25
  b.scales[12] = 0x5A;  // group 12: sc 10, m 5
  b.qs[40] = 0x30;      // element 200 (h 1, r 72: shift 4, byte 32+8): q = 3 -> 15 - 1.25 = 13.75
  const auto y = decode(GgmlType::kQ2_K, b, 256);
  EXPECT_EQ(y[0], 6.25f);
  EXPECT_EQ(y[200], 13.75f);
  EXPECT_EQ(y[1], -0.75f);  // group 0, q = 0: -dmin * m
  EXPECT_EQ(y[32], 0.0f);   // shares byte qs[0] (shift 2, q = 0) but is in group 2: sc = m = 0
}

TEST(KnownAnswer, Q3_K) {
  auto b = zeroed<BlockQ3_K>();
  b.d = kHalf0_5;
  // group 0 scale 40 = 0b10'1000: low nibble 8 in scales[0], top bits 2 in scales[8] bits 0-1.
  b.scales[0] = 0x08;
  b.scales[8] = 0x02;
  b.qs[0] = 0x01;  // element 0: low2 = 1, hmask[0] bit 0 clear -> q = 1 - 4 = -3
  // group 12 scale 10: low nibble 0xA in scales[4] high nibble, top bits 0.
  b.scales[4] = 0xA0;
  b.qs[40] = 0x20;    // element 200: low2 = 2 (shift 4)
  b.hmask[8] = 0x40;  // element 200 = 32*6 + 8: hmask[8] bit 6 -> high bit set, q = 2
  const auto y = decode(GgmlType::kQ3_K, b, 256);
  EXPECT_EQ(y[0], -12.0f);    // 0.5 * (40 - 32) * -3
  EXPECT_EQ(y[200], -22.0f);  // 0.5 * (10 - 32) * 2
  EXPECT_EQ(y[1], -16.0f);    // group 0, low2 0, no high bit: 0.5 * 8 * -4
  EXPECT_EQ(y[16], 64.0f);    // group 1 scale 0: 0.5 * -32 * -4
}

// Q4_K/Q5_K scales: group 0 sc 3 m 2; group 5 sc 37 = 0b10'0101, m 50 = 0b11'0010:
// scales[9] = (5) | (2 << 4), top bits: scales[1] |= 2 << 6, scales[5] |= 3 << 6.
void set_k4_scales(uint8_t* s) {
  s[0] = 3;
  s[4] = 2;
  s[9] = 0x25;
  s[1] = 0x80;
  s[5] = 0xC0;
}

TEST(KnownAnswer, Q4_K) {
  auto b = zeroed<BlockQ4_K>();
  b.d = kHalf1;
  b.dmin = kHalf0_5;
  set_k4_scales(b.scales);
  b.qs[0] = 0x07;   // element 0 (chunk 0, low nibble): 1*3*7 - 0.5*2 = 20
  b.qs[65] = 0x90;  // element 161 (chunk 2, high nibble of qs[64+1]): 1*37*9 - 0.5*50 = 308
  const auto y = decode(GgmlType::kQ4_K, b, 256);
  EXPECT_EQ(y[0], 20.0f);
  EXPECT_EQ(y[161], 308.0f);
  EXPECT_EQ(y[160], -25.0f);  // group 5, q 0
  EXPECT_EQ(y[32], 0.0f);     // group 1: scale 0 and min 0 (top bits live in bytes 1 and 5)
}

TEST(KnownAnswer, Q5_K) {
  auto b = zeroed<BlockQ5_K>();
  b.d = kHalf1;
  b.dmin = kHalf0_5;
  set_k4_scales(b.scales);
  b.qs[0] = 0x07;
  b.qh[0] = 0x01;  // element 0: 7 + 16 = 23 -> 3*23 - 1 = 68
  b.qs[65] = 0x90;
  b.qh[1] = 0x20;  // element 161: chunk 2, high half -> qh bit 5; 9 + 16 = 25 -> 37*25 - 25 = 900
  const auto y = decode(GgmlType::kQ5_K, b, 256);
  EXPECT_EQ(y[0], 68.0f);
  EXPECT_EQ(y[161], 900.0f);
  EXPECT_EQ(y[160], -25.0f);  // group 5, q = 0: -0.5 * 50
  EXPECT_EQ(y[33], 0.0f);     // group 1: scale 0, min 0
}

TEST(KnownAnswer, Q6_K) {
  auto b = zeroed<BlockQ6_K>();
  b.d = kHalf0_5;
  b.scales[0] = 3;
  b.ql[0] = 0x05;
  b.qh[0] = 0x02;  // element 0: (5 | 2 << 4) - 32 = 5 -> 0.5 * 3 * 5 = 7.5
  b.scales[14] = -7;
  b.ql[102] = 0x10;  // element 230: half 1, r 102, quarter 3, l 6: high nibble of ql[64+32+6]
  //                    and qh[32+6] bits 6-7 (= 0): q = 1 - 32 = -31 -> 0.5 * -7 * -31 = 108.5
  const auto y = decode(GgmlType::kQ6_K, b, 256);
  EXPECT_EQ(y[0], 7.5f);
  EXPECT_EQ(y[230], 108.5f);
  EXPECT_EQ(y[1], -48.0f);  // group 0, q = 0: 0.5 * 3 * -32
}

TEST(KnownAnswer, IQ4_NL) {
  auto b = zeroed<BlockIQ4_NL>();
  b.d = kHalf0_5;
  b.qs[2] = 0xF0;  // element 2: index 0 -> -127 * 0.5; element 18: index 15 -> 113 * 0.5
  const auto y = decode(GgmlType::kIQ4_NL, b, 32);
  EXPECT_EQ(y[2], -63.5f);
  EXPECT_EQ(y[18], 56.5f);
}

TEST(KnownAnswer, IQ4_XS) {
  auto b = zeroed<BlockIQ4_XS>();
  b.d = kHalf0_25;
  // Block 3 scale 45 = 0b10'1101: low nibble 13 in scales_l[1] high nibble, top 2 bits in
  // scales_h bits 6-7. dl = 0.25 * (45 - 32) = 3.25.
  b.scales_l[1] = 0xD0;
  b.scales_h = 0x80;
  b.qs[53] = 0x19;  // element 96+5: index 9 -> 13 * 3.25; element 96+16+5: index 1 -> -104 * 3.25
  const auto y = decode(GgmlType::kIQ4_XS, b, 256);
  EXPECT_EQ(y[101], 42.25f);
  EXPECT_EQ(y[117], -338.0f);
  EXPECT_EQ(y[0], 1016.0f);  // block 0: scale 0 -> dl = 0.25 * -32 = -8; index 0 -> -127
}

TEST(KnownAnswer, F16AndBF16) {
  const fp16_t h[3] = {0x3c00, 0xc000, 0x0001};
  float y[3];
  dequantize_row_ref(GgmlType::kF16, h, y, 3);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], 0x1p-24f);
  const bf16_t bh[2] = {0x3f80, 0xc0a0};
  dequantize_row_ref(GgmlType::kBF16, bh, y, 2);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -5.0f);
}

}  // namespace
}  // namespace sniper
