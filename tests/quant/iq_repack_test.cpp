// SPDX-License-Identifier: MIT
// The lookup-free layouts of quant/iq_repack.h against the source formats they are made from:
// for every source type, random blocks (every bit pattern of indices, signs and scales, with a
// finite d) and hand-set blocks repack into blocks that decode to the same integers, scales and
// d, dequantize to the same floats and give the same dot product, bit for bit; a hand-worked
// block pins the documented byte layout (codes of element 64j + m at bits 2j of byte m, nibble
// order, sign bits), so a kernel and the repacker cannot drift apart silently.
#include "quant/iq_repack.h"

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

constexpr GgmlType kSources[] = {GgmlType::kIQ2_XXS, GgmlType::kIQ2_XS, GgmlType::kIQ2_S, GgmlType::kIQ3_XXS,
                                 GgmlType::kIQ3_S,   GgmlType::kIQ1_S,  GgmlType::kIQ1_M, GgmlType::kTQ1_0};

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// n_blocks random blocks of `type` with finite scales in [2^-10, 2).
std::vector<uint8_t> random_blocks(GgmlType type, int64_t n_blocks, std::mt19937& rng) {
  const size_t bs = get_type_info(type).type_size;
  std::vector<uint8_t> out(bs * static_cast<size_t>(n_blocks));
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  std::uniform_int_distribution<int> exp(5, 15);  // fp16 exponents: 2^-10 .. 2^0
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto d = static_cast<fp16_t>((exp(rng) << 10) | (rng() & 0x3ff));
    set_block_scale(type, out.data() + bs * static_cast<size_t>(i), d);
  }
  return out;
}

std::vector<BlockQ8_K> random_acts(int64_t n_blocks, std::mt19937& rng, bool extremes) {
  std::vector<float> x(static_cast<size_t>(256 * n_blocks));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x) v = extremes ? (rng() % 2 ? 1.0f : -1.0f) : normal(rng);
  std::vector<BlockQ8_K> a(static_cast<size_t>(n_blocks));
  quantize_row_q8_K_ref(x.data(), a.data(), 256 * n_blocks);
  return a;
}

std::vector<uint8_t> repack(GgmlType type, const std::vector<uint8_t>& src, int64_t n) {
  const GgmlType to = repacked_type(type);
  std::vector<uint8_t> dst(row_bytes(to, n));
  repack_row(type, src.data(), dst.data(), n);
  return dst;
}

TEST(IqRepack, TypesMapToTheirLayouts) {
  EXPECT_EQ(repacked_type(GgmlType::kIQ2_XXS), GgmlType::kIQ2_RP);
  EXPECT_EQ(repacked_type(GgmlType::kIQ2_XS), GgmlType::kIQ2_RP);
  EXPECT_EQ(repacked_type(GgmlType::kIQ2_S), GgmlType::kIQ2_RP);
  EXPECT_EQ(repacked_type(GgmlType::kIQ3_XXS), GgmlType::kIQ3_XXS_RP);
  EXPECT_EQ(repacked_type(GgmlType::kIQ3_S), GgmlType::kIQ3_S_RP);
  EXPECT_EQ(repacked_type(GgmlType::kIQ1_S), GgmlType::kIQ1_S_RP);
  EXPECT_EQ(repacked_type(GgmlType::kIQ1_M), GgmlType::kIQ1_M_RP);
  EXPECT_EQ(repacked_type(GgmlType::kTQ1_0), GgmlType::kTQ2_0);
  for (GgmlType t : {GgmlType::kQ4_K, GgmlType::kIQ4_XS, GgmlType::kTQ2_0, GgmlType::kIQ2_RP, GgmlType::kIQ1_M_RP}) {
    EXPECT_EQ(repacked_type(t), t) << get_type_info(t).name;
  }
  // In-memory layouts are not file types: a GGUF naming one is rejected by the reader.
  for (GgmlType t :
       {GgmlType::kIQ2_RP, GgmlType::kIQ3_XXS_RP, GgmlType::kIQ3_S_RP, GgmlType::kIQ1_S_RP, GgmlType::kIQ1_M_RP}) {
    EXPECT_EQ(find_type_info(static_cast<uint32_t>(t)), nullptr);
    ASSERT_NE(find_memory_type_info(static_cast<uint32_t>(t)), nullptr);
    EXPECT_TRUE(is_supported_weight_type(t));
    EXPECT_EQ(vec_dot_type(t), GgmlType::kQ8_K);
  }
}

// Same floats and same dot products (bitwise) as the source, over random rows of 1..9 blocks.
TEST(IqRepack, RepackedRowsEqualTheSourceBitwise) {
  for (GgmlType type : kSources) {
    const GgmlType to = repacked_type(type);
    std::mt19937 rng(1234 + static_cast<uint32_t>(type));
    for (int64_t nb : {1, 2, 3, 9}) {
      for (int rep = 0; rep < 20; ++rep) {
        const int64_t n = 256 * nb;
        const auto src = random_blocks(type, nb, rng);
        const auto dst = repack(type, src, n);
        std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
        dequantize_row_ref(type, src.data(), want.data(), n);
        dequantize_row_ref(to, dst.data(), got.data(), n);
        ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0) << get_type_info(type).name;
        for (bool extremes : {false, true}) {
          const auto a = random_acts(nb, rng, extremes);
          const float w = vec_dot_ref(type, n, src.data(), a.data());
          const float g = vec_dot_ref(to, n, dst.data(), a.data());
          ASSERT_EQ(bits_of(w), bits_of(g))
              << get_type_info(type).name << " nb=" << nb << " want=" << w << " got=" << g;
        }
      }
    }
  }
}

// Integers and scales: the decoders of the layouts give back exactly the source decoders' output.
TEST(IqRepack, DecodedIntegersAndScalesMatch) {
  std::mt19937 rng(99);
  int8_t q0[256], q1[256];
  int s0[16], s1[16];
  for (int rep = 0; rep < 200; ++rep) {
    {
      const auto src = random_blocks(GgmlType::kIQ2_S, 1, rng);
      const auto dst = repack(GgmlType::kIQ2_S, src, 256);
      decode_iq2_s_block(*reinterpret_cast<const BlockIQ2_S*>(src.data()), q0, s0);
      decode_iq2_rp_block(*reinterpret_cast<const BlockIQ2_RP*>(dst.data()), q1, s1);
      ASSERT_EQ(std::memcmp(q0, q1, 256), 0);
      ASSERT_EQ(std::memcmp(s0, s1, sizeof(s0)), 0);
      ASSERT_EQ(reinterpret_cast<const BlockIQ2_RP*>(dst.data())->d,
                reinterpret_cast<const BlockIQ2_S*>(src.data())->d);
    }
    {
      const auto src = random_blocks(GgmlType::kIQ3_XXS, 1, rng);
      const auto dst = repack(GgmlType::kIQ3_XXS, src, 256);
      decode_iq3_xxs_block(*reinterpret_cast<const BlockIQ3_XXS*>(src.data()), q0, s0);
      decode_iq3_xxs_rp_block(*reinterpret_cast<const BlockIQ3_RP*>(dst.data()), q1, s1);
      ASSERT_EQ(std::memcmp(q0, q1, 256), 0);
      ASSERT_EQ(std::memcmp(s0, s1, sizeof(s0)), 0);
    }
    for (GgmlType t : {GgmlType::kIQ1_S, GgmlType::kIQ1_M}) {
      const auto src = random_blocks(t, 1, rng);
      const auto dst = repack(t, src, 256);
      int8_t d0[256], d1[256];
      if (t == GgmlType::kIQ1_S) {
        decode_iq1_s_block(*reinterpret_cast<const BlockIQ1_S*>(src.data()), q0, d0, s0);
      } else {
        decode_iq1_m_block(*reinterpret_cast<const BlockIQ1_M*>(src.data()), q0, d0, s0);
      }
      if (t == GgmlType::kIQ1_S) {
        decode_iq1_s_rp_block(*reinterpret_cast<const BlockIQ1_RP*>(dst.data()), q1, d1, s1);
      } else {
        decode_iq1_m_rp_block(*reinterpret_cast<const BlockIQ1_RP*>(dst.data()), q1, d1, s1);
      }
      ASSERT_EQ(std::memcmp(q0, q1, 256), 0);
      ASSERT_EQ(std::memcmp(d0, d1, 256), 0);
      ASSERT_EQ(std::memcmp(s0, s1, sizeof(s0)), 0);
    }
    {
      const auto src = random_blocks(GgmlType::kTQ1_0, 1, rng);
      const auto dst = repack(GgmlType::kTQ1_0, src, 256);
      decode_tq1_0_block(*reinterpret_cast<const BlockTQ1_0*>(src.data()), q0);
      decode_tq2_0_block(*reinterpret_cast<const BlockTQ2_0*>(dst.data()), q1);
      ASSERT_EQ(std::memcmp(q0, q1, 256), 0);
    }
  }
}

// The documented byte layout, worked by hand: an IQ2_S block whose group 9 (elements 72..79) is
// grid entry 1 with element 72 negative, and an IQ3_S block whose element 200 is -grid value.
TEST(IqRepack, LayoutKnownAnswer) {
  BlockIQ2_S b2;
  std::memset(&b2, 0, sizeof(b2));
  b2.d = 0x3c00;
  b2.qs[9] = 1;        // group 9: low index bits = 1 (qh 0): iq2s_grid[1] = 0x080808080808082b
  b2.qs[32 + 9] = 1;   // its sign byte: element 72 negative
  b2.scales[2] = 0x5;  // elements 64..79: s = 5 (scale 11); 80..95: s = 0
  BlockIQ2_RP r2;
  repack_row(GgmlType::kIQ2_S, &b2, &r2, 256);
  EXPECT_EQ(r2.d, 0x3c00);
  // element 72 = 64 * 1 + 8: magnitude 43 = code 2 at bits 2..3 of byte 8; elements 73..79 code 0
  EXPECT_EQ(r2.qs[8], 2 << 2);
  for (int m = 9; m < 16; ++m) EXPECT_EQ(r2.qs[m], 0) << m;
  EXPECT_EQ(r2.signs[9], 1);      // bit 72 % 8 of byte 72 / 8
  EXPECT_EQ(r2.scales[2], 0x05);  // element group 4 (64..79) low nibble, 5 (80..95) high nibble
  EXPECT_EQ(r2.qs[0], 0);         // everything else: magnitude 8 = code 0
  int8_t q[256];
  int sc[16];
  decode_iq2_rp_block(r2, q, sc);
  EXPECT_EQ(q[72], -43);
  EXPECT_EQ(q[73], 8);
  EXPECT_EQ(sc[4], 11);

  BlockIQ3_S b3;
  std::memset(&b3, 0, sizeof(b3));
  b3.d = 0x3c00;
  // element 200 = sub-block 6 (192..223), group l = 1 (200..207), first 4: index qs[8 * 6 + 2 * 1]
  b3.qs[50] = 3;            // iq3s_grid[3] = 0x0101010b: element 200 = 11 (byte 0), 201..203 = 1
  b3.signs[4 * 6 + 1] = 1;  // sign byte of elements 200..207: bit 0 = element 200
  BlockIQ3_RP r3;
  repack_row(GgmlType::kIQ3_S, &b3, &r3, 256);
  // element 200 = 128 + 72: high nibble (72 >= 64) of byte 64 + (72 - 64) = 72; 11 = code 5, sign 8
  EXPECT_EQ(r3.qs[72] >> 4, 5 | 8);
  EXPECT_EQ((r3.qs[73] >> 4) & 7, 0);  // element 201 = 1: code 0
  decode_iq3_s_rp_block(r3, q, sc);
  EXPECT_EQ(q[200], -11);
  EXPECT_EQ(q[201], 1);
}

}  // namespace
}  // namespace sniper
