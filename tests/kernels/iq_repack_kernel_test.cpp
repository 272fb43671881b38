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
