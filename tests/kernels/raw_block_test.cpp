// SPDX-License-Identifier: MIT
// Raw-block property tests for the K-quant kernels with hand-laid-out integer paths (Q4_K, Q6_K):
// blocks of random bytes (every bit pattern of quants and packed scales, not only what the
// quantizer emits), all-ones blocks (the largest quants and scales), and q8_K activations over the
// whole int8 range including -128. Every tier's gemm must equal the ref tier's bit for bit for 1..9
// tokens (the one-token matvec, the token tiles and their odd tails) and for row lengths on both
// sides of each kernel's super-block limits (64 for the tiles, 128 for the one-token layout), where
// the kernels fall back to another path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "base/fp16.h"
#include "kernels/kernel_test_util.h"
#include "quant/q4_k.h"
#include "quant/q6_k.h"
#include "quant/q8_k.h"

namespace sniper::test {
namespace {

enum class Fill { kRandom, kAllOnes };

// n_blocks blocks of `type` with the given fill; the fp16 scale fields always get finite values in
// [2^-10, 1), so results are finite and comparable bit for bit.
std::vector<uint8_t> raw_blocks(GgmlType type, int64_t n_blocks, Fill fill, std::mt19937& rng) {
  const size_t bs = type == GgmlType::kQ4_K ? sizeof(BlockQ4_K) : sizeof(BlockQ6_K);
  std::vector<uint8_t> out(bs * static_cast<size_t>(n_blocks));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(1.0f / 1024, 1.0f);
  for (uint8_t& b : out) b = fill == Fill::kAllOnes ? 0xFF : static_cast<uint8_t>(byte(rng));
  for (int64_t i = 0; i < n_blocks; ++i) {
    uint8_t* blk = out.data() + bs * static_cast<size_t>(i);
    const fp16_t d = fp32_to_fp16(scale(rng)), dmin = fp32_to_fp16(scale(rng));
    if (type == GgmlType::kQ4_K) {
      std::memcpy(blk + offsetof(BlockQ4_K, d), &d, 2);
      std::memcpy(blk + offsetof(BlockQ4_K, dmin), &dmin, 2);
    } else {
      std::memcpy(blk + offsetof(BlockQ6_K, d), &d, 2);
    }
  }
  return out;
}

// q8_K rows with quants over [-128, 127] (or all at one extreme) and consistent bsums.
std::vector<BlockQ8_K> raw_acts(int64_t n_blocks, int extreme, std::mt19937& rng) {
  std::vector<BlockQ8_K> out(static_cast<size_t>(n_blocks));
  std::uniform_int_distribution<int> q(-128, 127);
  std::uniform_real_distribution<float> d(1e-3f, 1.0f);
  for (BlockQ8_K& b : out) {
    b.d = d(rng);
    for (int8_t& v : b.qs) v = static_cast<int8_t>(extreme != 0 ? extreme : q(rng));
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int k = 0; k < 16; ++k) s += b.qs[16 * g + k];
      b.bsums[g] = static_cast<int16_t>(s);
    }
  }
  return out;
}

using Param = std::tuple<GgmlType, IsaTier>;
class RawBlockTest : public ::testing::TestWithParam<Param> {};

TEST_P(RawBlockTest, GemmEqualsRefTierBitwise) {
  const auto [type, tier] = GetParam();
  if (!host_has(tier)) GTEST_SKIP() << "host lacks tier " << isa_tier_name(tier);
  const KernelTable* table = find_kernels(type, tier);
  const KernelTable* ref = find_kernels(type, IsaTier::kRef);
  ASSERT_NE(table, nullptr);
  ASSERT_NE(ref, nullptr);
  std::mt19937 rng(1234);
  struct Case {
    Fill fill;
    int extreme;  // 0: random activations
  };
  const Case cases[] = {{Fill::kRandom, 0}, {Fill::kAllOnes, -128}, {Fill::kAllOnes, 127}, {Fill::kRandom, -128}};
  for (const Case& c : cases) {
    for (int64_t n_sb : {1, 3, 8, 64, 65, 128, 129}) {
      const int64_t n = 256 * n_sb, n_rows = 7;
      const auto w = raw_blocks(type, n_rows * n_sb, c.fill, rng);
      const size_t wrb = row_bytes(type, n), arb = row_bytes(GgmlType::kQ8_K, n);
      for (int64_t n_tok : {1, 2, 3, 8, 9}) {
        const auto a = raw_acts(n_tok * n_sb, c.extreme, rng);
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
                << type_name(type) << " n_sb=" << n_sb << " n_tok=" << n_tok << " t=" << t << " r=" << r
                << " fill=" << static_cast<int>(c.fill) << " extreme=" << c.extreme << " got=" << got[i]
                << " want=" << want[i];
          }
        }
      }
    }
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return type_name(std::get<0>(info.param)) + "_" + isa_tier_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(KQuants, RawBlockTest,
                         ::testing::Combine(::testing::Values(GgmlType::kQ4_K, GgmlType::kQ6_K),
                                            ::testing::Values(IsaTier::kAvx2, IsaTier::kAvx512)),
                         param_name);

}  // namespace
}  // namespace sniper::test
