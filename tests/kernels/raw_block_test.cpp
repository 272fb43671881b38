// SPDX-License-Identifier: MIT
// Raw-block property tests for the kernels with hand-laid-out integer paths (the K-quants,
// IQ4_XS, and the 32-element formats, whose AVX-512 kernels transpose 16 rows into the lanes of a
// register): blocks of random bytes (every bit pattern of quants, high bits and packed scales, not
// only what the quantizer emits), all-ones blocks (the largest quants and scales), and activations
// over the whole int8 range (q8_K down to -128; q8_0 / q8_1 over [-127, 127], the range their
// kernels assume). Every tier's gemm must equal the ref tier's (IQ4_XS: the AVX2 tier's) bit for
// bit for 1..9 tokens (the one-token matvec, the token tiles and passes and their odd tails), for
// 7 and 19 rows (one partial group of 16 row lanes; a full one and a partial one), and for row
// lengths on both sides of each kernel's block limits (K-quants: 64 super-blocks for the tiles,
// 128 for the one-token layout; 32-element formats: 384 blocks for the transposed copy, 1024 for
// the row-lane path), where the kernels fall back to another path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "base/fp16.h"
#include "kernels/kernel_test_util.h"
#include "quant/block_scale.h"
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
#include "quant/q8_1.h"
#include "quant/q8_k.h"

namespace sniper::test {
namespace {

enum class Fill { kRandom, kAllOnes };

// The fp16 fields of a block (scale, and min where the format has one) at their offsets.
std::vector<size_t> half_fields(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_K: return {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)};
    case GgmlType::kQ2_K: return {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)};
    case GgmlType::kQ3_K: return {offsetof(BlockQ3_K, d)};
    case GgmlType::kQ5_K: return {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)};
    case GgmlType::kIQ4_XS: return {offsetof(BlockIQ4_XS, d)};
    case GgmlType::kQ6_K: return {offsetof(BlockQ6_K, d)};
    case GgmlType::kQ4_0: return {offsetof(BlockQ4_0, d)};
    case GgmlType::kQ4_1: return {offsetof(BlockQ4_1, d), offsetof(BlockQ4_1, m)};
    case GgmlType::kQ5_0: return {offsetof(BlockQ5_0, d)};
    case GgmlType::kQ5_1: return {offsetof(BlockQ5_1, d), offsetof(BlockQ5_1, m)};
    case GgmlType::kQ8_0: return {offsetof(BlockQ8_0, d)};
    case GgmlType::kIQ4_NL: return {offsetof(BlockIQ4_NL, d)};
    default: return {};
  }
}

// n_blocks blocks of `type` with the given fill; the fp16 fields always get finite values in
// [2^-10, 1), so results are finite and comparable bit for bit.
std::vector<uint8_t> raw_blocks(GgmlType type, int64_t n_blocks, Fill fill, std::mt19937& rng) {
  const size_t bs = get_type_info(type).type_size;
  std::vector<uint8_t> out(bs * static_cast<size_t>(n_blocks));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(1.0f / 1024, 1.0f);
  for (uint8_t& b : out) b = fill == Fill::kAllOnes ? 0xFF : static_cast<uint8_t>(byte(rng));
  for (int64_t i = 0; i < n_blocks; ++i) {
    uint8_t* blk = out.data() + bs * static_cast<size_t>(i);
    for (size_t off : half_fields(type)) {
      const fp16_t h = fp32_to_fp16(scale(rng));
      std::memcpy(blk + off, &h, 2);
    }
    if (has_settable_block_scale(type)) set_block_scale(type, blk, fp32_to_fp16(scale(rng)));
  }
  return out;
}

// Activations of type `act` for n elements: quants over the type's range (or all at one extreme,
// clamped to it) and consistent group sums (q8_K bsums, q8_1 s).
std::vector<uint8_t> raw_acts(GgmlType act, int64_t n, int extreme, std::mt19937& rng, int q8_k_min = -128) {
  std::uniform_real_distribution<float> d(1e-3f, 1.0f);
  if (act == GgmlType::kQ8_K) {
    std::uniform_int_distribution<int> q(q8_k_min, 127);
    std::vector<BlockQ8_K> blocks(static_cast<size_t>(n / 256));
    for (BlockQ8_K& b : blocks) {
      b.d = d(rng);
      for (int8_t& v : b.qs) v = static_cast<int8_t>(extreme != 0 ? extreme : q(rng));
      for (int g = 0; g < 16; ++g) {
        int s = 0;
        for (int k = 0; k < 16; ++k) s += b.qs[16 * g + k];
        b.bsums[g] = static_cast<int16_t>(s);
      }
    }
    std::vector<uint8_t> out(sizeof(BlockQ8_K) * blocks.size());
    std::memcpy(out.data(), blocks.data(), out.size());
    return out;
  }
  std::uniform_int_distribution<int> q(-127, 127);
  const int ext = std::max(-127, std::min(127, extreme));
  const size_t bs = get_type_info(act).type_size;
  std::vector<uint8_t> out(bs * static_cast<size_t>(n / 32));
  for (int64_t i = 0; i < n / 32; ++i) {
    int8_t qs[32];
    int sum = 0;
    for (int8_t& v : qs) sum += (v = static_cast<int8_t>(extreme != 0 ? ext : q(rng)));
    const float scale = d(rng);
    uint8_t* blk = out.data() + bs * static_cast<size_t>(i);
    const fp16_t dh = fp32_to_fp16(scale);
    if (act == GgmlType::kQ8_0) {
      std::memcpy(blk + offsetof(BlockQ8_0, d), &dh, 2);
      std::memcpy(blk + offsetof(BlockQ8_0, qs), qs, 32);
    } else {
      const fp16_t sh = fp32_to_fp16(fp16_to_fp32(dh) * static_cast<float>(sum));
      std::memcpy(blk + offsetof(BlockQ8_1, d), &dh, 2);
      std::memcpy(blk + offsetof(BlockQ8_1, s), &sh, 2);
      std::memcpy(blk + offsetof(BlockQ8_1, qs), qs, 32);
    }
  }
  return out;
}

using Param = std::tuple<GgmlType, IsaTier>;
class RawBlockTest : public ::testing::TestWithParam<Param> {};

TEST_P(RawBlockTest, GemmEqualsRefTierBitwise) {
  const auto [type, tier] = GetParam();
  if (!host_has(tier)) GTEST_SKIP() << "host lacks tier " << isa_tier_name(tier);
  // IQ4_XS is not in the reference engine's order; its SIMD tiers share one (8 lanes, one FMA per
  // super-block), so the AVX-512 kernels must give the AVX2 kernel's bits.
  const IsaTier base = type == GgmlType::kIQ4_XS ? IsaTier::kAvx2 : IsaTier::kRef;
  if (tier == base) GTEST_SKIP() << "the base of the comparison";
  const KernelTable* table = find_kernels(type, tier);
  const KernelTable* ref = find_kernels(type, base);
  ASSERT_NE(table, nullptr);
  ASSERT_NE(ref, nullptr);
  std::mt19937 rng(1234);
  struct Case {
    Fill fill;
    int extreme;  // 0: random activations
  };
  const Case cases[] = {{Fill::kRandom, 0}, {Fill::kAllOnes, -128}, {Fill::kAllOnes, 127}, {Fill::kRandom, -128}};
  // The i-quant / ternary kernels apply signs to the activations with vpsignb, as ggml's do, so
  // they assume what quantize_row_q8_K guarantees: q8_K quants >= -127 (no -128 extreme).
  const bool signs_on_acts = has_settable_block_scale(type);
  const int64_t block = static_cast<int64_t>(get_type_info(type).block_size);
  const GgmlType act = table->vec_dot_type;
  // Row lengths in blocks on both sides of the kernels' limits (see the file comment).
  // The i-quant / ternary kernels have no block-count limits: a few lengths and one long row.
  const std::vector<int64_t> lengths = signs_on_acts  ? std::vector<int64_t>{1, 3, 8, 65}
                                       : block == 256 ? std::vector<int64_t>{1, 3, 8, 64, 65, 128, 129}
                                                      : std::vector<int64_t>{1, 3, 8, 384, 385, 1024, 1025};
  for (const Case& c : cases) {
    if (signs_on_acts && c.extreme == -128) continue;
    for (int64_t n_blocks : lengths) {
      const int64_t n = block * n_blocks;
      for (int64_t n_rows : {7, 19}) {
        if (n_rows == 19 && n_blocks > 400) continue;  // keeps the test fast
        const auto w = raw_blocks(type, n_rows * n_blocks, c.fill, rng);
        const size_t wrb = row_bytes(type, n), arb = row_bytes(act, n);
        for (int64_t n_tok : {1, 2, 3, 8, 9}) {
          const auto a = raw_acts(act, n * n_tok, c.extreme, rng, signs_on_acts ? -127 : -128);
          const int64_t stride = n_rows + 2;
          std::vector<float> got(static_cast<size_t>(stride * n_tok), nan_f()), want(got);
          table->gemm(n, n_rows, n_tok, w.data(), wrb, a.data(), arb, got.data(), stride);
          ref->gemm(n, n_rows, n_tok, w.data(), wrb, a.data(), arb, want.data(), stride);
          for (int64_t t = 0; t < n_tok; ++t) {
            for (int64_t r = 0; r < stride; ++r) {
              const size_t i = static_cast<size_t>(t * stride + r);
              if (r >= n_rows) {
                ASSERT_TRUE(std::isnan(got[i])) << "gemm wrote padding at t=" << t << " r=" << r;
                continue;
              }
              ASSERT_TRUE(std::isfinite(want[i]));
              ASSERT_EQ(bits(got[i]), bits(want[i]))
                  << type_name(type) << " blocks=" << n_blocks << " rows=" << n_rows << " n_tok=" << n_tok << " t=" << t
                  << " r=" << r << " fill=" << static_cast<int>(c.fill) << " extreme=" << c.extreme << " got=" << got[i]
                  << " want=" << want[i];
            }
          }
        }
      }
    }
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return type_name(std::get<0>(info.param)) + "_" + isa_tier_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Types, RawBlockTest,
                         ::testing::Combine(::testing::Values(GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K,
                                                              GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kIQ4_XS,
                                                              GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0,
                                                              GgmlType::kQ5_1, GgmlType::kQ8_0, GgmlType::kIQ4_NL,
                                                              GgmlType::kIQ2_XXS, GgmlType::kIQ2_XS, GgmlType::kIQ2_S,
                                                              GgmlType::kIQ3_XXS, GgmlType::kIQ3_S, GgmlType::kIQ1_S,
                                                              GgmlType::kIQ1_M, GgmlType::kTQ1_0, GgmlType::kTQ2_0),
                                            ::testing::Values(IsaTier::kAvx2, IsaTier::kAvx512)),
                         param_name);

}  // namespace
}  // namespace sniper::test
