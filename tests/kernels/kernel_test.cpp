// SPDX-License-Identifier: MIT
// Property tests for every kernel table entry at every tier the host supports, against the
// scalar `_ref` twins: vec_dot (random shapes incl. odd block counts, several seeds, well- and
// ill-conditioned data; tolerance scaled by sqrt(n) * sum|w||a|), gemm (bitwise equal to
// vec_dot at the same tier, NaN-prefilled outputs, row counts off the tile, 1..9 tokens, long
// rows), gemm_rows (bitwise equal to its scalar twin, close to vec_dot),
// quantize_act (byte-identical to the reference quantizer, including exact rounding ties) and
// dequant_row (bitwise). Also checks the dispatch rules.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

#include "kernels/kernel_test_util.h"
#include "kernels/kernels.h"
#include "quant/q4_k.h"
#include "quant/q6_k.h"
#include "quant/q8_k.h"

namespace sniper::test {
namespace {

using Param = std::tuple<GgmlType, IsaTier>;

class KernelTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    type_ = std::get<0>(GetParam());
    tier_ = std::get<1>(GetParam());
    if (!host_has(tier_)) GTEST_SKIP() << "host lacks tier " << isa_tier_name(tier_);
    if (!is_supported_weight_type(type_)) GTEST_SKIP() << "no reference codec yet for " << type_name(type_);
    table_ = find_kernels(type_, tier_);
    ASSERT_NE(table_, nullptr);
    ref_ = find_kernels(type_, IsaTier::kRef);
    ASSERT_NE(ref_, nullptr);
    block_ = get_type_info(type_).block_size;
    // Weight rows are at least 32 elements even for the float types (block size 1).
    unit_ = block_ < 32 ? 32 : block_;
  }

  GgmlType type_{};
  IsaTier tier_{};
  const KernelTable* table_ = nullptr;
  const KernelTable* ref_ = nullptr;
  int64_t block_ = 0;
  int64_t unit_ = 0;
};

TEST_P(KernelTest, TableDescribesType) {
  EXPECT_EQ(table_->type, type_);
  EXPECT_EQ(table_->vec_dot_type, vec_dot_type(type_));
  EXPECT_EQ(table_->tier, tier_);
}

TEST_P(KernelTest, VecDotMatchesRef) {
  std::vector<int64_t> sizes;
  for (int64_t m : {1, 2, 3, 7, 13}) sizes.push_back(unit_ * m);
  for (int64_t n : {2048, 5632}) {
    if (n % unit_ == 0) sizes.push_back(n);
  }
  if (block_ == 1) sizes.push_back(37);  // float types: a scalar tail
  for (int64_t n : sizes) {
    for (uint32_t seed : {1u, 2u, 3u}) {
      for (Cond cond : {Cond::kWell, Cond::kIll}) {
        const auto wf = random_floats(n, seed * 7919 + 1, cond, block_);
        const auto af = random_floats(n, seed * 104729 + 2, cond, block_);
        const auto wq = quantize_rows(type_, wf, n, 1);
        const auto aq = quantize_rows(table_->vec_dot_type, af, n, 1);
        const auto wd = dequantize_rows(type_, wq.data(), n, 1);
        const auto ad = dequantize_rows(table_->vec_dot_type, aq.data(), n, 1);
        float want = nan_f(), got = nan_f();
        ref_->vec_dot(n, &want, wq.data(), aq.data());
        table_->vec_dot(n, &got, wq.data(), aq.data());
        const double tol = 2e-6 * std::sqrt(static_cast<double>(n)) * abs_dot(wd.data(), ad.data(), n) + 1e-30;
        ASSERT_TRUE(std::isfinite(got)) << "n=" << n << " seed=" << seed;
        ASSERT_NEAR(got, want, tol) << type_name(type_) << " n=" << n << " seed=" << seed
                                    << " ill=" << (cond == Cond::kIll);
      }
    }
  }
}

using GemmFn = decltype(KernelTable::gemm);

// Runs `gemm` on random weights [n_rows, n] (conditioned as `wc`) and n_tok ill-conditioned
// activations into NaN-prefilled outputs with a padded stride, checks that the padding stays
// untouched, and hands every output to check(got, w row, a row, r, t).
template <class Check>
void run_padded_gemm(GemmFn gemm, GgmlType type, GgmlType at, int64_t block, int64_t n, int64_t n_rows, int64_t n_tok,
                     uint32_t seed, Cond wc, Check&& check) {
  const auto wq = quantize_rows(type, random_floats(n * n_rows, seed, wc, block), n, n_rows);
  const auto aq = quantize_rows(at, random_floats(n * n_tok, seed + 99, Cond::kIll, block), n, n_tok);
  const size_t wrb = row_bytes(type, n), arb = row_bytes(at, n);
  const int64_t stride = n_rows + 3;  // padding must stay untouched
  std::vector<float> out(static_cast<size_t>(stride * n_tok), nan_f());
  gemm(n, n_rows, n_tok, wq.data(), wrb, aq.data(), arb, out.data(), stride);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t r = 0; r < stride; ++r) {
      const float got = out[static_cast<size_t>(t * stride + r)];
      if (r >= n_rows) {
        ASSERT_TRUE(std::isnan(got)) << "gemm wrote padding at t=" << t << " r=" << r;
        continue;
      }
      check(got, wq.data() + wrb * r, aq.data() + arb * t, r, t);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST_P(KernelTest, GemmEqualsVecDotBitwise) {
  const GgmlType at = table_->vec_dot_type;
  for (int64_t m : {1, 3}) {
    const int64_t n = unit_ * m;
    for (int64_t n_rows : {1, 5, 13}) {
      for (int64_t n_tok = 1; n_tok <= 9; ++n_tok) {
        const uint32_t seed = static_cast<uint32_t>(n * 31 + n_rows * 7 + n_tok);
        run_padded_gemm(table_->gemm, type_, at, block_, n, n_rows, n_tok, seed, Cond::kWell,
                        [&](float got, const uint8_t* w, const uint8_t* a, int64_t r, int64_t t) {
                          float want = nan_f();
                          table_->vec_dot(n, &want, w, a);
                          ASSERT_EQ(std::memcmp(&got, &want, sizeof(float)), 0)
                              << type_name(type_) << " n=" << n << " rows=" << n_rows << " tok=" << n_tok << " r=" << r
                              << " t=" << t << " got=" << got << " want=" << want;
                        });
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Long rows (40 super-blocks for the K-quants: a tile's activations outgrow L1), 37 rows and two
// token tiles, the second odd: each token's result must still equal vec_dot.
TEST_P(KernelTest, GemmLongRowsEqualsVecDotBitwise) {
  const GgmlType at = table_->vec_dot_type;
  const int64_t n = 256 * 40, n_rows = 37, n_tok = 11;
  const auto wq = quantize_rows(type_, random_floats(n * n_rows, 71, Cond::kWell, block_), n, n_rows);
  const auto aq = quantize_rows(at, random_floats(n * n_tok, 72, Cond::kWell, block_), n, n_tok);
  const size_t wrb = row_bytes(type_, n), arb = row_bytes(at, n);
  std::vector<float> out(static_cast<size_t>(n_rows * n_tok), nan_f());
  table_->gemm(n, n_rows, n_tok, wq.data(), wrb, aq.data(), arb, out.data(), n_rows);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t r = 0; r < n_rows; ++r) {
      float want = nan_f();
      table_->vec_dot(n, &want, wq.data() + wrb * r, aq.data() + arb * t);
      const float got = out[static_cast<size_t>(t * n_rows + r)];
      ASSERT_EQ(std::memcmp(&got, &want, sizeof(float)), 0)
          << type_name(type_) << " r=" << r << " t=" << t << " got=" << got << " want=" << want;
    }
  }
}

// The scalar twin of a table's gemm_rows entry, or nullptr for a type that has none.
using RowsTwin = float (*)(int64_t n, const uint8_t* w, const uint8_t* a);
RowsTwin rows_twin(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_K:
      return [](int64_t n, const uint8_t* w, const uint8_t* a) {
        return vec_dot_q4_K_q8_K_ref(n, reinterpret_cast<const BlockQ4_K*>(w), reinterpret_cast<const BlockQ8_K*>(a));
      };
    case GgmlType::kQ6_K:
      return [](int64_t n, const uint8_t* w, const uint8_t* a) {
        return vec_dot_q6_K_q8_K_ref(n, reinterpret_cast<const BlockQ6_K*>(w), reinterpret_cast<const BlockQ8_K*>(a));
      };
    default: return nullptr;
  }
}

// gemm_rows against its scalar twin, bit for bit: rows on and off its row group, 1 to 19 tokens
// (inner token tiles full and partial), the longest rows it takes; NaN-prefilled outputs with a
// padded stride (every output written, the padding untouched). Also decides that gemm_rows is
// close to vec_dot (the same products, rounded in another order).
TEST_P(KernelTest, GemmRowsEqualsItsTwinBitwise) {
  if (table_->gemm_rows == nullptr) GTEST_SKIP() << "no gemm_rows for " << type_name(type_) << " at this tier";
  const RowsTwin twin = rows_twin(type_);
  ASSERT_NE(twin, nullptr) << "gemm_rows of " << type_name(type_) << " has no scalar twin in this test";
  ASSERT_GE(table_->rows_min_tokens, 2);
  ASSERT_GE(table_->rows_group, 1);
  const GgmlType at = table_->vec_dot_type;
  for (int64_t blocks : {int64_t{1}, int64_t{3}, int64_t{16}, table_->rows_max_blocks}) {
    const int64_t n = block_ * blocks;
    for (int64_t n_rows : {int64_t{1}, int64_t{5}, table_->rows_group, int64_t{37}}) {
      for (int64_t n_tok : {1, 2, 8, 9, 19}) {
        if (blocks == table_->rows_max_blocks && n_tok > 9) continue;  // keeps the test fast
        const uint32_t seed = static_cast<uint32_t>(blocks * 131 + n_rows * 7 + n_tok);
        const Cond wc = n_tok % 2 == 0 ? Cond::kIll : Cond::kWell;
        run_padded_gemm(
            table_->gemm_rows, type_, at, block_, n, n_rows, n_tok, seed, wc,
            [&](float got, const uint8_t* w, const uint8_t* a, int64_t r, int64_t t) {
              const float want = twin(n, w, a);
              ASSERT_EQ(std::memcmp(&got, &want, sizeof(float)), 0)
                  << type_name(type_) << " n=" << n << " rows=" << n_rows << " tok=" << n_tok << " r=" << r
                  << " t=" << t << " got=" << got << " want=" << want;
              float dot = nan_f();
              table_->vec_dot(n, &dot, w, a);
              const auto wd = dequantize_rows(type_, w, n, 1);
              const auto ad = dequantize_rows(at, a, n, 1);
              ASSERT_NEAR(got, dot, 2e-6 * std::sqrt(static_cast<double>(n)) * abs_dot(wd.data(), ad.data(), n) + 1e-30)
                  << "r=" << r << " t=" << t;
            });
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(KernelTest, GemmMatchesRefGemm) {
  const GgmlType at = table_->vec_dot_type;
  const int64_t n = unit_ * 7, n_rows = 6, n_tok = 5;
  const auto wf = random_floats(n * n_rows, 11, Cond::kIll, block_);
  const auto af = random_floats(n * n_tok, 12, Cond::kWell, block_);
  const auto wq = quantize_rows(type_, wf, n, n_rows);
  const auto aq = quantize_rows(at, af, n, n_tok);
  const auto wd = dequantize_rows(type_, wq.data(), n, n_rows);
  const auto ad = dequantize_rows(at, aq.data(), n, n_tok);
  std::vector<float> got(static_cast<size_t>(n_rows * n_tok), nan_f()), want(got);
  table_->gemm(n, n_rows, n_tok, wq.data(), row_bytes(type_, n), aq.data(), row_bytes(at, n), got.data(), n_rows);
  ref_->gemm(n, n_rows, n_tok, wq.data(), row_bytes(type_, n), aq.data(), row_bytes(at, n), want.data(), n_rows);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t r = 0; r < n_rows; ++r) {
      const double tol = 2e-6 * std::sqrt(static_cast<double>(n)) * abs_dot(&wd[r * n], &ad[t * n], n) + 1e-30;
      const size_t i = static_cast<size_t>(t * n_rows + r);
      ASSERT_NEAR(got[i], want[i], tol) << "r=" << r << " t=" << t;
    }
  }
}

// Every tier performs the reference engine's float operations in its order (quant/lane_order.h),
// so vec_dot, gemm and gemm_batched equal the ref tier bit for bit. IQ4_XS keeps its own order.
TEST_P(KernelTest, DotsEqualRefTierBitwise) {
  if (type_ == GgmlType::kIQ4_XS) GTEST_SKIP() << "IQ4_XS is not in the reference engine's order";
  const GgmlType at = table_->vec_dot_type;
  EXPECT_EQ(table_->gemm_batched == nullptr, ref_->gemm_batched == nullptr);
  EXPECT_EQ(table_->batched_k_multiple, ref_->batched_k_multiple);
  std::vector<int64_t> sizes = {unit_, unit_ * 3, unit_ * 8};
  if (block_ == 1) {
    for (int64_t n : {37, 96, 172, 200}) sizes.push_back(n);  // tails of 64 and 16
  }
  // 5 x 6 and 13 x 11: register blocks of rows x tokens (x86/gemm_float_block.h) with partial
  // row and token blocks after them.
  for (const auto& [n_rows, n_tok] : {std::pair<int64_t, int64_t>{5, 6}, {13, 11}}) {
    for (int64_t n : sizes) {
      for (uint32_t seed : {1u, 2u}) {
        const auto wq = quantize_rows(type_, random_floats(n * n_rows, seed * 31 + 5, Cond::kWell, block_), n, n_rows);
        const auto aq = quantize_rows(at, random_floats(n * n_tok, seed * 37 + 6, Cond::kWell, block_), n, n_tok);
        const size_t wrb = row_bytes(type_, n), arb = row_bytes(at, n);
        float got = nan_f(), want = nan_f();
        table_->vec_dot(n, &got, wq.data(), aq.data());
        ref_->vec_dot(n, &want, wq.data(), aq.data());
        ASSERT_EQ(bits(got), bits(want)) << type_name(type_) << " vec_dot n=" << n;
        std::vector<float> g(static_cast<size_t>(n_rows * n_tok), nan_f()), w(g);
        table_->gemm(n, n_rows, n_tok, wq.data(), wrb, aq.data(), arb, g.data(), n_rows);
        ref_->gemm(n, n_rows, n_tok, wq.data(), wrb, aq.data(), arb, w.data(), n_rows);
        for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(bits(g[i]), bits(w[i])) << "gemm n=" << n << " i=" << i;
        if (table_->gemm_batched != nullptr && n % table_->batched_k_multiple == 0) {
          table_->gemm_batched(n, n_rows, n_tok, wq.data(), wrb, aq.data(), arb, g.data(), n_rows);
          ref_->gemm_batched(n, n_rows, n_tok, wq.data(), wrb, aq.data(), arb, w.data(), n_rows);
          for (size_t i = 0; i < g.size(); ++i) {
            ASSERT_EQ(bits(g[i]), bits(w[i])) << "gemm_batched n=" << n << " i=" << i;
          }
        }
      }
    }
  }
}

TEST_P(KernelTest, DequantRowMatchesRefBitwise) {
  const int64_t n = unit_ * 3;
  const auto wq = quantize_rows(type_, random_floats(n, 5, Cond::kIll, block_), n, 1);
  std::vector<float> got(static_cast<size_t>(n), nan_f()), want(got);
  table_->dequant_row(wq.data(), got.data(), n);
  ref_->dequant_row(wq.data(), want.data(), n);
  ASSERT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * static_cast<size_t>(n)), 0);
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return type_name(std::get<0>(info.param)) + "_" + isa_tier_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllTypes, KernelTest,
                         ::testing::Combine(::testing::ValuesIn(kWeightTypes), ::testing::ValuesIn(kAllTiers)),
                         param_name);

// ---- activation quantizers ----

using ActParam = std::tuple<GgmlType, IsaTier>;
class ActQuantTest : public ::testing::TestWithParam<ActParam> {};

// Rows whose scaled values hit exact .5 ties: with amax = 127 the q8_0/q8_1 scale is 1 and
// x*id = x; with the extreme at -127 the q8_K iscale is 1 as well.
std::vector<float> tie_row(int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const float k = static_cast<float>((i * 37) % 250) - 125.0f;  // -125..124
    x[static_cast<size_t>(i)] = (i % 32 == 0) ? -127.0f : k + (i % 2 ? 0.5f : -0.5f);
  }
  return x;
}

TEST_P(ActQuantTest, ByteIdenticalToRef) {
  const GgmlType at = std::get<0>(GetParam());
  const IsaTier tier = std::get<1>(GetParam());
  if (!host_has(tier)) GTEST_SKIP() << "host lacks tier " << isa_tier_name(tier);
  const QuantizeActFn q = find_act_quantizer(at, tier);
  if (q == nullptr) GTEST_SKIP() << "no weight type consuming " << type_name(at) << " is supported yet";
  const int64_t block = get_type_info(at).block_size;
  const int64_t unit = block < 256 ? 256 : block;
  std::vector<std::vector<float>> rows;
  for (uint32_t seed : {1u, 2u, 3u}) {
    rows.push_back(random_floats(unit * 3, seed, Cond::kWell, block));
    rows.push_back(random_floats(unit * 3, seed + 10, Cond::kIll, block));
  }
  rows.push_back(tie_row(unit * 2));
  rows.push_back(std::vector<float>(static_cast<size_t>(unit), 0.0f));
  std::vector<float> tiny(static_cast<size_t>(unit), 1e-42f);  // denormal scale: 1/d overflows
  tiny[3] = -2e-42f;
  rows.push_back(tiny);
  std::vector<float> odd = random_floats(unit + (block == 1 ? 13 : 0), 77, Cond::kWell, block);
  rows.push_back(odd);
  for (size_t k = 0; k < rows.size(); ++k) {
    const int64_t n = static_cast<int64_t>(rows[k].size());
    const size_t rb = row_bytes(at, n);
    std::vector<uint8_t> got(rb, 0xAB), want(rb, 0xCD);
    q(rows[k].data(), got.data(), n);
    quantize_act_row_ref(at, rows[k].data(), want.data(), n);
    ASSERT_EQ(std::memcmp(got.data(), want.data(), rb), 0) << type_name(at) << " row " << k;
  }
}

std::string act_param_name(const ::testing::TestParamInfo<ActParam>& info) {
  return type_name(std::get<0>(info.param)) + "_" + isa_tier_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllActTypes, ActQuantTest,
                         ::testing::Combine(::testing::ValuesIn(kActTypes), ::testing::ValuesIn(kAllTiers)),
                         act_param_name);

// ---- dispatch ----

TEST(DispatchTest, UnsupportedTypesAndTiersGiveNull) {
  EXPECT_EQ(find_kernels(GgmlType::kI32, IsaTier::kRef), nullptr);
  EXPECT_EQ(find_kernels(GgmlType::kQ8_K, IsaTier::kRef), nullptr);  // activation-only type
  EXPECT_EQ(find_kernels(static_cast<GgmlType>(4), IsaTier::kRef), nullptr);
  EXPECT_EQ(find_kernels(static_cast<GgmlType>(1000), IsaTier::kRef), nullptr);
  for (IsaTier other : {IsaTier::kAvx2, IsaTier::kAvx512, IsaTier::kNeon, IsaTier::kDotprod, IsaTier::kI8mm}) {
    if (!host_runs(other)) {
      EXPECT_EQ(find_kernels(GgmlType::kF32, other), nullptr) << isa_tier_name(other);
    }
  }
  EXPECT_EQ(find_act_quantizer(GgmlType::kQ4_0, IsaTier::kRef), nullptr);  // not an activation type
}

TEST(DispatchTest, GetKernelsUsesSelectedTier) {
  const KernelTable& t = get_kernels(GgmlType::kF32);
  EXPECT_EQ(t.tier, selected_tier());
  EXPECT_EQ(&t, find_kernels(GgmlType::kF32, selected_tier()));
}

TEST(DispatchTest, HigherTiersReplaceHotEntries) {
  if (!host_has(IsaTier::kAvx2)) GTEST_SKIP() << "no AVX2";
  for (GgmlType type : kWeightTypes) {
    if (!is_supported_weight_type(type)) continue;
    const KernelTable* ref = find_kernels(type, IsaTier::kRef);
    const KernelTable* avx2 = find_kernels(type, IsaTier::kAvx2);
    ASSERT_NE(avx2, nullptr);
    EXPECT_NE(ref->vec_dot, avx2->vec_dot) << type_name(type);
    EXPECT_NE(ref->gemm, avx2->gemm) << type_name(type);
    EXPECT_NE(ref->quantize_act, avx2->quantize_act) << type_name(type);
  }
}

}  // namespace
}  // namespace sniper::test
