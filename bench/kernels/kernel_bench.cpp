// SPDX-License-Identifier: MIT
// Per-kernel matvec throughput report: for every weight type we compute with (F32, F16, BF16,
// the 32-element formats, the K-quants, IQ4_NL/IQ4_XS, the i-quants and the ternary formats),
// the weight bytes read per second by a decode-style matvec (1 token) and by small-batch gemms
// (4, 16, 64 tokens by default), per ISA tier and thread count, printed next to the RAM read
// bandwidth probe the engine's roofline uses (engine/bandwidth_probe.h) for the same threads.
// Plain wall-clock timing, best of several runs, activation quantization included (as in
// matmul()). With --check every tier's outputs are compared with the ref tier's on the same
// weights and activations (exact, or the worst per-token normalized squared error), and a
// squared error above 1e-3 fails the run (exit 1): the CI smoke test runs it on a tiny shape.
//
// Usage: kernel_bench [--n 4096] [--rows 14336] [--threads 1,2] [--types all|q4_K,iq1_s,...]
//                     [--tiers best|all|ref,avx2,avx512] [--batches 1,4,16,64] [--reps 10]
//                     [--probe-mib 512] [--check] [--cpu-clock]
// --cpu-clock (one thread only) times with the calling thread's CPU clock instead of the wall
// clock: on a loaded shared machine a run then does not count the time it was descheduled
// (cache and memory contention still count), which makes before/after comparisons usable.
// The default shape (4096 x 14336, a dense FFN matrix) is mostly cache-resident at the low-bit
// types, so the figures show each kernel's compute ceiling; pass a larger --rows for DRAM-bound runs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "base/thread_pool.h"
#include "bench_util.h"
#include "engine/bandwidth_probe.h"
#include "kernels/kernels.h"
#include "kernels/matmul.h"
#include "kernels/tensor.h"
#include "quant/block_scale.h"
#include "quant/quant.h"

namespace sniper {
namespace {

using bench::now_s;
using bench::split_list;

struct Options {
  int64_t n = 4096;
  int64_t rows = 14336;
  std::vector<int> threads = {1, 2};
  std::vector<const GgmlTypeInfo*> types;
  std::vector<IsaTier> tiers;
  std::vector<int64_t> batches = {1, 4, 16, 64};
  int reps = 10;
  int64_t probe_mib = 512;
  bool check = false;
  bool cpu_clock = false;
};

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Best time over `reps` runs of fn (after one warm-up run), by the wall clock or the calling
// thread's CPU clock.
template <class F>
double best_time(int reps, bool cpu_clock, F&& fn) {
  fn();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const double t0 = cpu_clock ? thread_cpu_s() : now_s();
    fn();
    best = std::min(best, (cpu_clock ? thread_cpu_s() : now_s()) - t0);
  }
  return best;
}

std::vector<const GgmlTypeInfo*> all_weight_types() {
  std::vector<const GgmlTypeInfo*> out;
  for (uint32_t i = 0; i < kGgmlTypeSlots; ++i) {
    const GgmlTypeInfo* info = find_memory_type_info(i);  // the repacked layouts too
    if (info != nullptr && is_supported_weight_type(info->type)) out.push_back(info);
  }
  return out;
}

bool parse_tier(const std::string& s, IsaTier* tier) {
  for (IsaTier t : arch_tiers()) {
    if (s == isa_tier_name(t)) {
      *tier = t;
      return true;
    }
  }
  return false;
}

bool parse_positive(const std::string& s, int64_t* out) {
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v <= 0) return false;
  *out = v;
  return true;
}

// Returns false (after printing why) on a bad argument.
bool parse_args(int argc, char** argv, Options* o) {
  std::string types_arg = "all", tiers_arg = "best";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--check" || a == "--cpu-clock") {
      (a == "--check" ? o->check : o->cpu_clock) = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: missing value (usage: see the head of kernel_bench.cpp)\n", a.c_str());
      return false;
    }
    const std::string v = argv[++i];
    int64_t x = 0;
    if (a == "--n" || a == "--rows" || a == "--reps" || a == "--probe-mib") {
      if (!parse_positive(v, &x)) {
        std::fprintf(stderr, "%s=%s: expected a positive integer\n", a.c_str(), v.c_str());
        return false;
      }
      if (a == "--n") o->n = x;
      if (a == "--rows") o->rows = x;
      if (a == "--reps") o->reps = static_cast<int>(std::min<int64_t>(x, 1000));
      if (a == "--probe-mib") o->probe_mib = x;
    } else if (a == "--threads" || a == "--batches") {
      std::vector<int64_t> list;
      for (const std::string& item : split_list(v)) {
        if (!parse_positive(item, &x) || x > 4096) {
          std::fprintf(stderr, "%s: '%s' is not an integer in [1, 4096]\n", a.c_str(), item.c_str());
          return false;
        }
        list.push_back(x);
      }
      if (a == "--threads") o->threads.assign(list.begin(), list.end());
      if (a == "--batches") o->batches = list;
    } else if (a == "--types") {
      types_arg = v;
    } else if (a == "--tiers") {
      tiers_arg = v;
    } else {
      std::fprintf(stderr, "unknown option '%s' (usage: see the head of kernel_bench.cpp)\n", a.c_str());
      return false;
    }
  }
  if (o->cpu_clock && (o->threads.size() != 1 || o->threads[0] != 1)) {
    std::fprintf(stderr, "--cpu-clock times one thread: pass --threads 1\n");
    return false;
  }
  if (o->n % 256 != 0) {
    std::fprintf(stderr, "--n=%lld must be a multiple of 256 (the largest block)\n", static_cast<long long>(o->n));
    return false;
  }
  const std::vector<const GgmlTypeInfo*> all = all_weight_types();
  if (types_arg == "all") {
    o->types = all;
  } else {
    for (const std::string& name : split_list(types_arg)) {
      auto it = std::find_if(all.begin(), all.end(), [&](const GgmlTypeInfo* t) { return name == t->name; });
      if (it == all.end()) {
        std::fprintf(stderr, "--types: '%s' is not a weight type we compute with; known:", name.c_str());
        for (const GgmlTypeInfo* t : all) std::fprintf(stderr, " %s", t->name);
        std::fprintf(stderr, "\n");
        return false;
      }
      o->types.push_back(*it);
    }
  }
  if (tiers_arg == "best" || tiers_arg == "all") {
    for (IsaTier t : arch_tiers()) {
      if (host_runs(t) && (tiers_arg == "all" || t == host_best_tier())) o->tiers.push_back(t);
    }
  } else {
    for (const std::string& name : split_list(tiers_arg)) {
      IsaTier t = IsaTier::kRef;
      if (!parse_tier(name, &t)) {
        std::fprintf(stderr, "--tiers: '%s' is not one of this build's tiers\n", name.c_str());
        return false;
      }
      if (!host_runs(t)) {
        std::fprintf(stderr, "--tiers: this host cannot run %s (best %s)\n", name.c_str(),
                     isa_tier_name(host_best_tier()));
        return false;
      }
      o->tiers.push_back(t);
    }
  }
  return true;
}

// Weights of one type: quantized from the activations' rows where we have a quantizer, else
// random bytes with a finite block scale (any bytes are a valid i-quant / ternary block).
std::vector<uint8_t> make_weights(const GgmlTypeInfo& info, const Options& o, const std::vector<float>& x,
                                  int64_t x_rows) {
  const size_t rb = row_bytes(info.type, o.n);
  std::vector<uint8_t> w(rb * static_cast<size_t>(o.rows));
  if (has_ref_quantizer(info.type)) {
    // Quantize x_rows distinct rows once and repeat them (quantizing 14336 rows takes seconds).
    const int64_t distinct = std::min(o.rows, x_rows);
    for (int64_t r = 0; r < distinct; ++r) quantize_row_ref(info.type, x.data() + r * o.n, w.data() + rb * r, o.n);
    for (int64_t r = distinct; r < o.rows; ++r) std::memcpy(w.data() + rb * r, w.data() + rb * (r % distinct), rb);
  } else {
    uint32_t s = 777;
    for (uint8_t& b : w) b = static_cast<uint8_t>((s = s * 1664525u + 1013904223u) >> 24);
    for (size_t off = 0; off < w.size(); off += info.type_size) set_block_scale(info.type, w.data() + off, 0x211f);
  }
  return w;
}

// Worst per-token normalized squared error of y against ref ([n_tok][rows]); 0 when bitwise equal.
double worst_nmse(const std::vector<float>& y, const std::vector<float>& ref, int64_t n_tok, int64_t rows,
                  bool* exact) {
  *exact = std::memcmp(y.data(), ref.data(), static_cast<size_t>(n_tok * rows) * sizeof(float)) == 0;
  double worst = 0;
  for (int64_t t = 0; t < n_tok; ++t) {
    double num = 0, den = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const double a = y[t * rows + r], b = ref[t * rows + r];
      num += (a - b) * (a - b);
      den += b * b;
    }
    const double e = den > 0 ? num / den : num;
    if (!(e <= worst)) worst = e;  // NaN propagates as worst
  }
  return worst;
}

struct Row {
  std::string type;
  double mb = 0;
  std::vector<double> gbps;  // per batch
  std::string check;
};

int run(int argc, char** argv) {
  Options o;
  if (!parse_args(argc, argv, &o)) return 2;
  const int64_t max_batch = *std::max_element(o.batches.begin(), o.batches.end());
  const int64_t x_rows = std::max<int64_t>(max_batch, 64);
  std::vector<float> x(static_cast<size_t>(o.n * x_rows));
  uint32_t s = 12345;
  for (float& v : x) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<int32_t>(s >> 8) % 2001 - 1000) / 1000.0f;
  }
  std::printf("kernel_bench: host best tier %s, matrix %lld x %lld (n x rows), best of %d runs (%s clock)\n",
              isa_tier_name(host_best_tier()), static_cast<long long>(o.n), static_cast<long long>(o.rows), o.reps,
              o.cpu_clock ? "thread CPU" : "wall");
  std::vector<std::unique_ptr<ThreadPool>> pools;
  std::vector<double> probe_gbps;
  for (int nt : o.threads) {
    pools.push_back(std::make_unique<ThreadPool>(nt));
    probe_gbps.push_back(
        probe_memory_read_bandwidth(*pools.back(), static_cast<uint64_t>(o.probe_mib) << 20, 5).gb_per_s);
  }
  // results[tier][threads] rows, printed per (tier, threads) block after all types ran.
  std::vector<std::vector<std::vector<Row>>> results(o.tiers.size(), std::vector<std::vector<Row>>(o.threads.size()));
  bool failed = false;
  std::vector<float> y(static_cast<size_t>(o.rows * max_batch)), y_ref;
  ActBuffer buf;
  for (const GgmlTypeInfo* info : o.types) {
    std::vector<uint8_t> w = make_weights(*info, o, x, x_rows);
    QTensor wt;
    wt.type = info->type;
    wt.ne = {o.n, o.rows, 1, 1};
    wt.data = w.data();
    wt.row_bytes = row_bytes(info->type, o.n);
    if (o.check) {
      y_ref.assign(y.size(), 0.0f);
      matmul(wt, x.data(), y_ref.data(), max_batch, buf, *pools.back(), IsaTier::kRef);
    }
    for (size_t ti = 0; ti < o.tiers.size(); ++ti) {
      const IsaTier tier = o.tiers[ti];
      std::string check;
      if (o.check) {
        // Every batch size against the ref tier's first tokens (a gemm's token t equals a
        // matvec of token t only within each kernel's documented order, hence the NMSE).
        bool all_exact = true;
        double worst = 0;
        for (int64_t nb : o.batches) {
          std::vector<float> ref_part(y_ref.begin(), y_ref.begin() + nb * o.rows);
          std::fill(y.begin(), y.end(), 0.0f);
          matmul(wt, x.data(), y.data(), nb, buf, *pools.back(), tier);
          bool exact = false;
          const double e = worst_nmse(y, ref_part, nb, o.rows, &exact);
          all_exact = all_exact && exact;
          if (!(e <= worst)) worst = e;
        }
        char text[64];
        if (all_exact) {
          std::snprintf(text, sizeof(text), "exact");
        } else {
          std::snprintf(text, sizeof(text), "nmse %.1e", worst);
        }
        check = text;
        if (!(worst <= 1e-3)) {
          check += " FAIL";
          failed = true;
        }
      }
      for (size_t pi = 0; pi < o.threads.size(); ++pi) {
        Row row;
        row.type = info->name;
        row.mb = static_cast<double>(w.size()) / 1e6;
        row.check = check;
        for (int64_t nb : o.batches) {
          const int reps = tier == IsaTier::kRef ? 1 : o.reps;
          const double t =
              best_time(reps, o.cpu_clock, [&] { matmul(wt, x.data(), y.data(), nb, buf, *pools[pi], tier); });
          row.gbps.push_back(static_cast<double>(w.size()) / t / 1e9);
        }
        results[ti][pi].push_back(row);
      }
    }
  }
  for (size_t ti = 0; ti < o.tiers.size(); ++ti) {
    for (size_t pi = 0; pi < o.threads.size(); ++pi) {
      std::printf("\ntier %s, %d thread%s: RAM read probe %.1f GB/s (%lld MiB)\n", isa_tier_name(o.tiers[ti]),
                  o.threads[pi], o.threads[pi] == 1 ? "" : "s", probe_gbps[pi], static_cast<long long>(o.probe_mib));
      std::printf("%-10s %8s", "type", "MB");
      for (int64_t nb : o.batches) {
        char head[32];
        std::snprintf(head, sizeof(head), "b=%lld GB/s", static_cast<long long>(nb));
        std::printf(" %11s", head);
        if (nb == 1) std::printf(" %6s", "%probe");
      }
      std::printf("%s\n", o.check ? "  vs ref" : "");
      for (const Row& r : results[ti][pi]) {
        std::printf("%-10s %8.2f", r.type.c_str(), r.mb);
        for (size_t bi = 0; bi < o.batches.size(); ++bi) {
          std::printf(" %11.2f", r.gbps[bi]);
          if (o.batches[bi] == 1)
            std::printf(" %5.0f%%", probe_gbps[pi] > 0 ? 100.0 * r.gbps[bi] / probe_gbps[pi] : 0.0);
        }
        std::printf("%s%s\n", o.check ? "  " : "", r.check.c_str());
      }
    }
  }
  if (failed) std::printf("\nFAILED: a tier's outputs differ from the ref tier's beyond nmse 1e-3\n");
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace sniper

int main(int argc, char** argv) { return sniper::run(argc, argv); }
