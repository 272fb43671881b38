// SPDX-License-Identifier: MIT
// End-to-end tests of matmul(): against a double-precision reference on the dequantized
// weights and the unquantized activations (tolerance = a worst-case bound on the activation
// quantization error), against the ref tier (tight), bitwise equality across thread counts,
// and ActBuffer alignment.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernel_test_util.h"
#include "kernels/matmul.h"
#include "kernels/matmul_widened.h"
#include "kernels/tensor.h"

namespace sniper::test {
namespace {

struct Problem {
  int64_t n = 0, n_rows = 0, n_tok = 0;
  std::vector<uint8_t> wq;
  std::vector<float> wd;  // dequantized weights [n_rows, n]
  std::vector<float> x;   // activations [n_tok, n]
  QTensor w;
};

Problem make_problem(GgmlType type, int64_t n, int64_t n_rows, int64_t n_tok, uint32_t seed, Cond cond) {
  Problem p;
  p.n = n;
  p.n_rows = n_rows;
  p.n_tok = n_tok;
  p.wq = quantize_rows(type, random_floats(n * n_rows, seed, cond), n, n_rows);
  p.wd = dequantize_rows(type, p.wq.data(), n, n_rows);
  p.x = random_floats(n * n_tok, seed + 1000, cond);
  p.w.type = type;
  p.w.ne = {n, n_rows, 1, 1};
  p.w.data = p.wq.data();
  p.w.row_bytes = row_bytes(type, n);
  return p;
}

// Worst-case |a - quantized(a)| per element for an activation type, given its block's amax.
double act_error_bound(GgmlType at, float a, float block_amax) {
  switch (at) {
    case GgmlType::kF32: return 0.0;
    case GgmlType::kF16: return std::fabs(a) * std::ldexp(1.0, -11) + 6e-8;
    case GgmlType::kBF16: return std::fabs(a) * std::ldexp(1.0, -8) + 1e-38;
    // Half a step of d = amax/127, plus up to 127 * |d - f16(d)| <= 127 * 2^-11 * d for the
    // f16-stored scales of q8_0/q8_1.
    default: return (0.5 + 127.0 * std::ldexp(1.0, -11)) * block_amax / 127.0 * 1.001 + 1e-30;
  }
}

using Param = std::tuple<GgmlType, IsaTier>;
class MatmulTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    type_ = std::get<0>(GetParam());
    tier_ = std::get<1>(GetParam());
    if (!host_has(tier_)) GTEST_SKIP() << "host lacks tier " << isa_tier_name(tier_);
    if (!is_supported_weight_type(type_)) GTEST_SKIP() << "no reference codec yet for " << type_name(type_);
    const int64_t bs = get_type_info(type_).block_size;
    unit_ = bs < 32 ? 32 : bs;
  }
  void expect_matches_ref_tier(int64_t n_tok);
  GgmlType type_{};
  IsaTier tier_{};
  int64_t unit_ = 0;
};

TEST_P(MatmulTest, MatchesDoubleReferenceWithinQuantizationError) {
  ThreadPool pool(2);
  ActBuffer buf;
  const GgmlType at = vec_dot_type(type_);
  const int64_t ablock = get_type_info(at).block_size;
  for (Cond cond : {Cond::kWell, Cond::kIll}) {
    Problem p = make_problem(type_, unit_ * 3, 37, 6, 21, cond);
    std::vector<float> y(static_cast<size_t>(p.n_rows * p.n_tok), nan_f());
    matmul(p.w, p.x.data(), y.data(), p.n_tok, buf, pool, tier_);
    for (int64_t t = 0; t < p.n_tok; ++t) {
      const float* xt = &p.x[static_cast<size_t>(t * p.n)];
      std::vector<double> err(static_cast<size_t>(p.n));
      for (int64_t b = 0; b < p.n; b += ablock) {
        float amax = 0.0f;
        for (int64_t i = b; i < b + ablock; ++i) amax = std::max(amax, std::fabs(xt[i]));
        for (int64_t i = b; i < b + ablock; ++i) err[static_cast<size_t>(i)] = act_error_bound(at, xt[i], amax);
      }
      for (int64_t r = 0; r < p.n_rows; ++r) {
        const float* wr = &p.wd[static_cast<size_t>(r * p.n)];
        double want = 0.0, bound = 0.0;
        for (int64_t i = 0; i < p.n; ++i) {
          want += static_cast<double>(wr[i]) * xt[i];
          bound += std::fabs(wr[i]) * err[static_cast<size_t>(i)];
        }
        bound += 1e-5 * abs_dot(wr, xt, p.n) + 1e-30;
        const float got = y[static_cast<size_t>(t * p.n_rows + r)];
        ASSERT_NEAR(got, want, bound) << type_name(type_) << " r=" << r << " t=" << t;
      }
    }
  }
}

// 7 tokens take gemm, 29 take gemm_rows where the table has it (Q4_K's rows_min_tokens is 8).
TEST_P(MatmulTest, MatchesRefTier) {
  for (int64_t n_tok : {7, 29}) {
    SCOPED_TRACE(n_tok);
    expect_matches_ref_tier(n_tok);
  }
}

void MatmulTest::expect_matches_ref_tier(int64_t n_tok) {
  ThreadPool pool(1);
  ActBuffer buf, buf_ref;
  Problem p = make_problem(type_, unit_ * 5, 29, n_tok, 33, Cond::kIll);
  std::vector<float> y(static_cast<size_t>(p.n_rows * p.n_tok), nan_f()), y_ref(y);
  matmul(p.w, p.x.data(), y.data(), p.n_tok, buf, pool, tier_);
  matmul(p.w, p.x.data(), y_ref.data(), p.n_tok, buf_ref, pool, IsaTier::kRef);
  const GgmlType at = vec_dot_type(type_);
  for (int64_t t = 0; t < p.n_tok; ++t) {
    // The activations are quantized identically at every tier (byte-identical quantizers).
    std::vector<uint8_t> aq =
        quantize_rows(at, std::vector<float>(p.x.begin() + t * p.n, p.x.begin() + (t + 1) * p.n), p.n, 1);
    const auto ad = dequantize_rows(at, aq.data(), p.n, 1);
    for (int64_t r = 0; r < p.n_rows; ++r) {
      const double tol =
          2e-6 * std::sqrt(static_cast<double>(p.n)) * abs_dot(&p.wd[static_cast<size_t>(r * p.n)], ad.data(), p.n) +
          1e-30;
      const size_t i = static_cast<size_t>(t * p.n_rows + r);
      ASSERT_NEAR(y[i], y_ref[i], tol) << type_name(type_) << " r=" << r << " t=" << t;
    }
  }
}

TEST_P(MatmulTest, ThreadCountsGiveBitwiseIdenticalResults) {
  ThreadPool pool1(1), pool2(2);
  ActBuffer buf1, buf2;
  for (int64_t n_tok : {1, 7, 29}) {
    Problem p = make_problem(type_, unit_ * 2, 133, n_tok, 44, Cond::kWell);
    std::vector<float> y1(static_cast<size_t>(p.n_rows * n_tok), nan_f()), y2(y1);
    matmul(p.w, p.x.data(), y1.data(), n_tok, buf1, pool1, tier_);
    matmul(p.w, p.x.data(), y2.data(), n_tok, buf2, pool2, tier_);
    for (float v : y1) ASSERT_FALSE(std::isnan(v));
    ASSERT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)), 0) << "n_tok=" << n_tok;
  }
}

TEST_P(MatmulTest, MultiGivesBitwiseWhatSeparateCallsGive) {
  // Jobs of different shapes and token counts in one pass (as a decode step runs its experts),
  // on 1 and 2 threads, against one matmul_q per job.
  for (MatmulOrder order : {MatmulOrder::kVecDot, MatmulOrder::kAuto}) {
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      std::vector<Problem> problems;
      problems.push_back(make_problem(type_, unit_ * 2, 77, 1, 51, Cond::kWell));
      problems.push_back(make_problem(type_, unit_ * 2, 5, 1, 52, Cond::kIll));
      problems.push_back(make_problem(type_, unit_ * 3, 64, 3, 53, Cond::kWell));
      problems.push_back(make_problem(type_, unit_ * 2, 40, 26, 54, Cond::kIll));
      std::vector<ActBuffer> bufs(problems.size());
      std::vector<MatmulJob> jobs;
      std::vector<std::vector<float>> got, want;
      for (size_t i = 0; i < problems.size(); ++i) {
        const Problem& p = problems[i];
        const QuantizedActs act =
            quantize_acts(vec_dot_type(type_), p.x.data(), p.n, p.n_tok, p.n, bufs[i], pool, tier_);
        got.emplace_back(static_cast<size_t>(p.n_rows * p.n_tok), nan_f());
        want.emplace_back(static_cast<size_t>(p.n_rows * p.n_tok), nan_f());
        matmul_q(p.w, act, want.back().data(), p.n_rows, pool, tier_, order);
        jobs.push_back({&problems[i].w, act, got.back().data(), p.n_rows});
      }
      matmul_q_multi(jobs, pool, tier_, order);
      for (size_t i = 0; i < problems.size(); ++i) {
        for (float v : got[i]) ASSERT_FALSE(std::isnan(v)) << "job " << i << " left an output unwritten";
        ASSERT_EQ(std::memcmp(got[i].data(), want[i].data(), got[i].size() * sizeof(float)), 0)
            << "job " << i << " threads=" << threads;
      }
    }
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return type_name(std::get<0>(info.param)) + "_" + isa_tier_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulTest,
                         ::testing::Combine(::testing::ValuesIn(kWeightTypes), ::testing::ValuesIn(kAllTiers)),
                         param_name);

// matmul_widened is matmul bit for bit at every tier: F16 weights on the widened path (rows in
// several chunks, token counts with partial register blocks, 1 and 2 threads) and the shapes it
// hands to matmul (rows not a multiple of 4, n not one of 16, one token, other weight types).
class MatmulWidenedTest : public ::testing::TestWithParam<IsaTier> {};

TEST_P(MatmulWidenedTest, EqualsMatmulBitwise) {
  const IsaTier tier = GetParam();
  if (!host_has(tier)) GTEST_SKIP() << "host lacks tier " << isa_tier_name(tier);
  struct Shape {
    GgmlType type;
    int64_t n, n_rows, n_tok;
  };
  const Shape shapes[] = {{GgmlType::kF16, 64, 132, 29}, {GgmlType::kF16, 48, 40, 7},  {GgmlType::kF16, 96, 8, 2},
                          {GgmlType::kF16, 64, 37, 9},   {GgmlType::kF16, 40, 12, 5},  {GgmlType::kF16, 64, 16, 1},
                          {GgmlType::kF32, 64, 20, 6},   {GgmlType::kQ8_0, 64, 12, 5}, {GgmlType::kF16, 4096, 12, 3}};
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    ActBuffer buf, buf_want;
    for (const Shape& sh : shapes) {
      if (!is_supported_weight_type(sh.type)) continue;
      SCOPED_TRACE(::testing::Message() << type_name(sh.type) << " n=" << sh.n << " rows=" << sh.n_rows
                                        << " tok=" << sh.n_tok << " threads=" << threads);
      Problem p = make_problem(sh.type, sh.n, sh.n_rows, sh.n_tok, 71, Cond::kIll);
      std::vector<float> got(static_cast<size_t>(p.n_rows * p.n_tok), nan_f()), want(got);
      matmul_widened(p.w, p.x.data(), got.data(), p.n_tok, buf, pool, tier);
      matmul(p.w, p.x.data(), want.data(), p.n_tok, buf_want, pool, tier);
      for (float v : got) ASSERT_FALSE(std::isnan(v));
      ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTiers, MatmulWidenedTest, ::testing::ValuesIn(kAllTiers),
                         [](const ::testing::TestParamInfo<IsaTier>& info) { return isa_tier_name(info.param); });

TEST(ActBufferTest, ReserveIsAlignedAndGrows) {
  ActBuffer buf;
  EXPECT_EQ(buf.capacity(), 0u);
  for (size_t bytes : {1u, 100u, 4096u, 10u}) {
    uint8_t* p = buf.reserve(bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % ActBuffer::kAlignment, 0u);
    EXPECT_GE(buf.capacity(), bytes);
    std::memset(p, 0x5A, bytes);  // ASan checks the span is really ours
  }
}

TEST(QuantizeActsTest, StridedRowsMatchRowByRowQuantization) {
  if (!is_supported_weight_type(GgmlType::kQ8_0)) GTEST_SKIP() << "q8_0 not available yet";
  ThreadPool pool(2);
  ActBuffer buf;
  const int64_t n = 64, n_tok = 5, stride = 80;
  const auto x = random_floats(stride * n_tok, 9, Cond::kWell);
  const QuantizedActs act = quantize_acts(GgmlType::kQ8_0, x.data(), n, n_tok, stride, buf, pool);
  ASSERT_EQ(act.row_bytes, row_bytes(GgmlType::kQ8_0, n));
  for (int64_t t = 0; t < n_tok; ++t) {
    std::vector<uint8_t> want(act.row_bytes);
    quantize_row_ref(GgmlType::kQ8_0, x.data() + t * stride, want.data(), n);
    ASSERT_EQ(std::memcmp(act.data + act.row_bytes * t, want.data(), act.row_bytes), 0) << "t=" << t;
  }
}

}  // namespace
}  // namespace sniper::test
