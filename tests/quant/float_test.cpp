// SPDX-License-Identifier: MIT
// Exhaustive tests of the half / bfloat16 conversions (all 65536 codes each) against
// independent references, and of the F32/F16/BF16 reference dot products.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "quant/float.h"
#include "quant/quant.h"
#include "quant/quant_test_util.h"

namespace sniper {
namespace {

// Independent decoder: value = (-1)^s * 2^(e-15) * (1 + m/1024), subnormals 2^-14 * m/1024.
double fp16_reference_value(uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  double v;
  if (e == 0) {
    v = std::ldexp(static_cast<double>(m), -24);
  } else if (e == 31) {
    v = m == 0 ? INFINITY : NAN;
  } else {
    v = std::ldexp(1.0 + m / 1024.0, e - 15);
  }
  return sign ? -v : v;
}

bool fp16_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool bf16_is_nan(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0; }

TEST(Fp16, DecodeMatchesReferenceForAllCodes) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16_to_fp32(static_cast<fp16_t>(h));
    const double ref = fp16_reference_value(static_cast<uint16_t>(h));
    if (std::isnan(ref)) {
      EXPECT_TRUE(std::isnan(f)) << "code 0x" << std::hex << h;
    } else {
      ASSERT_EQ(static_cast<double>(f), ref) << "code 0x" << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << "code 0x" << std::hex << h;
    }
  }
}

TEST(Fp16, RoundTripIsIdentityForAllNonNaNCodes) {
  int n_nan = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const fp16_t code = static_cast<fp16_t>(h);
    const float f = fp16_to_fp32(code);
    if (fp16_is_nan(code)) {
      ++n_nan;
      EXPECT_TRUE(fp16_is_nan(fp32_to_fp16(f))) << "NaN 0x" << std::hex << h << " lost";
      continue;
    }
    ASSERT_EQ(fp32_to_fp16(f), code) << "code 0x" << std::hex << h;
  }
  EXPECT_EQ(n_nan, 2 * 1023);
}

// For each pair of adjacent finite codes of the same sign, the exact midpoint rounds to the
// one with an even mantissa, and the floats just inside it round to the nearer code.
TEST(Fp16, MidpointsRoundToNearestEven) {
  for (uint32_t sign = 0; sign < 2; ++sign) {
    for (uint32_t mag = 0; mag < 0x7c00; ++mag) {  // every finite magnitude; mag+1 may be inf
      const fp16_t lo = static_cast<fp16_t>((sign << 15) | mag);
      const fp16_t hi = static_cast<fp16_t>((sign << 15) | (mag + 1));
      const double a = fp16_reference_value(lo);
      // Past the largest finite value the "next" code is inf; rounding treats it as 2^16.
      const double b = mag + 1 == 0x7c00 ? (sign ? -65536.0 : 65536.0) : fp16_reference_value(hi);
      const float mid = static_cast<float>((a + b) / 2);  // exact: 12 significant bits
      ASSERT_EQ(static_cast<double>(mid), (a + b) / 2);
      const fp16_t even = (lo & 1) == 0 ? lo : hi;
      ASSERT_EQ(fp32_to_fp16(mid), even) << "midpoint of 0x" << std::hex << lo;
      const float toward_lo = std::nextafter(mid, static_cast<float>(a));
      const float toward_hi = std::nextafter(mid, sign ? -INFINITY : INFINITY);
      ASSERT_EQ(fp32_to_fp16(toward_lo), lo) << "below midpoint of 0x" << std::hex << lo;
      ASSERT_EQ(fp32_to_fp16(toward_hi), hi) << "above midpoint of 0x" << std::hex << lo;
    }
  }
}

TEST(Fp16, SpecialValues) {
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(65519.99f), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(-INFINITY), 0xfc00);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(1e-10f), 0x0000);                 // below half the smallest subnormal
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie with 0 -> even (0)
  EXPECT_EQ(fp32_to_fp16(std::ldexp(3.0f, -25)), 0x0002);  // tie 1.5 ulp -> even (2)
  EXPECT_TRUE(fp16_is_nan(fp32_to_fp16(NAN)));
}

double bf16_reference_value(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;  // bf16 is by definition the top half of a float
}

TEST(Bf16, RoundTripIsIdentityForAllNonNaNCodes) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const bf16_t code = static_cast<bf16_t>(h);
    const float f = bf16_to_fp32(code);
    if (bf16_is_nan(code)) {
      EXPECT_TRUE(std::isnan(f));
      EXPECT_TRUE(bf16_is_nan(fp32_to_bf16(f))) << "NaN 0x" << std::hex << h << " lost";
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), bf16_reference_value(code));
    ASSERT_EQ(fp32_to_bf16(f), code) << "code 0x" << std::hex << h;
  }
}

TEST(Bf16, MidpointsRoundToNearestEven) {
  for (uint32_t sign = 0; sign < 2; ++sign) {
    for (uint32_t mag = 0; mag < 0x7f7f; ++mag) {  // both codes finite
      const bf16_t lo = static_cast<bf16_t>((sign << 15) | mag);
      const bf16_t hi = static_cast<bf16_t>((sign << 15) | (mag + 1));
      const double a = bf16_reference_value(lo);
      const double b = bf16_reference_value(hi);
      const float mid = static_cast<float>((a + b) / 2);
      ASSERT_EQ(static_cast<double>(mid), (a + b) / 2);
      const bf16_t even = (lo & 1) == 0 ? lo : hi;
      ASSERT_EQ(fp32_to_bf16(mid), even) << "midpoint of 0x" << std::hex << lo;
      ASSERT_EQ(fp32_to_bf16(std::nextafter(mid, static_cast<float>(a))), lo);
      ASSERT_EQ(fp32_to_bf16(std::nextafter(mid, sign ? -INFINITY : INFINITY)), hi);
    }
  }
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds up to inf
}

TEST(FloatRows, QuantizeDequantizeAndGenericDispatchAgree) {
  const std::vector<float> x = testing::random_normal(1000, 7);
  std::vector<fp16_t> h(x.size());
  std::vector<bf16_t> b(x.size());
  quantize_row_f16_ref(x.data(), h.data(), 1000);
  quantize_row_bf16_ref(x.data(), b.data(), 1000);
  std::vector<float> yh(x.size());
  std::vector<float> yb(x.size());
  std::vector<float> yf(x.size());
  dequantize_row_f16_ref(h.data(), yh.data(), 1000);
  dequantize_row_bf16_ref(b.data(), yb.data(), 1000);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(h[i], fp32_to_fp16(x[i]));
    ASSERT_EQ(b[i], fp32_to_bf16(x[i]));
    ASSERT_EQ(yh[i], fp16_to_fp32(h[i]));
    ASSERT_EQ(yb[i], bf16_to_fp32(b[i]));
    ASSERT_LE(std::fabs(yh[i] - x[i]), std::fabs(x[i]) * 0x1p-11f + 0x1p-25f);
    ASSERT_LE(std::fabs(yb[i] - x[i]), std::fabs(x[i]) * 0x1p-8f);
  }
  std::vector<fp16_t> h2(x.size());
  quantize_row_ref(GgmlType::kF16, x.data(), h2.data(), 1000);
  EXPECT_EQ(h, h2);
  quantize_row_ref(GgmlType::kF32, x.data(), yf.data(), 1000);
  EXPECT_EQ(yf, x);
}

TEST(FloatRows, DotProductsMatchDoubleReference) {
  for (const int64_t n : {1, 7, 64, 1000, 4096}) {
    const std::vector<float> w = testing::random_normal(static_cast<size_t>(n), 11);
    const std::vector<float> a = testing::random_normal(static_cast<size_t>(n), 12);
    std::vector<fp16_t> wh(w.size());
    std::vector<fp16_t> ah(a.size());
    std::vector<bf16_t> wb(w.size());
    std::vector<bf16_t> ab(a.size());
    quantize_row_f16_ref(w.data(), wh.data(), n);
    quantize_row_f16_ref(a.data(), ah.data(), n);
    quantize_row_bf16_ref(w.data(), wb.data(), n);
    quantize_row_bf16_ref(a.data(), ab.data(), n);
    std::vector<float> wh_f(w.size()), ah_f(a.size()), wb_f(w.size()), ab_f(a.size());
    dequantize_row_f16_ref(wh.data(), wh_f.data(), n);
    dequantize_row_f16_ref(ah.data(), ah_f.data(), n);
    dequantize_row_bf16_ref(wb.data(), wb_f.data(), n);
    dequantize_row_bf16_ref(ab.data(), ab_f.data(), n);
    // Float accumulation of n terms: error <= n * eps * sum |w_i a_i| (a loose but sound bound).
    auto bound = [n](const std::vector<float>& p, const std::vector<float>& q) {
      double s = 0;
      for (size_t i = 0; i < p.size(); ++i) s += std::fabs(static_cast<double>(p[i]) * q[i]);
      return static_cast<double>(n) * 0x1p-24 * s;
    };
    EXPECT_NEAR(vec_dot_f32_ref(n, w.data(), a.data()), testing::dot_f64(w.data(), a.data(), w.size()), bound(w, a));
    EXPECT_NEAR(vec_dot_f16_ref(n, wh.data(), ah.data()), testing::dot_f64(wh_f.data(), ah_f.data(), w.size()),
                bound(wh_f, ah_f));
    EXPECT_NEAR(vec_dot_bf16_ref(n, wb.data(), ab.data()), testing::dot_f64(wb_f.data(), ab_f.data(), w.size()),
                bound(wb_f, ab_f));
    EXPECT_EQ(vec_dot_ref(GgmlType::kF16, n, wh.data(), ah.data()), vec_dot_f16_ref(n, wh.data(), ah.data()));
    EXPECT_EQ(vec_dot_ref(GgmlType::kBF16, n, wb.data(), ab.data()), vec_dot_bf16_ref(n, wb.data(), ab.data()));
  }
}

}  // namespace
}  // namespace sniper
