// SPDX-License-Identifier: MIT
// Microbenchmark of the hybrid architectures' kernels, per ISA tier, one thread, best of several
// passes in thread CPU time: the gated delta net (kernels/delta_net.h) as ns per token per value head for decode
// (1 token, every head's state read and written) and prefill (a chunk of tokens), at Qwen3.5's
// shape by default (32 value heads, 16 key heads, head dim 128); and GELU / GEGLU
// (kernels/activations.h) as GB/s of activations read and written.
// Usage: hybrid_bench [heads=32] [key_heads=16] [head_dim=128] [prefill=512] [gelu_n=2112]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

#include "base/cpu_features.h"
#include "kernels/activations.h"
#include "kernels/delta_net.h"

namespace sniper {
namespace {

// The calling thread's CPU time: on a shared machine wall time also counts the time the thread
// waits for a core.
double thread_cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

template <typename F>
double best_of(int passes, F&& f) {
  double best = 1e30;
  for (int i = 0; i < passes; ++i) {
    const double t0 = thread_cpu_s();
    f();
    best = std::min(best, thread_cpu_s() - t0);
  }
  return best;
}

void bench_delta_net(int64_t n_v, int64_t n_k, int64_t d, int64_t n_prefill) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  const int64_t channels = (2 * n_k + n_v) * d;
  std::vector<float> qkv(static_cast<size_t>(n_prefill * channels)), g(static_cast<size_t>(n_prefill * n_v), -0.1f),
      beta(g.size(), 0.5f), out(static_cast<size_t>(n_prefill * n_v * d)), state(static_cast<size_t>(n_v * d * d));
  for (auto& x : qkv) x = normal(rng);
  for (auto& x : state) x = normal(rng);
  DeltaNetArgs a;
  a.head_dim = d;
  a.n_k_heads = n_k;
  a.n_v_heads = n_v;
  a.q = qkv.data();
  a.k = qkv.data() + n_k * d;
  a.v = qkv.data() + 2 * n_k * d;
  a.q_stride = a.k_stride = a.v_stride = channels;
  a.g = g.data();
  a.beta = beta.data();
  a.gb_stride = n_v;
  a.out = out.data();
  a.out_stride = n_v * d;
  a.state = state.data();
  for (IsaTier tier : arch_tiers()) {
    if (!host_runs(tier)) continue;
    const DeltaNetFn fn = find_delta_net(tier);
    a.n_tokens = 1;
    const double dec = best_of(20, [&] { fn(a, 0, n_v); });
    a.n_tokens = n_prefill;
    const double pre = best_of(tier == IsaTier::kRef ? 1 : 5, [&] { fn(a, 0, n_v); });
    std::printf(
        "delta_net %-6s d=%ld heads=%ld: decode %.0f ns/token/head (%.1f us/token/layer), prefill(%ld) %.0f "
        "ns/token/head\n",
        isa_tier_name(tier), static_cast<long>(d), static_cast<long>(n_v), dec * 1e9 / static_cast<double>(n_v),
        dec * 1e6, static_cast<long>(n_prefill), pre * 1e9 / static_cast<double>(n_v * n_prefill));
  }
}

// GELU over rows of n (Gemma 4's dense ff 2112 by default) and GEGLU, many rows so that the
// activations come from L2 / L3 rather than L1: GB/s of floats read and written.
void bench_gelu(int64_t n) {
  const int64_t n_rows = 256;
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(n * n_rows)), up(x.size()), y(x.size());
  for (auto& v : x) v = normal(rng);
  for (auto& v : up) v = normal(rng);
  for (IsaTier tier : arch_tiers()) {
    if (!host_runs(tier)) continue;
    const GeluOps& ops = find_gelu_ops(tier);
    const double t_gelu = best_of(20, [&] {
      for (int64_t r = 0; r < n_rows; ++r) ops.gelu(x.data() + r * n, y.data() + r * n, n);
    });
    const double t_geglu = best_of(20, [&] {
      for (int64_t r = 0; r < n_rows; ++r) ops.geglu(x.data() + r * n, up.data() + r * n, y.data() + r * n, n);
    });
    const double floats = static_cast<double>(n * n_rows);
    std::printf("gelu      %-6s n=%ld x %ld rows: gelu %.1f GB/s (%.2f ns/elem), geglu %.1f GB/s (%.2f ns/elem)\n",
                isa_tier_name(tier), static_cast<long>(n), static_cast<long>(n_rows), 8.0 * floats / t_gelu * 1e-9,
                t_gelu * 1e9 / floats, 12.0 * floats / t_geglu * 1e-9, t_geglu * 1e9 / floats);
  }
}

}  // namespace
}  // namespace sniper

int main(int argc, char** argv) {
  const auto arg = [&](int i, long def) { return argc > i ? std::atol(argv[i]) : def; };
  sniper::bench_delta_net(arg(1, 32), arg(2, 16), arg(3, 128), arg(4, 512));
  sniper::bench_gelu(arg(5, 2112));
  return 0;
}
