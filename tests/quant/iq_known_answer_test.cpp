// SPDX-License-Identifier: MIT
// Known-answer decode tests for the i-quant and ternary formats: blocks with hand-set fields,
// decoded values worked out by hand from ../shared/models/iq/FORMATS.md section 4 (the grid
// entries used are quoted in hex from grids.json), so a decoder cannot silently change its bit
// layout. Also: the dot products against q8_K agree with the decoded values, and random bytes
// (with a finite scale) always decode to finite values (malformed blocks cannot index out of
// the tables: the indices are masked by construction).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/block_scale.h"
#include "quant/iq1.h"
#include "quant/iq2.h"
#include "quant/iq3.h"
#include "quant/q8_k.h"
#include "quant/quant.h"
#include "quant/tq.h"

namespace sniper {
namespace {

constexpr fp16_t kHalf0_25 = 0x3400;
constexpr fp16_t kHalf0_5 = 0x3800;
constexpr fp16_t kHalf1 = 0x3c00;
constexpr fp16_t kHalf2 = 0x4000;

template <typename Block>
Block zeroed() {
  Block b;
  std::memset(&b, 0, sizeof(b));
  return b;
}

template <typename Block>
std::vector<float> decode(GgmlType type, const Block& b) {
  std::vector<float> y(256);
  dequantize_row_ref(type, &b, y.data(), 256);
  return y;
}

TEST(IqKnownAnswer, IQ2_XXS) {
  auto b = zeroed<BlockIQ2_XXS>();
  b.d = kHalf1;
  auto* qs = reinterpret_cast<uint8_t*>(b.qs);
  qs[0] = 1;                           // group 0: iq2xxs_grid[1] = 0x080808080808082b -> 43, 8, 8, ..., 8
  const uint32_t w = 1u | (3u << 28);  // group 0 sign index 1 -> ksigns 0x81 (j = 0, 7); scale 3
  std::memcpy(qs + 4, &w, 4);
  const auto y = decode(GgmlType::kIQ2_XXS, b);
  // db = 1 * (0.5 + 3) * 0.25 = 0.875
  EXPECT_EQ(y[0], -37.625f);  // -0.875 * 43
  EXPECT_EQ(y[1], 7.0f);      // 0.875 * 8
  EXPECT_EQ(y[7], -7.0f);
  EXPECT_EQ(y[8], 7.0f);   // group 1: grid 0 (all 8), sign index 0
  EXPECT_EQ(y[32], 1.0f);  // sub-block 1: c = 0 -> 0.125 * 8
}

TEST(IqKnownAnswer, IQ2_XS) {
  auto b = zeroed<BlockIQ2_XS>();
  b.d = kHalf2;
  b.qs[5] = static_cast<uint16_t>(511 | (3 << 9));  // grid 511 = all 43; ksigns[3] = 0x03
  b.scales[1] = 0x52;                               // sub-block 1: groups 0, 1 scale 2; groups 2, 3 scale 5
  const auto y = decode(GgmlType::kIQ2_XS, b);
  EXPECT_EQ(y[40], -53.75f);  // 2 * 2.5 * 0.25 * 43, negated (bit 0)
  EXPECT_EQ(y[41], -53.75f);  // bit 1
  EXPECT_EQ(y[42], 53.75f);
  EXPECT_EQ(y[48], 22.0f);  // group 6: scale 5 -> 2 * 5.5 * 0.25 * 8
  EXPECT_EQ(y[0], 2.0f);    // 2 * 0.5 * 0.25 * 8
}

TEST(IqKnownAnswer, IQ2_S) {
  auto b = zeroed<BlockIQ2_S>();
  b.d = kHalf0_5;
  b.qs[9] = 0xff;
  b.qh[2] = 0x0c | 0x01;  // group 9 (l = 1): high bits 3 -> index 1023; group 8 (l = 0): 1 -> 256
  b.qs[32 + 9] = 0x80;    // group 9 sign byte: element 7 negated
  b.scales[2] = 0x0f;     // sub-block 2, groups 0, 1: scale 15 -> db = 0.5 * 15.5 * 0.25 = 1.9375
  const auto y = decode(GgmlType::kIQ2_S, b);
  EXPECT_EQ(y[72], 83.3125f);  // grid 1023 = all 43
  EXPECT_EQ(y[79], -83.3125f);
  // grid 256 = 0x0819081919191919: bytes 25 25 25 25 25 8 25 8
  EXPECT_EQ(y[64], 48.4375f);
  EXPECT_EQ(y[69], 15.5f);
  EXPECT_EQ(y[71], 15.5f);
  EXPECT_EQ(y[80], 0.5f);  // sub-block 2, group 2: high nibble 0 -> 0.5 * 0.5 * 0.25 * 8
}

TEST(IqKnownAnswer, IQ3_XXS) {
  auto b = zeroed<BlockIQ3_XXS>();
  b.d = kHalf1;
  b.qs[0] = 255;                       // iq3xxs_grid[255] = 0x3e341c04 -> 4, 28, 52, 62
  b.qs[1] = 1;                         // iq3xxs_grid[1] = 0x04040414 -> 20, 4, 4, 4
  const uint32_t w = 1u | (2u << 28);  // sign index 1 -> 0x81; scale 2 -> db = 2.5 * 0.5 = 1.25
  std::memcpy(b.qs + 64, &w, 4);
  const auto y = decode(GgmlType::kIQ3_XXS, b);
  EXPECT_EQ(y[0], -5.0f);
  EXPECT_EQ(y[1], 35.0f);
  EXPECT_EQ(y[2], 65.0f);
  EXPECT_EQ(y[3], 77.5f);
  EXPECT_EQ(y[4], 25.0f);
  EXPECT_EQ(y[7], -5.0f);
  EXPECT_EQ(y[32], 1.0f);  // sub-block 1: scale 0 -> db = 0.5 * 0.5 = 0.25; iq3xxs_grid[0] = 0x04040404 -> 4
}

TEST(IqKnownAnswer, IQ3_S) {
  auto b = zeroed<BlockIQ3_S>();
  b.d = kHalf0_5;
  b.qs[8] = 1;
  b.qh[1] = 0x01;      // sub-block 1, group 0, first half: index 256 + 1 = 257
  b.signs[4] = 0x02;   // element 1 of group 4 negated
  b.scales[0] = 0x30;  // sub-block 0 scale 0, sub-block 1 scale 3 -> db = 0.5 * 7 = 3.5
  const auto y = decode(GgmlType::kIQ3_S, b);
  // iq3s_grid[257] = 0x05090705 -> 5, 7, 9, 5; iq3s_grid[0] = 0x01010101
  EXPECT_EQ(y[32], 17.5f);
  EXPECT_EQ(y[33], -24.5f);
  EXPECT_EQ(y[34], 31.5f);
  EXPECT_EQ(y[35], 17.5f);
  EXPECT_EQ(y[36], 3.5f);
  EXPECT_EQ(y[0], 0.5f);  // sub-block 0: db = 0.5 * 1, grid byte 1
}

TEST(IqKnownAnswer, IQ1_S) {
  auto b = zeroed<BlockIQ1_S>();
  b.d = kHalf0_25;
  b.qh[0] = 0x8000 | (2 << 12) | 4;  // delta -1/8, scale 2 -> dl = 0.25 * 5, group 0 index 1024
  const auto y = decode(GgmlType::kIQ1_S, b);
  // iq1s_grid[1024] = 0x0000000000ff0100 -> 0, 1, -1, 0, ...; iq1s_grid[0] = all -1
  EXPECT_EQ(y[0], -0.15625f);   // 1.25 * (0 - 0.125)
  EXPECT_EQ(y[1], 1.09375f);    // 1.25 * 0.875
  EXPECT_EQ(y[2], -1.40625f);   // 1.25 * -1.125
  EXPECT_EQ(y[8], -1.40625f);   // group 1: index 0
  EXPECT_EQ(y[32], -0.21875f);  // sub-block 1: 0.25 * (-1 + 0.125)
}

TEST(IqKnownAnswer, IQ1_M) {
  auto b = zeroed<BlockIQ1_M>();
  // d = 1.0 = 0x3c00: nibbles 0, 0, 0xc, 0x3 in the tops of scale words 0..3.
  uint16_t sc[4] = {static_cast<uint16_t>(1 | (2 << 3) | (3 << 6)), 0, 0xc000, 0x3000};
  std::memcpy(b.scales, sc, 8);
  b.qh[0] = 0x08 | 0x04;  // group 0: index bits 4 -> 1024, delta -1/8; group 1: index 0, +1/8
  EXPECT_EQ(iq1_m_scale_bits(b), kHalf1);
  const auto y = decode(GgmlType::kIQ1_M, b);
  EXPECT_EQ(y[0], -0.375f);  // (2*1+1) * (0 - 0.125)
  EXPECT_EQ(y[1], 2.625f);
  EXPECT_EQ(y[2], -3.375f);
  EXPECT_EQ(y[8], -2.625f);   // 3 * (-1 + 0.125)
  EXPECT_EQ(y[16], -4.375f);  // group 2: scale 2 -> 5 * -0.875
  EXPECT_EQ(y[32], -6.125f);  // sub-block 1, scale 3 -> 7 * -0.875
}

TEST(IqKnownAnswer, TQ1_0) {
  auto b = zeroed<BlockTQ1_0>();
  b.d = kHalf2;
  // trits (2, 0, 1, 2, 1) = 178 in base 3 (first trit most significant); byte = ceil(178 * 256 / 243) = 188
  b.qs[0] = 188;
  b.qs[32] = 188;
  b.qh[1] = 188;
  const auto y = decode(GgmlType::kTQ1_0, b);
  const float want[5] = {2.0f, -2.0f, 0.0f, 2.0f, 0.0f};
  for (int n = 0; n < 5; ++n) {
    EXPECT_EQ(y[32 * n], want[n]) << n;
    EXPECT_EQ(y[160 + 16 * n], want[n]) << n;
  }
  for (int n = 0; n < 4; ++n) EXPECT_EQ(y[241 + 4 * n], want[n]) << n;
  EXPECT_EQ(y[1], -2.0f);  // byte 0 -> trit 0
  EXPECT_EQ(y[240], -2.0f);
}

TEST(IqKnownAnswer, TQ2_0) {
  auto b = zeroed<BlockTQ2_0>();
  b.d = kHalf0_5;
  b.qs[33] = 0xe4;  // digits 0, 1, 2, 3 for elements 128 + 32n + 1
  const auto y = decode(GgmlType::kTQ2_0, b);
  EXPECT_EQ(y[129], -0.5f);
  EXPECT_EQ(y[161], 0.0f);
  EXPECT_EQ(y[193], 0.5f);
  EXPECT_EQ(y[225], 1.0f);
  EXPECT_EQ(y[0], -0.5f);
}

constexpr GgmlType kReadOnlyTypes[] = {GgmlType::kIQ2_XXS, GgmlType::kIQ2_XS, GgmlType::kIQ2_S,
                                       GgmlType::kIQ3_XXS, GgmlType::kIQ3_S,  GgmlType::kIQ1_S,
                                       GgmlType::kIQ1_M,   GgmlType::kTQ1_0,  GgmlType::kTQ2_0};

// Random bytes with a finite scale: decode finite, and vec_dot (AVX2 order) agrees with the
// double-precision dot of the decoded weights and activations to float rounding.
TEST(IqRandomBlocks, DecodeFiniteAndDotMatchesDecodedValues) {
  for (GgmlType type : kReadOnlyTypes) {
    EXPECT_TRUE(is_supported_weight_type(type));
    EXPECT_FALSE(has_ref_quantizer(type));
    EXPECT_EQ(vec_dot_type(type), GgmlType::kQ8_K);
    const GgmlTypeInfo& info = get_type_info(type);
    for (uint32_t seed = 1; seed <= 4; ++seed) {
      const int64_t n_blocks = 5;
      const int64_t n = n_blocks * 256;
      std::mt19937 rng(seed);
      std::vector<uint8_t> w(info.type_size * n_blocks);
      for (uint8_t& byte : w) byte = static_cast<uint8_t>(rng());
      for (int64_t i = 0; i < n_blocks; ++i) set_block_scale(type, w.data() + i * info.type_size, 0x2e66);  // ~0.1
      std::vector<float> x(static_cast<size_t>(n));
      std::normal_distribution<float> normal(0.0f, 1.0f);
      for (float& v : x) v = normal(rng);
      std::vector<BlockQ8_K> a(static_cast<size_t>(n_blocks));
      quantize_row_q8_K_ref(x.data(), a.data(), n);
      std::vector<float> wd(static_cast<size_t>(n)), ad(static_cast<size_t>(n));
      dequantize_row_ref(type, w.data(), wd.data(), n);
      dequantize_row_q8_K_ref(a.data(), ad.data(), n);
      double exact = 0, mag = 0;
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(std::isfinite(wd[static_cast<size_t>(i)])) << info.name;
        exact += static_cast<double>(wd[static_cast<size_t>(i)]) * ad[static_cast<size_t>(i)];
        mag += std::fabs(static_cast<double>(wd[static_cast<size_t>(i)]) * ad[static_cast<size_t>(i)]);
      }
      const float got = vec_dot_ref(type, n, w.data(), a.data());
      EXPECT_NEAR(got, exact, 1e-6 * mag + 1e-30) << info.name << " seed " << seed;
    }
  }
}

}  // namespace
}  // namespace sniper
