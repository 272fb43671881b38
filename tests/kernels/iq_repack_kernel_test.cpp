// SPDX-License-Identifier: MIT
// The repacked i-quant layouts through every kernel tier: random blocks of each source type
// (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, TQ1_0) are repacked and multiplied by each host tier's
// vec_dot and gemm (1..9 tokens, rows off every tile), and every output must equal the source
// type's `_ref` dot product bit for bit, which is what a model gets without the repack. The
// AVX-512 tier is also built without its AVX512_VBMI kernels (as on a host without VBMI) and
// checked the same way, so both builds of x86/dot_iq_repacked512.h (and of the file layouts'
// x86/dot_iquants512.h) are tested on a VBMI host.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "kernels/kernel_registry.h"
#include "kernels/kernel_test_util.h"
#include "quant/iq_repack.h"

namespace sniper::test {
namespace {

constexpr GgmlType kSources[] = {GgmlType::kIQ2_XXS, GgmlType::kIQ2_XS, GgmlType::kIQ2_S, GgmlType::kIQ3_XXS,
                                 GgmlType::kIQ3_S,   GgmlType::kIQ1_S,  GgmlType::kIQ1_M, GgmlType::kTQ1_0};

// The AVX-512 table of `type` as a host without AVX512_VBMI builds it: the dispatch record's
// steps (kernels/dispatch.cpp) with that feature cleared.
KernelTable avx512_without_vbmi(GgmlType type) {
  CpuFeatures features = cpu_features();
  features.avx512vbmi = false;
  auto set = std::make_unique<KernelSet>();
  kernels_internal::fill_ref_set(*set);
  kernels_internal::patch_arch_tier(IsaTier::kAvx2, features, *set);
  kernels_internal::patch_arch_tier(IsaTier::kAvx512, features, *set);
  EXPECT_TRUE(set->present[static_cast<size_t>(type)]);
  return set->weights[static_cast<size_t>(type)];
}

void check_table(const KernelTable& k, GgmlType source, const char* what) {
  std::mt19937 rng(7 + static_cast<uint32_t>(source));
  for (int64_t nb : {1, 3, 8}) {
    const int64_t n = 256 * nb;
    for (int64_t n_rows : {1, 5, 13}) {
      for (int64_t n_tok : {1, 2, 5, 9}) {
        const auto src = quantize_rows(source, random_floats(n * n_rows, rng(), Cond::kWell, 256), n, n_rows);
        const GgmlType to = repacked_type(source);
        const size_t srb = row_bytes(source, n), rrb = row_bytes(to, n);
        std::vector<uint8_t> rp(rrb * static_cast<size_t>(n_rows));
        for (int64_t r = 0; r < n_rows; ++r) repack_row(source, src.data() + srb * r, rp.data() + rrb * r, n);
        const auto a = quantize_rows(GgmlType::kQ8_K, random_floats(n * n_tok, rng(), Cond::kIll, 256), n, n_tok);
        const size_t arb = row_bytes(GgmlType::kQ8_K, n);
        std::vector<float> out(static_cast<size_t>(n_rows * n_tok), nan_f());
        k.gemm(n, n_rows, n_tok, rp.data(), rrb, a.data(), arb, out.data(), n_rows);
        for (int64_t t = 0; t < n_tok; ++t) {
          for (int64_t r = 0; r < n_rows; ++r) {
            const float want = vec_dot_ref(source, n, src.data() + srb * r, a.data() + arb * t);
            ASSERT_EQ(bits(out[static_cast<size_t>(t * n_rows + r)]), bits(want))
                << what << " " << type_name(source) << " n=" << n << " rows=" << n_rows << " tok=" << n_tok
                << " r=" << r << " t=" << t;
            if (t == 0) {
              float got = nan_f();
              k.vec_dot(n, &got, rp.data() + rrb * r, a.data());
              ASSERT_EQ(bits(got), bits(want)) << what << " vec_dot " << type_name(source) << " r=" << r;
            }
          }
        }
      }
    }
  }
}

TEST(IqRepackKernels, EveryTierEqualsTheSourceRef) {
  for (IsaTier tier : kAllTiers) {
    if (!host_has(tier)) continue;
    for (GgmlType source : kSources) {
      const KernelTable* k = find_kernels(repacked_type(source), tier);
      ASSERT_NE(k, nullptr);
      check_table(*k, source, isa_tier_name(tier));
      if (HasFatalFailure()) return;
    }
  }
}

TEST(IqRepackKernels, Avx512WithoutVbmiEqualsTheSourceRef) {
  if (!host_has(IsaTier::kAvx512)) GTEST_SKIP() << "no AVX-512";
  for (GgmlType source : kSources) {
    const KernelTable k = avx512_without_vbmi(repacked_type(source));
    if (cpu_features().avx512vbmi && source != GgmlType::kTQ1_0) {
      EXPECT_NE(k.vec_dot, find_kernels(repacked_type(source), IsaTier::kAvx512)->vec_dot)
          << "the VBMI build should replace " << type_name(repacked_type(source));
    }
    check_table(k, source, "avx512 without vbmi");
    if (HasFatalFailure()) return;
  }
}

// Blocks at the bounds of the one-token matvec (x86/matvec_iq_repacked512.h), which keeps two
// pairs' sums of 4 products in 16-bit words: every code at the largest magnitude, every scale 31,
// activations +-127 and every sign set so that all products share one sign (the 4-product sums
// at +-4 * 62 * 127 for IQ3_XXS_RP, 4 * 43 * 127 for IQ2_RP). Each tier's gemm (one token through
// the matvec, three through the tiles) must equal the `_ref` twins bit for bit; rows of 129
// super-blocks (past what the matvec lays out) go through the dot kernels and must too.
TEST(IqRepackKernels, ExtremeBlocksEqualRef) {
  std::mt19937 rng(5);
  for (GgmlType type : {GgmlType::kIQ2_RP, GgmlType::kIQ3_XXS_RP, GgmlType::kIQ3_S_RP}) {
    for (int64_t nb : {2, 129}) {
      for (int product_sign : {1, -1}) {
        const int64_t n = 256 * nb, n_rows = 3, n_tok = 3;
        std::vector<BlockQ8_K> a(static_cast<size_t>(nb * n_tok));
        for (BlockQ8_K& q : a) {
          q.d = 0.75f;
          for (int e = 0; e < 256; ++e) q.qs[e] = static_cast<int8_t>(rng() % 2 ? 127 : -127);
          for (int g = 0; g < 16; ++g) {
            int sum = 0;
            for (int e = 16 * g; e < 16 * g + 16; ++e) sum += q.qs[e];
            q.bsums[g] = static_cast<int16_t>(sum);
          }
        }
        // Element e of block i is negative where token 0's activation times product_sign is.
        auto negative = [&](int64_t i, int e) { return (a[static_cast<size_t>(i)].qs[e] < 0) == (product_sign > 0); };
        const size_t rb = row_bytes(type, n);
        std::vector<uint8_t> w(rb * static_cast<size_t>(n_rows));
        for (int64_t r = 0; r < n_rows; ++r) {
          for (int64_t i = 0; i < nb; ++i) {
            uint8_t* blk =
                w.data() + rb * static_cast<size_t>(r) + (rb / static_cast<size_t>(nb)) * static_cast<size_t>(i);
            if (type == GgmlType::kIQ2_RP) {
              BlockIQ2_RP b{};
              b.d = fp32_to_fp16(0.5f + 0.25f * static_cast<float>(r));
              std::memset(b.scales, 0xff, sizeof(b.scales));
              std::memset(b.qs, 0xaa, sizeof(b.qs));  // code 2 (43) for all four pairs
              for (int e = 0; e < 256; ++e) {
                if (negative(i, e)) b.signs[e / 8] |= static_cast<uint8_t>(1u << (e % 8));
              }
              std::memcpy(blk, &b, sizeof(b));
            } else {
              BlockIQ3_RP b{};
              b.d = fp32_to_fp16(0.5f + 0.25f * static_cast<float>(r));
              std::memset(b.scales, 0xff, sizeof(b.scales));
              for (int h = 0; h < 2; ++h) {
                for (int m = 0; m < 64; ++m) {
                  const int lo = 7 | (negative(i, 128 * h + m) ? 8 : 0);
                  const int hi = 7 | (negative(i, 128 * h + 64 + m) ? 8 : 0);
                  b.qs[64 * h + m] = static_cast<uint8_t>(lo | hi << 4);
                }
              }
              std::memcpy(blk, &b, sizeof(b));
            }
          }
        }
        const size_t arb = row_bytes(GgmlType::kQ8_K, n);
        for (IsaTier tier : kAllTiers) {
          if (!host_has(tier)) continue;
          const KernelTable* k = find_kernels(type, tier);
          ASSERT_NE(k, nullptr);
          for (int64_t tokens : {int64_t{1}, n_tok}) {
            std::vector<float> out(static_cast<size_t>(n_rows * tokens), nan_f());
            k->gemm(n, n_rows, tokens, w.data(), rb, a.data(), arb, out.data(), n_rows);
            for (int64_t t = 0; t < tokens; ++t) {
              for (int64_t r = 0; r < n_rows; ++r) {
                const float want =
                    vec_dot_ref(type, n, w.data() + rb * static_cast<size_t>(r),
                                reinterpret_cast<const uint8_t*>(a.data()) + arb * static_cast<size_t>(t));
                ASSERT_EQ(bits(out[static_cast<size_t>(t * n_rows + r)]), bits(want))
                    << isa_tier_name(tier) << " " << type_name(type) << " nb=" << nb << " sign=" << product_sign
                    << " tokens=" << tokens << " r=" << r << " t=" << t;
              }
            }
          }
        }
      }
    }
  }
}

// The file layouts whose AVX-512 kernels have a VBMI build (signs by vpermi2b): without it, as
// on a host without VBMI, every output is still the ref tier's, bit for bit.
TEST(IqRepackKernels, Avx512WithoutVbmiFileLayoutsEqualRef) {
  if (!host_has(IsaTier::kAvx512)) GTEST_SKIP() << "no AVX-512";
  for (GgmlType type :
       {GgmlType::kIQ2_XXS, GgmlType::kIQ2_XS, GgmlType::kIQ2_S, GgmlType::kIQ3_XXS, GgmlType::kIQ3_S}) {
    const KernelTable k = avx512_without_vbmi(type);
    const KernelTable* ref = find_kernels(type, IsaTier::kRef);
    std::mt19937 rng(11 + static_cast<uint32_t>(type));
    for (int64_t nb : {1, 3}) {
      const int64_t n = 256 * nb, n_rows = 7, n_tok = 9;
      const auto w = quantize_rows(type, random_floats(n * n_rows, rng(), Cond::kWell, 256), n, n_rows);
      const auto a = quantize_rows(GgmlType::kQ8_K, random_floats(n * n_tok, rng(), Cond::kIll, 256), n, n_tok);
      const size_t wrb = row_bytes(type, n), arb = row_bytes(GgmlType::kQ8_K, n);
      std::vector<float> got(static_cast<size_t>(n_rows * n_tok), nan_f()), want(got);
      k.gemm(n, n_rows, n_tok, w.data(), wrb, a.data(), arb, got.data(), n_rows);
      ref->gemm(n, n_rows, n_tok, w.data(), wrb, a.data(), arb, want.data(), n_rows);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(bits(got[i]), bits(want[i])) << type_name(type) << " n=" << n << " i=" << i;
      }
    }
  }
}

}  // namespace
}  // namespace sniper::test
