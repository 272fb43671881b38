// SPDX-License-Identifier: MIT
// Kernel microbenchmark: decode-style matvec (1 token) reported as achieved weight bandwidth
// (GB/s), and prefill-style gemm (64 tokens) reported as GFLOP/s, per weight type, thread count
// and ISA tier, next to a memcpy roofline. Plain wall-clock timing (best of several runs).
// Usage: kernel_bench [n=4096] [rows=14336] [threads=1,2] [types=q4_0,q8_0,...,iq2_s,iq3_xxs,...] [tiers=ref,avx2,avx512]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"
#include "base/cpu_features.h"
#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "kernels/matmul.h"
#include "kernels/tensor.h"
#include "quant/block_scale.h"
#include "quant/quant.h"

namespace sniper {
namespace {

using bench::now_s;
using bench::split_list;

// Best time over `reps` runs of fn (after one warm-up run).
template <class F>
double best_time(int reps, F&& fn) {
  fn();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const double t0 = now_s();
    fn();
    best = std::min(best, now_s() - t0);
  }
  return best;
}

const GgmlTypeInfo* type_by_name(const std::string& name) {
  for (uint32_t i = 0; i < 64; ++i) {
    const GgmlTypeInfo* info = find_type_info(i);
    if (info != nullptr && name == info->name) return info;
  }
  return nullptr;
}

int run(int argc, char** argv) {
  int64_t n = 4096, rows = 14336;
  std::string threads_arg = "1,2", types_arg = "q4_0,q8_0,q4_K,q5_K,q6_K,q3_K,q2_K,iq4_xs,f16,bf16,iq2_xxs,iq2_xs,iq2_s,iq3_xxs,iq3_s,iq1_s,iq1_m,tq1_0,tq2_0";
  std::string tiers_arg = isa_tier_name(host_best_tier());
  if (argc > 1) n = std::atoll(argv[1]);
  if (argc > 2) rows = std::atoll(argv[2]);
  if (argc > 3) threads_arg = argv[3];
  if (argc > 4) types_arg = argv[4];
  if (argc > 5) tiers_arg = argv[5];
  if (n <= 0 || n % 256 != 0 || rows <= 0) {
    std::fprintf(stderr, "n=%lld must be a positive multiple of 256 and rows=%lld positive\n",
                 static_cast<long long>(n), static_cast<long long>(rows));
    return 2;
  }
  constexpr int64_t kPrefillTokens = 64;
  std::vector<float> x(static_cast<size_t>(n * kPrefillTokens));
  uint32_t s = 12345;
  for (float& v : x) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<int32_t>(s >> 8) % 2001 - 1000) / 1000.0f;
  }
  std::printf("host tier %s, n=%lld rows=%lld\n", isa_tier_name(host_best_tier()), static_cast<long long>(n),
              static_cast<long long>(rows));
  for (const std::string& tn : split_list(threads_arg)) {
    const int n_threads = std::atoi(tn.c_str());
    ThreadPool pool(n_threads);
    // memcpy roofline: n_threads threads each copying its share of 256 MB.
    const size_t copy_bytes = size_t{256} << 20;
    std::vector<uint8_t> src(copy_bytes, 1), dst(copy_bytes);
    const double tc = best_time(3, [&] {
      pool.run([&](int ti, int nt) {
        const size_t chunk = copy_bytes / static_cast<size_t>(nt);
        std::memcpy(dst.data() + chunk * ti, src.data() + chunk * ti, chunk);
      });
    });
    // Read-only roofline (what a matvec needs): each thread sums its share as 64-bit words.
    std::vector<uint64_t> sums(static_cast<size_t>(n_threads));
    const double tr = best_time(3, [&] {
      pool.run([&](int ti, int nt) {
        const size_t words = copy_bytes / 8 / static_cast<size_t>(nt);
        const uint64_t* p = reinterpret_cast<const uint64_t*>(src.data()) + words * ti;
        uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        for (size_t i = 0; i + 4 <= words; i += 4) {
          a0 += p[i];
          a1 += p[i + 1];
          a2 += p[i + 2];
          a3 += p[i + 3];
        }
        sums[static_cast<size_t>(ti)] = a0 + a1 + a2 + a3;
      });
    });
    std::printf("threads=%d roofline: memcpy %.1f GB/s (read+write), read-only %.1f GB/s (checksum %llu)\n",
                n_threads, 2.0 * copy_bytes / tc / 1e9, copy_bytes / tr / 1e9,
                static_cast<unsigned long long>(sums[0]));
    for (const std::string& type_name : split_list(types_arg)) {
      const GgmlTypeInfo* info = type_by_name(type_name);
      if (info == nullptr || !is_supported_weight_type(info->type)) {
        std::printf("  %-7s unsupported\n", type_name.c_str());
        continue;
      }
      const size_t rb = row_bytes(info->type, n);
      std::vector<uint8_t> w(rb * static_cast<size_t>(rows));
      if (has_ref_quantizer(info->type)) {
        for (int64_t r = 0; r < rows; ++r) {
          quantize_row_ref(info->type, x.data() + (r % kPrefillTokens) * n, w.data() + rb * r, n);
        }
      } else {
        // Types we only read (i-quants, TQ*): random valid blocks (any bytes, a finite scale).
        uint32_t r32 = 777;
        for (uint8_t& b : w) b = static_cast<uint8_t>((r32 = r32 * 1664525u + 1013904223u) >> 24);
        for (size_t off = 0; off < w.size(); off += info->type_size) set_block_scale(info->type, w.data() + off, 0x211f);
      }
      QTensor wt;
      wt.type = info->type;
      wt.ne = {n, rows, 1, 1};
      wt.data = w.data();
      wt.row_bytes = rb;
      std::vector<float> y(static_cast<size_t>(rows * kPrefillTokens));
      ActBuffer buf;
      for (const std::string& tier_name : split_list(tiers_arg)) {
        IsaTier tier = IsaTier::kRef;
        if (tier_name == "avx2") tier = IsaTier::kAvx2;
        if (tier_name == "avx512") tier = IsaTier::kAvx512;
        if (tier > host_best_tier()) continue;
        const double t1 = best_time(tier == IsaTier::kRef ? 1 : 10,
                                    [&] { matmul(wt, x.data(), y.data(), 1, buf, pool, tier); });
        const double tp = best_time(tier == IsaTier::kRef ? 0 : 3,
                                    [&] { matmul(wt, x.data(), y.data(), kPrefillTokens, buf, pool, tier); });
        const double flops = 2.0 * static_cast<double>(n) * rows * kPrefillTokens;
        std::printf("  %-7s %-6s threads=%d  matvec %7.3f ms %6.1f GB/s   gemm64 %8.2f ms %7.1f GFLOP/s\n",
                    info->name, tier_name.c_str(), n_threads, t1 * 1e3, static_cast<double>(w.size()) / t1 / 1e9,
                    tp * 1e3, flops / tp / 1e9);
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace sniper

int main(int argc, char** argv) { return sniper::run(argc, argv); }
