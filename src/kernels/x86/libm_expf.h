// SPDX-License-Identifier: MIT
// The expf of glibc (2.28 and later; the __expf_fma variant x86-64 selects on FMA hosts) on four
// lanes, for arguments in (-88, 0], so that a vector loop gives the bits of the libm expf calls
// of the reference engine's scalar loops. The algorithm, all in double, rounded to float once:
//   x * 32/ln2 = k + r: kd = fma(32/ln2, x, 0x1.8p52) rounds to an integer k in its low mantissa
//   bits (k = kd's bits), kd -= 0x1.8p52, r = fma(32/ln2, x, -kd);
//   2^(k/32) = table[k % 32] with k's high bits added to the exponent field (k << 47);
//   2^(r/32) ~= (C0 r + C1) r^2 + (C2 r + 1) in fused multiply-adds; times 2^(k/32).
// The table holds 2^(i/32) as doubles minus i << 47 (so that adding k << 47 lands the exponent);
// C0..C2 are the minimax cubic of 2^(r/32). This was checked bit for bit against this machine's
// expf over every float in (-88, 0] (1.1e9 values) when it was written (with a separate rounding
// of x * 32/ln2 instead, one value differs). Because another libm could round differently,
// libm_expf_matches() compares it with std::exp on a spread of arguments at first use, and
// exp_args() falls back to std::exp everywhere when it does not match, and per lane for arguments
// outside (-88, 0] (NaN, -inf, underflow: glibc's special cases).
// Include only from a translation unit compiled with AVX2 and FMA.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace sniper::x86 {
namespace {

alignas(32) inline constexpr uint64_t kExp2Table[32] = {
    0x3ff0000000000000ULL, 0x3fefd9b0d3158574ULL, 0x3fefb5586cf9890fULL, 0x3fef9301d0125b51ULL, 0x3fef72b83c7d517bULL,
    0x3fef54873168b9aaULL, 0x3fef387a6e756238ULL, 0x3fef1e9df51fdee1ULL, 0x3fef06fe0a31b715ULL, 0x3feef1a7373aa9cbULL,
    0x3feedea64c123422ULL, 0x3feece086061892dULL, 0x3feebfdad5362a27ULL, 0x3feeb42b569d4f82ULL, 0x3feeab07dd485429ULL,
    0x3feea47eb03a5585ULL, 0x3feea09e667f3bcdULL, 0x3fee9f75e8ec5f74ULL, 0x3feea11473eb0187ULL, 0x3feea589994cce13ULL,
    0x3feeace5422aa0dbULL, 0x3feeb737b0cdc5e5ULL, 0x3feec49182a3f090ULL, 0x3feed503b23e255dULL, 0x3feee89f995ad3adULL,
    0x3feeff76f2fb5e47ULL, 0x3fef199bdd85529cULL, 0x3fef3720dcef9069ULL, 0x3fef5818dcfba487ULL, 0x3fef7c97337b9b5fULL,
    0x3fefa4afa2a490daULL, 0x3fefd0765b6e4540ULL,
};

// expf of four arguments in (-88, 0] (others: unspecified lanes).
inline __m128 expf4_in_range(__m128 x) {
  const __m256d inv_ln2_32 = _mm256_set1_pd(0x1.71547652b82fep+0 * 32);
  const __m256d shift = _mm256_set1_pd(0x1.8p+52);
  const __m256d xd = _mm256_cvtps_pd(x);
  __m256d kd = _mm256_fmadd_pd(inv_ln2_32, xd, shift);
  const __m256i ki = _mm256_castpd_si256(kd);
  kd = _mm256_sub_pd(kd, shift);
  const __m256d r = _mm256_fmsub_pd(inv_ln2_32, xd, kd);
  const __m256i idx = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
  __m256i t = _mm256_i64gather_epi64(reinterpret_cast<const long long*>(kExp2Table), idx, 8);
  t = _mm256_add_epi64(t, _mm256_slli_epi64(ki, 47));
  const __m256d s = _mm256_castsi256_pd(t);
  const __m256d z = _mm256_fmadd_pd(_mm256_set1_pd(0x1.c6af84b912394p-5 / (32.0 * 32 * 32)), r,
                                    _mm256_set1_pd(0x1.ebfce50fac4f3p-3 / (32.0 * 32)));
  const __m256d r2 = _mm256_mul_pd(r, r);
  __m256d y = _mm256_fmadd_pd(_mm256_set1_pd(0x1.62e42ff0c52d6p-1 / 32), r, _mm256_set1_pd(1.0));
  y = _mm256_fmadd_pd(z, r2, y);
  y = _mm256_mul_pd(y, s);
  return _mm256_cvtpd_ps(y);
}

// Whether expf4_in_range gives std::exp's bits on a spread of arguments over (-88, 0] (among
// them one that tells the fused from a separately rounded x * 32/ln2).
inline bool libm_expf_matches() {
  alignas(16) float x[4], y[4];
  for (int i = 0; i < 4096; ++i) {
    for (int j = 0; j < 4; ++j) {
      const int k = 4 * i + j;
      x[j] = k == 0 ? -0x1.f8cbb2p+5f : -87.99f * static_cast<float>(k) / 16384.0f - 1e-7f * static_cast<float>(k % 7);
    }
    _mm_store_ps(y, expf4_in_range(_mm_load_ps(x)));
    for (int j = 0; j < 4; ++j) {
      const float want = std::exp(x[j]);
      if (std::memcmp(&want, &y[j], sizeof(float)) != 0) return false;
    }
  }
  return true;
}

// x[i] = std::exp(x[i]) for i < n, bit for bit, four lanes at a time where they allow it.
inline void exp_args(float* x, int64_t n) {
  static const bool vec_ok = libm_expf_matches();
  int64_t i = 0;
  if (vec_ok) {
    const __m128 lo = _mm_set1_ps(-88.0f), zero = _mm_setzero_ps();
    for (; i + 4 <= n; i += 4) {
      const __m128 v = _mm_loadu_ps(x + i);
      const __m128 ok = _mm_and_ps(_mm_cmp_ps(v, lo, _CMP_GT_OQ), _mm_cmp_ps(v, zero, _CMP_LE_OQ));
      const int ok_bits = _mm_movemask_ps(ok);
      alignas(16) float arg[4];
      _mm_store_ps(arg, v);
      _mm_storeu_ps(x + i, expf4_in_range(v));
      for (int j = 0; ok_bits != 0xf && j < 4; ++j) {
        if ((ok_bits >> j & 1) == 0) x[i + j] = std::exp(arg[j]);
      }
    }
  }
  for (; i < n; ++i) x[i] = std::exp(x[i]);
}

}  // namespace
}  // namespace sniper::x86
