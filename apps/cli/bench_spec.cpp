// SPDX-License-Identifier: MIT
#include "bench_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "base/memory_limit.h"
#include "base/process_stats.h"
#include "common.h"
#include "engine/generate.h"
#include "spec_args.h"

namespace sniper::cli {

namespace {

// Deterministic pseudo-random ids in [3, vocab) (the bench's prompt for a random-weight model).
std::vector<int32_t> random_ids(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> ids;
  uint64_t x = seed;
  for (int64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    ids.push_back(static_cast<int32_t>(3 + x % static_cast<uint64_t>(vocab - 3)));
  }
  return ids;
}

struct DecodeRun {
  std::string text;
  GenerateStats stats;
  double seconds = 0;
  uint64_t bytes_read = 0;
};

// Greedy decode of n tokens from the state after `prompt` (the session is cut back to
// prompt.size() - 1 tokens and the last prompt token evaluated again, so every run starts alike).
Result<DecodeRun> decode_from(Session& s, const Tokenizer& tok, const std::vector<int32_t>& prompt, int64_t n,
                              DraftSource* draft, const SpecConfig& spec) {
  const int64_t base = static_cast<int64_t>(prompt.size()) - 1;
  std::vector<int32_t> scratch;
  int64_t n_redo = 0;
  SNIPER_TRY(rollback_session(s, base, scratch, &n_redo));
  GenerateOptions go;
  go.n_predict = n;
  go.sampler.temperature = 0;
  go.stop_at_eog = false;
  go.draft = draft;
  go.spec = spec;
  DecodeRun r;
  const uint64_t read0 = storage_read_bytes();
  const double t0 = now_s();
  auto stats = generate(s, tok, {prompt.back()}, go, [&](std::string_view t) {
    r.text.append(t);
    return true;
  });
  if (!stats.ok()) return stats.error();
  r.seconds = now_s() - t0;
  r.bytes_read = storage_read_bytes() - read0;
  r.stats = *stats;
  return r;
}

struct CostPoint {
  int64_t n_tokens = 0;
  double ms = 0;               // median forward time
  double union_per_layer = 0;  // distinct experts per MoE layer, mean over layers and repeats
  double bytes_read = 0;       // per forward, mean
};

}  // namespace

std::vector<FlagSpec> bench_spec_flags() {
  return {
      {"--spec", nullptr, nullptr, "speculative decoding bench: drafts vs plain decode, verification-cost curve"},
      {"--spec-prompt", nullptr, "TEXT", "with --spec: prompt text (default: -p pseudo-random token ids)"},
      {"--spec-reps", nullptr, "N", "with --spec: forwards per point of the cost curve (default 3)"},
  };
}

int run_spec_bench(const Args& args) {
  auto n_prompt = args.get_int("--prompt-tokens", 64, 2, 1 << 20);
  auto n_gen = args.get_int("--gen-tokens", 64, 1, 1 << 20);
  auto reps = args.get_int("--spec-reps", 3, 1, 100);
  if (!n_prompt.ok()) return fail(n_prompt.error());
  if (!n_gen.ok()) return fail(n_gen.error());
  if (!reps.ok()) return fail(reps.error());
  auto req = parse_spec_args(args);
  if (!req.ok()) return fail(req.error());
  if (!req->enabled()) {
    // --spec alone: n-gram lookup, the source that needs nothing else.
    req->kind = SpecKind::kNgram;
    req->ngram_size = 3;
  }
  const std::vector<int64_t> curve_n = {1, 2, 4, 8, 16};
  // Logit rows: the speculative rounds' and the curve's longest forward (all rows), plus the last.
  const int64_t logit_rows = std::max(req->logit_rows(), curve_n.back() + 1);
  auto loaded =
      load_model_and_session(args, req->checkpoints(), req->draft_mem_bytes, logit_rows, req->kind == SpecKind::kMtp);
  if (!loaded.ok()) return fail(loaded.error());
  Model& m = *loaded->model;
  Session& s = *loaded->session;
  const ModelConfig& c = m.config();
  auto tok = m.tokenizer();
  if (!tok.ok()) return fail(tok.error());
  auto threads = args.get_int("--threads", 0, 0, 1024);
  if (!threads.ok()) return fail(threads.error());
  SamplerConfig greedy;
  greedy.temperature = 0;
  auto spec = setup_spec(*req, *loaded, greedy, static_cast<int>(*threads));
  if (!spec.ok()) return fail(spec.error());
  std::vector<int32_t> prompt;
  if (args.has("--spec-prompt")) {
    prompt = (*tok)->encode(args.get_string("--spec-prompt"), true, true);
    if (prompt.size() < 2) return fail(make_error("--spec-prompt must encode to at least 2 tokens"));
  } else {
    prompt = random_ids(*n_prompt, c.vocab_size, 0x9E3779B97F4A7C15ull);
  }
  const int64_t need_ctx = static_cast<int64_t>(prompt.size()) + *n_gen + curve_n.back() + 2;
  if (need_ctx > s.n_ctx()) {
    return fail(make_error("the bench needs %ld tokens of context but the session has %ld (raise --ctx)",
                           static_cast<long>(need_ctx), static_cast<long>(s.n_ctx())));
  }
  if (curve_n.back() > s.max_batch()) {
    return fail(
        make_error("the cost curve needs a forward batch of %ld tokens but the session's is %ld (raise --batch)",
                   static_cast<long>(curve_n.back()), static_cast<long>(s.max_batch())));
  }
  std::fprintf(stderr, "prefill %zu tokens...\n", prompt.size());
  Status st = s.eval(std::span<const int32_t>(prompt).first(prompt.size() - 1));
  if (!st.ok()) return fail(st.error());
  s.checkpoint();  // every run comes back here (hybrid states restore it)

  // Plain, speculative, plain again: the machine drifts, so plain decode brackets the other.
  std::fprintf(stderr, "plain decode %ld tokens...\n", static_cast<long>(*n_gen));
  auto plain1 = decode_from(s, **tok, prompt, *n_gen, nullptr, req->config);
  if (!plain1.ok()) return fail(plain1.error());
  std::fprintf(stderr, "speculative decode (%s)...\n", spec->source->name());
  auto sp = decode_from(s, **tok, prompt, *n_gen, spec->source.get(), req->config);
  if (!sp.ok()) return fail(sp.error());
  std::fprintf(stderr, "plain decode again...\n");
  auto plain2 = decode_from(s, **tok, prompt, *n_gen, nullptr, req->config);
  if (!plain2.ok()) return fail(plain2.error());
  const double plain_tok_s = 2.0 * static_cast<double>(*n_gen) / (plain1->seconds + plain2->seconds);
  const double spec_tok_s = static_cast<double>(*n_gen) / sp->seconds;
  const SpecStats& ss = sp->stats.spec;
  const double plain_bytes =
      static_cast<double>(plain1->bytes_read + plain2->bytes_read) / (2.0 * static_cast<double>(*n_gen));

  std::printf("model            %s (%s%s) | %s | budget %s\n", m.gguf().path.c_str(), c.arch.c_str(),
              c.is_moe() ? ", MoE" : "", m.streams() ? "streaming" : "resident",
              format_bytes(m.plan().budget_bytes).c_str());
  std::printf("draft            %s, --draft-max %ld --draft-min %ld%s\n", spec->source->name(),
              static_cast<long>(req->config.draft_max), static_cast<long>(req->config.draft_min),
              req->config.adaptive ? " (adaptive)" : "");
  std::printf("outputs          speculative %s plain greedy (%ld tokens)\n",
              sp->text == plain1->text ? "identical to" : "DIFFER from", static_cast<long>(*n_gen));
  std::printf(
      "acceptance       %.1f%% (%ld of %ld drafted tokens), %.2f tokens per target forward (%ld verify + "
      "%ld single, of which %ld backing off)\n",
      100 * ss.acceptance(), static_cast<long>(ss.n_accepted), static_cast<long>(ss.n_drafted), ss.tokens_per_forward(),
      static_cast<long>(ss.n_rounds), static_cast<long>(ss.n_plain), static_cast<long>(ss.n_backoff));
  std::printf("bytes read       %.2f MB/token speculative (%.2f MB per accepted draft token) vs %.2f MB/token plain\n",
              static_cast<double>(sp->bytes_read) / 1e6 / static_cast<double>(*n_gen),
              ss.n_accepted > 0 ? static_cast<double>(sp->bytes_read) / 1e6 / static_cast<double>(ss.n_accepted) : 0.0,
              plain_bytes / 1e6);
  std::printf("decode           speculative %.3f tok/s vs plain %.3f tok/s (%.3f then %.3f) = x%.2f (measured)\n",
              spec_tok_s, plain_tok_s, static_cast<double>(*n_gen) / plain1->seconds,
              static_cast<double>(*n_gen) / plain2->seconds, spec_tok_s / plain_tok_s);

  // Verification cost: one forward of n tokens after the prompt, `reps` times each (fresh ids).
  ExpertCache* cache = m.expert_cache();
  std::vector<CostPoint> curve;
  for (int64_t n : curve_n) {
    CostPoint p;
    p.n_tokens = n;
    std::vector<double> times;
    double unions = 0, bytes = 0;
    for (int64_t r = 0; r < *reps; ++r) {
      std::vector<int32_t> scratch;
      int64_t n_redo = 0;
      if (!rollback_session(s, static_cast<int64_t>(prompt.size()), scratch, &n_redo).ok())
        return fail(make_error("rollback failed"));
      if (s.n_past() < static_cast<int64_t>(prompt.size())) {
        st = s.eval(std::span<const int32_t>(prompt).subspan(static_cast<size_t>(s.n_past())));
        if (!st.ok()) return fail(st.error());
      }
      const std::vector<int32_t> ids = random_ids(n, c.vocab_size, 0x1234567ull + static_cast<uint64_t>(n * 131 + r));
      std::vector<uint32_t> before;
      if (cache != nullptr) before = cache->request_counts();
      const uint64_t read0 = storage_read_bytes();
      const double t0 = now_s();
      std::vector<float> logits;
      st = s.eval(ids, &logits);
      if (!st.ok()) return fail(st.error());
      times.push_back((now_s() - t0) * 1e3);
      bytes += static_cast<double>(storage_read_bytes() - read0);
      if (cache != nullptr) {
        const std::vector<uint32_t>& after = cache->request_counts();
        int64_t distinct = 0;
        for (size_t k = 0; k < after.size(); ++k) distinct += after[k] != before[k];
        unions += static_cast<double>(distinct) / static_cast<double>(c.n_layers);
      }
      std::fprintf(stderr, "\rcost curve: %ld tokens, rep %ld/%ld   ", static_cast<long>(n), static_cast<long>(r + 1),
                   static_cast<long>(*reps));
    }
    std::sort(times.begin(), times.end());
    p.ms = times[times.size() / 2];
    p.union_per_layer = unions / static_cast<double>(*reps);
    p.bytes_read = bytes / static_cast<double>(*reps);
    curve.push_back(p);
  }
  std::fprintf(stderr, "\n");
  std::printf("verification cost (one forward of N tokens after the prompt, median of %ld):\n",
              static_cast<long>(*reps));
  for (const CostPoint& p : curve) {
    std::printf("  N=%-3ld %9.1f ms  %8.1f ms/token  union %5.1f experts/layer  read %8.1f MB\n",
                static_cast<long>(p.n_tokens), p.ms, p.ms / static_cast<double>(p.n_tokens), p.union_per_layer,
                p.bytes_read / 1e6);
  }
  // A round verifies the pending token + k drafts (a forward of N = k + 1 tokens) and, when each
  // draft is kept with probability a independently, emits (1 - a^N) / (1 - a) tokens on average.
  const double t1 = curve.front().ms;
  std::printf("model-derived tok/s (per-token acceptance a, best N of the curve, draft cost not counted):\n");
  std::printf("  plain (N=1 forward)  %.3f tok/s\n", 1e3 / t1);
  for (double a : {0.5, 0.7, 0.9}) {
    double best = 0;
    int64_t best_n = 1;
    for (const CostPoint& p : curve) {
      const double tokens = (1 - std::pow(a, static_cast<double>(p.n_tokens))) / (1 - a);
      const double tok_s = tokens / (p.ms / 1e3);
      if (tok_s > best) {
        best = tok_s;
        best_n = p.n_tokens;
      }
    }
    std::printf("  a=%.1f                %.3f tok/s at N=%ld = x%.2f plain (model-derived)\n", a, best,
                static_cast<long>(best_n), best * t1 / 1e3);
  }
  return 0;
}

}  // namespace sniper::cli
