// SPDX-License-Identifier: MIT
// sniper bench -m MODEL [-p PROMPT_TOKENS] [-n GEN_TOKENS] [-t THREADS] [--mem SIZE|auto]
//              [--residency auto|stream|mmap|resident] [--no-repack] [--json]
// Prefill and decode speed, time to first token, memory, SSD traffic and cache behaviour, set
// against the physical limits measured on this machine: the SSD's O_DIRECT throughput at the
// read size and depth the engine uses, and the RAM read bandwidth (roofline), which a resident
// run also probes right before each of a few extra decode tokens (bench_paired.h), and times a
// matvec per weight type on the model's own tensors against it (bench_types.h). Weight bytes are
// counted as they sit in memory (repacked i-quants in their larger layouts).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "base/memory_limit.h"
#include "base/process_stats.h"
#include "bench_depth.h"
#include "bench_paired.h"
#include "bench_ranks.h"
#include "bench_spec.h"
#include "bench_types.h"
#include "cluster_args.h"
#include "commands.h"
#include "common.h"
#include "engine/bandwidth_probe.h"
#include "hub_model.h"
#include "io/disk_probe.h"
#include "io/interference_probe.h"
#include "kernels/ops.h"
#include "spec_args.h"
#include "weights/static_cache_bound.h"

namespace sniper::cli {

namespace {

// Deterministic pseudo-random prompt ids in [3, vocab).
std::vector<int32_t> bench_prompt(int64_t n, int64_t vocab) {
  std::vector<int32_t> ids;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    ids.push_back(static_cast<int32_t>(3 + x % static_cast<uint64_t>(vocab - 3)));
  }
  return ids;
}

// Bytes of weights one decode token multiplies with (embedding row excluded): as they sit in
// memory (a repacked i-quant tensor in its layout) when `in_memory`, else as in the file.
uint64_t active_weight_bytes(const Model& m, bool in_memory = true) {
  const ModelConfig& c = m.config();
  uint64_t bytes = 0;
  auto size_of = [&](const GgufTensorInfo& t) -> uint64_t {
    const QTensor* q = in_memory ? m.store().find_tensor(t.name) : nullptr;
    return q != nullptr && q->data != nullptr ? q->nbytes() : t.nbytes;
  };
  for (const GgufTensorInfo& t : m.gguf().tensors()) {
    if (t.name == "token_embd.weight") continue;
    if (t.name.find("_exps.") != std::string::npos) {
      bytes += size_of(t) / static_cast<uint64_t>(c.n_experts) * static_cast<uint64_t>(c.n_experts_active);
    } else {
      bytes += size_of(t);
    }
  }
  if (c.tied_embeddings) bytes += size_of(*m.gguf().find_tensor("token_embd.weight"));
  return bytes;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  const std::vector<FlagSpec> specs =
      concat(concat(concat(model_flags(), spec_flags()), bench_spec_flags()),
             {
                 {"--prompt-tokens", "-p", "N", "prompt length (default 64)"},
                 {"--gen-tokens", "-n", "N", "tokens to generate (default 64)"},
                 {"--max-seconds", nullptr, "S", "stop decoding after S seconds (default: no limit)"},
                 {"--scaling", nullptr, nullptr, "also decode with 1 thread and report the 1 -> N thread scaling"},
                 {"--greedy", nullptr, nullptr,
                  "feed back the argmax token while decoding (default: a fixed pseudo-random token "
                  "stream, so a random-weight model cannot collapse into repeating one token and make "
                  "every cache look perfect)"},
                 {"--depths", nullptr, "N,N",
                  "also decode at these context depths, e.g. 128,4096 (attention at long context)"},
                 {"--depth-kv", nullptr, "T,T",
                  "KV cache types for --depths, e.g. f16,q8_0,q8_0/f16 (K/V; default: -ctk/-ctv; -fa applies)"},
                 {"--depth-prefill", nullptr, "N",
                  "also time N prompt tokens in one call at each depth (llama-bench -d D -p N; default 0)"},
                 {"--depth-fill", nullptr, "each|once",
                  "each (default): one session per depth, decoded in turn; once: one session "
                  "per KV type with the --ctx cache, filled through the depths, memory read at each"},
                 {"--no-probe", nullptr, nullptr, "skip the SSD and RAM bandwidth probes"},
                 {"--no-type-matvecs", nullptr, nullptr,
                  "skip the matvec GB/s per weight type (resident runs time each type on the model's tensors)"},
                 {"--json", nullptr, nullptr, "end with one line of JSON"},
                 {"--help", "-h", nullptr, "show this help"},
             });
  auto args = Args::parse("bench", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  if (args->has("--help")) {
    print_usage("bench", "MODEL [-p N] [-n N] [-t N] [--mem SIZE|auto] [--residency stream|mmap|resident] [--json]",
                specs,
                "Measures prefill and decode speed, time to first token, peak memory, SSD traffic and the expert "
                "cache against the machine's physical limits (RAM and SSD bandwidth probes), in one run.");
    return 0;
  }
  auto model_path = model_path_from_args(*args);
  if (!model_path.ok()) return fail(model_path.error());
  if (args->has("--spec")) return run_spec_bench(*args);
  for (const FlagSpec& f : concat(spec_flags(), bench_spec_flags())) {
    if (args->has(f.name)) return fail(make_error("%s is a speculative-decoding flag: add --spec", f.name));
  }
  auto n_prompt = args->get_int("--prompt-tokens", 64, 1, 1 << 20);
  auto n_gen = args->get_int("--gen-tokens", 64, 1, 1 << 20);
  auto max_seconds = args->get_float("--max-seconds", 0, 0, 1e9);
  if (!n_prompt.ok()) return fail(n_prompt.error());
  if (!n_gen.ok()) return fail(n_gen.error());
  if (!max_seconds.ok()) return fail(max_seconds.error());
  auto lo = load_options_from_args(*args);
  if (!lo.ok()) return fail(lo.error());
  std::vector<int64_t> depths;
  std::vector<KvConfig> depth_kv = {lo->kv_type};
  if (args->has("--depths")) {
    auto d = parse_depths(args->get_string("--depths"));
    if (!d.ok()) return fail(d.error());
    depths = *d;
  }
  if (args->has("--depth-kv")) {
    auto k = parse_kv_configs(args->get_string("--depth-kv"), lo->kv_type);
    if (!k.ok()) return fail(k.error());
    depth_kv = *k;
  }
  const int64_t depth_decode = std::min<int64_t>(*n_gen, 16);
  auto depth_prefill = args->get_int("--depth-prefill", 0, 0, 1 << 16);
  if (!depth_prefill.ok()) return fail(depth_prefill.error());
  DepthFill depth_fill = DepthFill::kEach;
  if (args->has("--depth-fill")) {
    const std::string f = args->get_string("--depth-fill");
    if (f == "once") depth_fill = DepthFill::kOnce;
    else if (f != "each") return fail(make_error("--depth-fill '%s': expected each or once", f.c_str()));
    if (depths.empty()) return fail(make_error("--depth-fill needs --depths"));
  }
  // Decode tokens paired with a RAM probe each (bench_paired.h), after the timed decode.
  const int64_t roofline_pairs = std::min<int64_t>(*n_gen, 16);
  if (lo->n_ctx == 0) {
    lo->n_ctx = *n_prompt + *n_gen + roofline_pairs + 8;
    if (!depths.empty()) lo->n_ctx = std::max(lo->n_ctx, depths.back() + std::max(depth_decode, *depth_prefill) + 8);
  }
  auto threads = args->get_int("--threads", 0, 0, 1024);
  if (!threads.ok()) return fail(threads.error());
  const std::string path = *model_path;
  const bool probe = !args->has("--no-probe");

  // Probes first, while nothing else is running and before the model takes the memory.
  BandwidthProbe ram;
  if (probe) {
    std::fprintf(stderr, "probing RAM read bandwidth...\n");
    ThreadPool pool(static_cast<int>(*threads));
    ram = probe_memory_read_bandwidth(pool);
  }

  const double t_load0 = now_s();
  auto model = Model::load(path, *lo);
  // Under mpirun: every rank loads and agrees; the serving ranks never return (cluster_args.h).
  std::unique_ptr<RemoteExperts> remote;
  Cluster* cluster = current_cluster();
  if (cluster != nullptr) {
    auto joined = join_model_parallel(*cluster, *args, path, model, static_cast<int>(*threads),
                                      model.ok() ? (*model)->planned_batch() : 0);
    if (!joined.ok()) return fail(joined.error());
    remote = std::move(joined).value();
  }
  auto* cluster_experts = dynamic_cast<ClusterExperts*>(remote.get());
  if (!model.ok()) return fail(model.error());
  const double load_s = now_s() - t_load0;
  Model& m = **model;
  const ModelConfig& c = m.config();

  // The SSD is probed before prefill and again after decode: a shared disk drifts from one
  // minute to the next, and the limit uses the mean of the two.
  const bool disk_bound = m.streams() || lo->residency == ResidencyMode::kMmap;
  // The engine's typical read: one expert slice (or a dense layer's tensors), deep queue.
  uint64_t read_bytes = 1 << 20;
  if (m.plan().stream_experts) read_bytes = std::max<uint64_t>(m.plan().slot.gate_bytes - 8192, 4096) / 4096 * 4096;
  auto probe_ssd = [&](const char* when) {
    DiskProbeResult result;
    if (!probe || !disk_bound) return result;
    std::fprintf(stderr, "probing SSD %s: %llu KiB O_DIRECT reads at depth %u...\n", when,
                 static_cast<unsigned long long>(read_bytes / 1024), lo->queue_depth);
    auto r = probe_read_throughput(path, read_bytes, static_cast<int>(lo->queue_depth), 4.0, uint64_t{4} << 30);
    if (r.ok()) result = *r;
    else std::fprintf(stderr, "SSD probe failed: %s\n", r.error().message.c_str());
    return result;
  };
  const DiskProbeResult ssd_before = probe_ssd("before prefill");

  SessionOptions so;
  so.n_threads = static_cast<int>(*threads);
  so.n_ctx = lo->n_ctx;
  // With --depth-fill once the depth session holds the planned context; this one needs only
  // the bench's own tokens.
  if (depth_fill == DepthFill::kOnce) so.n_ctx = std::min(lo->n_ctx, *n_prompt + *n_gen + roofline_pairs + 8);
  so.batch = m.planned_batch();
  so.kv_type = lo->kv_type;
  so.remote_experts = remote.get();
  if (args->has("--routing-bias")) {
    auto bias = parse_routing_bias(args->get_string("--routing-bias"), c);
    if (!bias.ok()) return fail(bias.error());
    so.routing_bias = *bias;
  }
  auto session = Session::create(m, so);
  if (!session.ok()) return fail(session.error());
  Session& s = **session;
  const std::vector<int32_t> prompt = bench_prompt(*n_prompt, c.vocab_size);

  std::fprintf(stderr, "prefill %ld tokens...\n", static_cast<long>(*n_prompt));
  const uint64_t read0 = storage_read_bytes();
  const double t_pre0 = now_s();
  Status st = s.eval(prompt);
  if (!st.ok()) return fail(st.error());
  int32_t next = argmax(s.last_logits().data(), c.vocab_size);
  const double prefill_s = now_s() - t_pre0;
  const uint64_t prefill_read = storage_read_bytes() - read0;

  // Decode inputs: pseudo-random ids (distinct from the prompt's) unless --greedy.
  const std::vector<int32_t> stream = bench_prompt(*n_prompt + *n_gen, c.vocab_size);
  const bool greedy = args->has("--greedy");
  ExpertCache* cache = m.expert_cache();
  if (cache != nullptr) cache->reset_stats();
  const IoStats io0 = m.io() != nullptr ? m.io()->stats() : IoStats{};
  const uint64_t faults0 = major_page_faults();
  const uint64_t dec_read0 = storage_read_bytes();
  // Expert requests of the even-numbered decode tokens; the odd ones are the rest. The two
  // halves give the held-out static cache of the physical limit.
  std::vector<uint32_t> even_counts, seen_counts;
  if (cache != nullptr) {
    even_counts.assign(cache->request_counts().size(), 0);
    seen_counts = cache->request_counts();
  }
  RankSnapshot ranks_before;
  if (cluster_experts != nullptr) {
    auto snap = take_rank_snapshot(*cluster_experts);
    if (!snap.ok()) return fail(snap.error());
    ranks_before = *snap;
  }
  const double t_dec0 = now_s();
  int64_t done = 0;
  for (; done < *n_gen; ++done) {
    const int32_t one[1] = {next};
    st = s.eval(one);
    if (!st.ok()) return fail(st.error());
    if (cache != nullptr) {
      const std::vector<uint32_t>& now = cache->request_counts();
      if (done % 2 == 0) {
        for (size_t k = 0; k < now.size(); ++k) even_counts[k] += now[k] - seen_counts[k];
      }
      seen_counts = now;
    }
    next = greedy ? argmax(s.last_logits().data(), c.vocab_size) : stream[static_cast<size_t>(*n_prompt + done)];
    const double el = now_s() - t_dec0;
    std::fprintf(stderr, "\rdecode %ld/%ld  %.2f tok/s   ", static_cast<long>(done + 1), static_cast<long>(*n_gen),
                 static_cast<double>(done + 1) / el);
    if (*max_seconds > 0 && el > *max_seconds) {
      ++done;
      break;
    }
  }
  std::fprintf(stderr, "\n");
  const double decode_s = now_s() - t_dec0;
  RankSnapshot ranks_after;
  if (cluster_experts != nullptr) {
    auto snap = take_rank_snapshot(*cluster_experts);
    if (!snap.ok()) return fail(snap.error());
    ranks_after = *snap;
  }
  const uint64_t dec_read = storage_read_bytes() - dec_read0;
  const double decode_tok_s = static_cast<double>(done) / decode_s;
  const double bytes_per_token = static_cast<double>(dec_read) / static_cast<double>(done);
  const double ssd_gbps = static_cast<double>(dec_read) / decode_s / 1e9;
  double stall_s = 0;
  if (m.io() != nullptr) stall_s = m.io()->stats().stall_seconds - io0.stall_seconds;
  const double stall_share = decode_s > 0 ? stall_s / decode_s : 0;
  const uint64_t decode_faults = major_page_faults() - faults0;
  const double compute_s_per_token = (decode_s - stall_s) / static_cast<double>(done);
  // Before the probes below: their buffers are not the engine's memory.
  const uint64_t peak = peak_rss_bytes();
  const uint64_t cg_peak = cgroup_memory_peak_bytes();
  // After every decode figure is taken: the probe's own reads must not count as decode traffic.
  const DiskProbeResult ssd_after = probe_ssd("after decode");
  // How much the disk's reads slow compute here. The limit below assumes reads hide behind
  // compute for free; on a VM whose host serves the disk with the guest's cores they do not.
  // The compute is one output-head matvec: resident in every streamed plan (under --residency
  // mmap it could fault pages in, and the probe would time reads, not compute).
  InterferenceProbeResult interference;
  if (probe && m.streams() && m.weights().output.data != nullptr) {
    std::fprintf(stderr, "probing compute while the SSD reads...\n");
    std::vector<float> hx(static_cast<size_t>(c.dim), 1.0f), hy(static_cast<size_t>(m.weights().output.n_rows()));
    ActBuffer act;
    auto head = [&] { matmul(m.weights().output, hx.data(), hy.data(), 1, act, s.pool()); };
    auto r = probe_compute_under_reads(head, path, read_bytes, static_cast<int>(lo->queue_depth), 1.5);
    if (r.ok()) interference = *r;
    else std::fprintf(stderr, "interference probe failed: %s\n", r.error().message.c_str());
  }
  // The mean of the two probes, or the one that worked (0: none did).
  const double ssd_probe_gbps = ssd_before.gb_per_s > 0 && ssd_after.gb_per_s > 0
                                    ? (ssd_before.gb_per_s + ssd_after.gb_per_s) / 2
                                    : std::max(ssd_before.gb_per_s, ssd_after.gb_per_s);
  // Decode tok/s when `need_bytes` per token cross the SSD at the probed rate, overlapped with compute.
  auto ssd_limit = [&](double need_bytes) {
    return ssd_probe_gbps > 0 ? 1.0 / std::max(need_bytes / (ssd_probe_gbps * 1e9), compute_s_per_token) : -1.0;
  };
  // RAM is probed again after decode when the model sits in RAM (a streamed run has no room
  // to spare for the probe's buffer); the roofline is the better of the two, as RAM bandwidth
  // on a shared machine drifts too.
  const double ram_before_gbps = ram.gb_per_s;
  double ram_after_gbps = 0;
  if (probe && !disk_bound) {
    std::fprintf(stderr, "probing RAM read bandwidth after decode...\n");
    ram_after_gbps = probe_memory_read_bandwidth(s.pool()).gb_per_s;
    ram.gb_per_s = std::max(ram.gb_per_s, ram_after_gbps);
  }

  // Cache figures and the physical limit.
  double hit_rate = -1, demand_hit = -1, oracle_hit = -1, held_out_hit = -1, precision = -1, recall = -1,
         limit_tok_s = -1;
  double hindsight_limit_tok_s = -1;
  double prefetch_wait_share = -1, demand_wait_share = -1;  // of decode time, waiting for expert reads
  std::vector<int64_t> distinct;
  const double weight_bytes = static_cast<double>(active_weight_bytes(m));
  if (cache != nullptr) {
    const LayerCacheStats t = cache->stats().total();
    hit_rate = t.requests ? static_cast<double>(t.hits) / static_cast<double>(t.requests) : 0;
    prefetch_wait_share = decode_s > 0 ? (t.stall_seconds - t.demand_stall_seconds) / decode_s : 0;
    demand_wait_share = decode_s > 0 ? t.demand_stall_seconds / decode_s : 0;
    // Hits that were in memory before any prefetch hint (prefetched experts still crossed the SSD).
    demand_hit = t.requests ? static_cast<double>(t.hits - t.prefetch_useful) / static_cast<double>(t.requests) : 0;
    if (t.predicted) precision = static_cast<double>(t.predicted_correct) / static_cast<double>(t.predicted);
    if (t.actual_in_prediction_base)
      recall = static_cast<double>(t.predicted_correct) / static_cast<double>(t.actual_in_prediction_base);
    // Static caches of the same size: chosen in hindsight from this run's requests, and chosen
    // from the even tokens' requests to serve the odd ones and the other way round.
    const std::vector<uint32_t>& counts = cache->request_counts();
    std::vector<uint32_t> odd_counts(counts.size());
    for (size_t k = 0; k < counts.size(); ++k) odd_counts[k] = counts[k] - even_counts[k];
    const StaticCacheHits static_hits =
        static_cache_hits(even_counts, odd_counts, static_cast<size_t>(cache->n_slots()));
    oracle_hit = static_hits.hindsight;
    held_out_hit = static_hits.held_out;
    distinct = cache->distinct_per_layer();
    double expert_bytes_per_token = 0;
    for (int64_t l = 0; l < c.n_layers; ++l)
      expert_bytes_per_token += static_cast<double>(cache->expert_bytes(l)) * c.n_experts_active;
    // The bytes that must cross the SSD: misses of the better of the held-out static cache and
    // the cache that ran (neither knows the future). The hindsight cache's limit is reported too.
    const double need = (1.0 - std::max(held_out_hit, demand_hit)) * expert_bytes_per_token;
    const double need_hindsight = (1.0 - oracle_hit) * expert_bytes_per_token;
    limit_tok_s = ssd_limit(need);
    hindsight_limit_tok_s = ssd_limit(need_hindsight);
  } else if (m.layer_streamer() != nullptr) {
    // Every streamed tensor crosses the SSD once per token.
    double need = 0;
    for (const std::string& name : m.plan().streamed_tensors) {
      if (const GgufTensorInfo* t = m.gguf().find_tensor(name); t != nullptr && name != "token_embd.weight") {
        need += static_cast<double>(t->nbytes);
      }
    }
    limit_tok_s = ssd_limit(need);
  } else if (ram.gb_per_s > 0 && lo->residency != ResidencyMode::kMmap) {
    limit_tok_s = ram.gb_per_s * 1e9 / weight_bytes;
  }
  const double weight_gbps = weight_bytes * decode_tok_s / 1e9;
  // The roofline again, probed right before each of a few more decode tokens (resident runs).
  PairedRoofline paired;
  if (probe && !disk_bound) {
    const int64_t n_pairs = std::min<int64_t>(roofline_pairs, s.n_ctx() - s.n_past());
    if (n_pairs > 0) {
      const std::vector<int32_t> more = bench_prompt(*n_prompt + done + n_pairs, c.vocab_size);
      auto r = measure_paired_roofline(s, weight_bytes, std::vector<int32_t>(more.end() - n_pairs, more.end()));
      if (!r.ok()) return fail(r.error());
      paired = *r;
    }
  }

  // Matvec GB/s per weight type on the model's tensors (resident runs: a streamed tensor is not
  // in memory to time, and under mmap the first pass would time page faults).
  std::vector<TypeMatvec> type_matvecs;
  if (!disk_bound && !args->has("--no-type-matvecs")) {
    std::fprintf(stderr, "timing matvecs per weight type...\n");
    type_matvecs = measure_type_matvecs(m, s.pool());
  }
  const double file_weight_bytes = static_cast<double>(active_weight_bytes(m, /*in_memory=*/false));

  std::printf(
      "model            %s (%s, %ld layers%s)\n", path.c_str(), c.arch.c_str(), static_cast<long>(c.n_layers),
      c.is_moe()
          ? (", " + std::to_string(c.n_experts) + " experts, " + std::to_string(c.n_experts_active) + " active").c_str()
          : "");
  std::printf("residency        %s%s | budget %s | load %.1f s\n", residency_mode_name(lo->residency),
              m.streams() ? " (streaming)" : "", format_bytes(m.plan().budget_bytes).c_str(), load_s);
  std::printf("prefill          %ld tok in %.2f s = %.2f tok/s (read %.2f GB, chunks of %ld)\n",
              static_cast<long>(*n_prompt), prefill_s, static_cast<double>(*n_prompt) / prefill_s,
              static_cast<double>(prefill_read) / 1e9, static_cast<long>(so.batch));
  std::printf("time to first    %.2f s\n", prefill_s);
  std::printf("decode           %ld tok in %.2f s = %.3f tok/s\n", static_cast<long>(done), decode_s, decode_tok_s);
  if (cluster != nullptr) print_rank_figures(*cluster, m, ranks_before, ranks_after, done, decode_s);
  std::printf("peak RSS         %s%s%s\n", format_bytes(peak).c_str(), cg_peak ? " | cgroup peak " : "",
              cg_peak ? format_bytes(cg_peak).c_str() : "");
  char probe_text[96] = "";
  if (ssd_probe_gbps > 0) {
    std::snprintf(probe_text, sizeof(probe_text), " (probe %.2f GB/s before prefill, %.2f after decode)",
                  ssd_before.gb_per_s, ssd_after.gb_per_s);
  }
  std::printf("SSD              %.1f MB/token read, %.2f GB/s achieved%s | stalled on I/O %.0f%% of decode\n",
              bytes_per_token / 1e6, ssd_gbps, probe_text, 100 * stall_share);
  if (lo->residency == ResidencyMode::kMmap) {
    std::printf("page faults      %llu major during decode\n", static_cast<unsigned long long>(decode_faults));
  }
  if (cache != nullptr) {
    std::printf(
        "expert cache     %ld slots (%s), hit rate %.1f%% (%.1f%% already cached, the rest prefetched), "
        "prefetch precision %.0f%% recall %.0f%%\n",
        static_cast<long>(cache->n_slots()), format_bytes(cache->arena_bytes()).c_str(), 100 * hit_rate,
        100 * demand_hit, 100 * precision, 100 * recall);
    std::printf("expert waits     %.0f%% of decode on prefetches still in flight, %.0f%% on misses no hint covered\n",
                100 * prefetch_wait_share, 100 * demand_wait_share);
    std::printf(
        "static cache     same size, best fixed set of experts: %.1f%% hits held out (chosen on even tokens, "
        "scored on odd, and back), %.1f%% in hindsight\n",
        100 * held_out_hit, 100 * oracle_hit);
    std::printf("distinct experts per layer:");
    for (int64_t d : distinct) std::printf(" %ld", static_cast<long>(d));
    std::printf("\n");
  }
  if (so.routing_bias.keep > 0) {
    const RoutingStats& rs = s.routing_stats();
    std::printf("routing bias     keep %ld, window %ld: %.1f%% of expert choices changed\n",
                static_cast<long>(so.routing_bias.keep), static_cast<long>(so.routing_bias.window),
                rs.selections ? 100.0 * static_cast<double>(rs.changed) / static_cast<double>(rs.selections) : 0.0);
  }
  char ram_text[64] = "";
  if (ram_after_gbps > 0)
    std::snprintf(ram_text, sizeof(ram_text), ": %.1f before, %.1f after decode", ram_before_gbps, ram_after_gbps);
  std::printf("weights          %.2f GB/token active, %.1f GB/s streamed from RAM (roofline %.1f GB/s%s)\n",
              weight_bytes / 1e9, weight_gbps, ram.gb_per_s, ram_text);
  if (m.store().n_repacked() > 0) {
    std::printf(
        "repack           %ld i-quant tensors in lookup-free layouts (+%.0f MiB; %.2f GB/token in the file's "
        "layouts; --no-repack keeps those)\n",
        static_cast<long>(m.store().n_repacked()), static_cast<double>(m.plan().repack_extra_bytes) / (1 << 20),
        file_weight_bytes / 1e9);
  } else if (m.plan().repack_all_extra_bytes > 0) {
    std::printf("repack           off (%s; the lookup-free layouts would take %.0f MiB more)\n",
                lo->repack ? "no room in the budget" : "--no-repack",
                static_cast<double>(m.plan().repack_all_extra_bytes) / (1 << 20));
  }
  if (paired.n_pairs > 0) {
    std::printf(
        "roofline pairs   %ld tokens, each right after a RAM probe: median %.1f GB/s streamed of %.1f GB/s "
        "probed = %.0f%% (pairs %.0f-%.0f%%)\n",
        static_cast<long>(paired.n_pairs), paired.weight_gbps, paired.roofline_gbps, 100 * paired.share,
        100 * paired.share_low, 100 * paired.share_high);
  }
  if (!type_matvecs.empty()) {
    std::printf("matvec by type   one token on the model's own matrices, %d threads, RAM probe %.1f GB/s:\n",
                s.pool().n_threads(), ram.gb_per_s);
    for (const TypeMatvec& t : type_matvecs) {
      const std::string name = t.file_type.empty() ? t.type : t.type + " (" + t.file_type + ")";
      std::printf("                 %-22s %5ld tensors %9.1f MB/pass %7.1f GB/s", name.c_str(),
                  static_cast<long>(t.n_tensors), static_cast<double>(t.bytes) / 1e6, t.gb_per_s);
      if (ram.gb_per_s > 0) std::printf(" %4.0f%% of the probe", 100 * t.gb_per_s / ram.gb_per_s);
      std::printf("%s\n", static_cast<double>(t.bytes) < 64e6 ? " (fits the caches: compute-bound)" : "");
    }
  }
  if (limit_tok_s > 0) {
    std::printf("physical limit   %.3f tok/s -> decode at %.0f%% of it\n", limit_tok_s,
                100 * decode_tok_s / limit_tok_s);
    if (hindsight_limit_tok_s > 0) {
      std::printf("                 %.3f tok/s with the hindsight cache -> %.0f%% of it\n", hindsight_limit_tok_s,
                  100 * decode_tok_s / hindsight_limit_tok_s);
    }
  }
  if (interference.loaded_calls > 0) {
    std::printf(
        "I/O interference compute keeps %.0f%% of its speed while the SSD reads (output head %.3g ms alone, "
        "%.3g ms during %.2f GB/s of reads); the limit above assumes 100%%\n",
        100 * interference.compute_speed(), 1e3 * interference.quiet_s_per_call, 1e3 * interference.loaded_s_per_call,
        interference.reads.gb_per_s);
  }

  double scaling_1t = -1;
  if (args->has("--scaling")) {
    SessionOptions so1 = so;
    so1.n_threads = 1;
    auto s1 = Session::create(m, so1);
    if (!s1.ok()) return fail(s1.error());
    (void)(*s1)->eval(std::vector<int32_t>(prompt.begin(), prompt.begin() + std::min<int64_t>(8, *n_prompt)));
    const int64_t n1 = std::min<int64_t>(*n_gen, 16);
    const double t0 = now_s();
    for (int64_t i = 0; i < n1; ++i) {
      const int32_t one[1] = {argmax((*s1)->last_logits().data(), c.vocab_size)};
      if (!(*s1)->eval(one).ok()) break;
    }
    scaling_1t = static_cast<double>(n1) / (now_s() - t0);
    std::printf("thread scaling   1 thread %.2f tok/s -> %d threads %.2f tok/s (x%.2f)\n", scaling_1t,
                s.pool().n_threads(), decode_tok_s, decode_tok_s / scaling_1t);
  }

  const int n_threads = s.pool().n_threads();
  std::string depth_json;
  if (!depths.empty()) {
    // The bench session's memory goes back before the depth sessions take theirs.
    if (depth_fill == DepthFill::kOnce) {
      session->reset();
      so.n_ctx = lo->n_ctx;
    }
    auto points = measure_depths(m, so, depths, depth_kv, depth_decode, *depth_prefill, depth_fill);
    if (!points.ok()) return fail(points.error());
    for (const DepthPoint& p : *points) {
      const DepthPoint& first = points->front();
      std::printf("decode at depth  %-10s %6ld tokens of context: %.3f tok/s (%.0f%% of %s at %ld)\n",
                  kv_label(p.kv_type).c_str(), static_cast<long>(p.depth), p.decode_tok_s,
                  100 * p.decode_tok_s / first.decode_tok_s, kv_label(first.kv_type).c_str(),
                  static_cast<long>(first.depth));
      if (p.rss_bytes > 0) {
        std::printf("memory at depth  %-10s %6ld tokens of context: RSS %s%s%s\n", kv_label(p.kv_type).c_str(),
                    static_cast<long>(p.depth), format_bytes(p.rss_bytes).c_str(), p.cgroup_bytes ? " | cgroup " : "",
                    p.cgroup_bytes ? format_bytes(p.cgroup_bytes).c_str() : "");
      }
      if (p.prefill_tok_s > 0) {
        std::printf("prefill at depth %-10s %6ld tokens of context: %.2f tok/s (%ld tokens in one call)\n",
                    kv_label(p.kv_type).c_str(), static_cast<long>(p.depth), p.prefill_tok_s,
                    static_cast<long>(*depth_prefill));
      }
      char item[320];
      KvConfig types = p.kv_type;  // "kv": the types alone (K, or K/V); flash attention apart
      types.flash_attn = FlashAttn::kOff;
      std::snprintf(item, sizeof(item),
                    "%s{\"kv\":\"%s\",\"flash_attn\":%s,\"depth\":%ld,\"decode_tok_s\":%.4f,\"prefill_tok_s\":%.4f,"
                    "\"rss_bytes\":%llu,\"cgroup_bytes\":%llu}",
                    depth_json.empty() ? "" : ",", kv_label(types).c_str(), p.kv_type.flash() ? "true" : "false",
                    static_cast<long>(p.depth), p.decode_tok_s, p.prefill_tok_s,
                    static_cast<unsigned long long>(p.rss_bytes), static_cast<unsigned long long>(p.cgroup_bytes));
      depth_json += item;
    }
  }

  if (args->has("--json")) {
    std::printf("{\"depth_decode\":[%s],", depth_json.c_str());
    std::printf("\"type_matvec\":[");
    for (size_t i = 0; i < type_matvecs.size(); ++i) {
      const TypeMatvec& t = type_matvecs[i];
      std::printf("%s{\"type\":\"%s\",\"file_type\":\"%s\",\"bytes\":%llu,\"gbps\":%.3f}", i ? "," : "", t.type.c_str(),
                  t.file_type.empty() ? t.type.c_str() : t.file_type.c_str(), static_cast<unsigned long long>(t.bytes),
                  t.gb_per_s);
    }
    std::printf("],\"repacked_tensors\":%ld,\"repack_extra_bytes\":%llu,\"file_weight_bytes_per_token\":%.0f,",
                static_cast<long>(m.store().n_repacked()),
                static_cast<unsigned long long>(m.store().n_repacked() > 0 ? m.plan().repack_extra_bytes : 0),
                file_weight_bytes);
    std::printf(
        "\"model\":\"%s\",\"residency\":\"%s\",\"streaming\":%s,\"budget_bytes\":%llu,\"prompt_tokens\":%ld,"
        "\"gen_tokens\":%ld,\"threads\":%d,\"batch\":%ld,\"prefill_tok_s\":%.4f,\"decode_tok_s\":%.4f,\"ttft_s\":%.4f,"
        "\"peak_rss_bytes\":%llu,\"cgroup_peak_bytes\":%llu,\"bytes_read_per_token\":%.0f,\"ssd_gbps\":%.4f,"
        "\"ssd_probe_gbps\":%.4f,\"ssd_probe_before_gbps\":%.4f,\"ssd_probe_after_gbps\":%.4f,\"hit_rate\":%.4f,"
        "\"demand_hit_rate\":%.4f,\"oracle_hit_rate\":%.4f,\"held_out_hit_rate\":%.4f,"
        "\"io_stall_share\":%.4f,\"io_stall_prefetch_share\":%.4f,\"io_stall_demand_share\":%.4f,\"limit_decode_tok_"
        "s\":%.4f,\"limit_hindsight_decode_tok_s\":%.4f,\"roofline_gbps\":%.3f,\"weight_gbps\":%.3f,"
        "\"prefetch_precision\":%.4f,\"prefetch_recall\":%.4f,\"decode_tok_s_1thread\":%.4f,"
        "\"paired_roofline_gbps\":%.3f,\"paired_weight_gbps\":%.3f,\"paired_roofline_share\":%.4f,"
        "\"compute_speed_under_reads\":%.4f}\n",
        path.c_str(), residency_mode_name(lo->residency), m.streams() ? "true" : "false",
        static_cast<unsigned long long>(m.plan().budget_bytes), static_cast<long>(*n_prompt), static_cast<long>(done),
        n_threads, static_cast<long>(so.batch), static_cast<double>(*n_prompt) / prefill_s, decode_tok_s, prefill_s,
        static_cast<unsigned long long>(peak), static_cast<unsigned long long>(cg_peak), bytes_per_token, ssd_gbps,
        ssd_probe_gbps, ssd_before.gb_per_s, ssd_after.gb_per_s, hit_rate, demand_hit, oracle_hit, held_out_hit,
        stall_share, prefetch_wait_share, demand_wait_share, limit_tok_s, hindsight_limit_tok_s, ram.gb_per_s,
        weight_gbps, precision, recall, scaling_1t, paired.roofline_gbps, paired.weight_gbps, paired.share,
        interference.loaded_calls > 0 ? interference.compute_speed() : -1.0);
  }
  return 0;
}

}  // namespace sniper::cli
