// SPDX-License-Identifier: MIT
#include "bench_depth.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "base/memory_limit.h"
#include "base/process_stats.h"
#include "common.h"

namespace sniper::cli {

namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// Deterministic ids in [3, vocab) (xorshift), different from the bench prompt's sequence.
int32_t filler_token(uint64_t& x, int64_t vocab) {
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return static_cast<int32_t>(3 + x % static_cast<uint64_t>(vocab - 3));
}

}  // namespace

Result<std::vector<int64_t>> parse_depths(const std::string& text) {
  std::vector<int64_t> depths;
  for (const std::string& item : split_commas(text)) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || end == nullptr || *end != '\0' || v < 1 || v > (1 << 24)) {
      return make_error("--depths item '%s' is not a token count in [1, %d]", item.c_str(), 1 << 24);
    }
    depths.push_back(v);
  }
  std::sort(depths.begin(), depths.end());
  depths.erase(std::unique(depths.begin(), depths.end()), depths.end());
  return depths;
}

Result<std::vector<KvConfig>> parse_kv_configs(const std::string& text, const KvConfig& base) {
  std::vector<KvConfig> configs;
  for (const std::string& item : split_commas(text)) {
    KvConfig c = base;
    const size_t slash = item.find('/');
    SNIPER_ASSIGN_OR_RETURN(c.k, parse_kv_type(item.substr(0, slash)));
    c.v = c.k;
    if (slash != std::string::npos) {
      SNIPER_ASSIGN_OR_RETURN(c.v, parse_kv_type(item.substr(slash + 1)));
    }
    if (Status st = validate_kv_config(c); !st.ok()) {
      return make_error("--depth-kv item '%s': %s", item.c_str(), st.error().message.c_str());
    }
    configs.push_back(c);
  }
  return configs;
}

std::string kv_label(const KvConfig& c) {
  std::string s = kv_type_name(c.k);
  if (c.v != c.k) s = s + "/" + kv_type_name(c.v);
  if (c.flash()) s += " fa";
  return s;
}

namespace {

// Evaluates pseudo-random tokens until the session holds `depth`.
Status fill_to(Session& session, int64_t depth, int64_t batch, uint64_t& x, int64_t vocab, const KvConfig& kv) {
  while (session.n_past() < depth) {
    const int64_t n = std::min<int64_t>(batch, depth - session.n_past());
    std::vector<int32_t> chunk(static_cast<size_t>(n));
    for (int32_t& t : chunk) t = filler_token(x, vocab);
    SNIPER_TRY(session.eval(chunk));
    std::fprintf(stderr, "\rdepth %s: filling %ld/%ld   ", kv_label(kv).c_str(), static_cast<long>(session.n_past()),
                 static_cast<long>(depth));
  }
  return Status();
}

// Cuts the session back to `depth` (from its checkpoint there when the state needs one).
Status back_to(Session& session, int64_t depth) {
  if (session.truncate(depth) != depth) {
    return make_error("the model's state cannot be cut back to depth %ld after a measurement",
                      static_cast<long>(depth));
  }
  return Status();
}

// Times n_prefill tokens in one call at the session's depth, then cuts it back.
Result<double> time_prefill(Session& session, int64_t n_prefill, uint64_t& x, int64_t vocab) {
  const int64_t depth = session.n_past();
  std::vector<int32_t> chunk(static_cast<size_t>(n_prefill));
  for (int32_t& t : chunk) t = filler_token(x, vocab);
  const double t0 = now_s();
  SNIPER_TRY(session.eval(chunk));
  const double tok_s = static_cast<double>(n_prefill) / (now_s() - t0);
  SNIPER_TRY(back_to(session, depth));
  return tok_s;
}

// Fills the session to `depth`, checkpoints it there and, with n_prefill > 0, times a prompt
// chunk at that depth (cutting back after it).
Result<DepthPoint> reach_depth(Session& session, const KvConfig& kv, int64_t depth, int64_t batch, int64_t n_prefill,
                               uint64_t& x, int64_t vocab) {
  DepthPoint p;
  p.kv_type = kv;
  p.depth = depth;
  const double t_fill = now_s();
  SNIPER_TRY(fill_to(session, depth, batch, x, vocab, kv));
  p.fill_s = now_s() - t_fill;
  session.checkpoint();  // a no-op unless the state needs checkpoints
  if (n_prefill > 0) {
    SNIPER_ASSIGN_OR_RETURN(p.prefill_tok_s, time_prefill(session, n_prefill, x, vocab));
  }
  return p;
}

SessionOptions depth_session_options(const SessionOptions& base, const KvConfig& kv, int64_t n_ctx) {
  SessionOptions so = base;
  so.kv_type = kv;
  so.n_ctx = n_ctx;
  // A recurrent or sliding-window state cannot be cut back after a measurement by forgetting KV
  // rows: one checkpoint, taken at the depth, restores it.
  so.n_checkpoints = 1;
  so.checkpoint_interval = int64_t{1} << 40;
  return so;
}

// kOnce: each KV config's session filled once through the depths.
Result<std::vector<DepthPoint>> measure_filled_once(Model& model, const SessionOptions& base,
                                                    const std::vector<int64_t>& depths,
                                                    const std::vector<KvConfig>& kv_types, int64_t n_decode,
                                                    int64_t n_prefill, uint64_t& x) {
  std::vector<DepthPoint> points;
  const int64_t vocab = model.config().vocab_size;
  const int64_t n_ctx = std::max(base.n_ctx, depths.back() + std::max(n_decode, n_prefill) + 1);
  for (const KvConfig& kv : kv_types) {
    const SessionOptions so = depth_session_options(base, kv, n_ctx);
    SNIPER_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::create(model, so));
    for (int64_t depth : depths) {
      SNIPER_ASSIGN_OR_RETURN(DepthPoint p, reach_depth(*session, kv, depth, so.batch, n_prefill, x, vocab));
      const double t0 = now_s();
      for (int64_t i = 0; i < n_decode; ++i) {
        const int32_t one[1] = {filler_token(x, vocab)};
        SNIPER_TRY(session->eval(one));
      }
      p.decode_tok_s = static_cast<double>(n_decode) / (now_s() - t0);
      p.rss_bytes = current_rss_bytes();
      p.cgroup_bytes = cgroup_memory_usage_bytes();
      SNIPER_TRY(back_to(*session, depth));
      points.push_back(p);
      std::fprintf(stderr, "\rdepth %s %ld: decode %.3f tok/s, RSS %.1f MiB          \n", kv_label(kv).c_str(),
                   static_cast<long>(depth), p.decode_tok_s, static_cast<double>(p.rss_bytes) / (1 << 20));
    }
  }
  return points;
}

}  // namespace

Result<std::vector<DepthPoint>> measure_depths(Model& model, const SessionOptions& base,
                                               const std::vector<int64_t>& depths,
                                               const std::vector<KvConfig>& kv_types, int64_t n_decode,
                                               int64_t n_prefill, DepthFill fill) {
  std::vector<DepthPoint> points;
  if (depths.empty() || kv_types.empty() || n_decode < 1) return points;
  const int64_t vocab = model.config().vocab_size;
  uint64_t x = 0xD1B54A32D192ED03ull;
  if (fill == DepthFill::kOnce) return measure_filled_once(model, base, depths, kv_types, n_decode, n_prefill, x);
  // One session per point, each filled to its depth.
  std::vector<std::unique_ptr<Session>> sessions;
  for (const KvConfig& kv : kv_types) {
    for (int64_t depth : depths) {
      const SessionOptions so = depth_session_options(base, kv, depth + std::max(n_decode, n_prefill) + 1);
      SNIPER_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::create(model, so));
      SNIPER_ASSIGN_OR_RETURN(const DepthPoint p, reach_depth(*session, kv, depth, so.batch, n_prefill, x, vocab));
      sessions.push_back(std::move(session));
      points.push_back(p);
    }
  }
  // Decode one token at each point in turn, so that drift in the machine's speed reaches every
  // point alike.
  std::vector<double> seconds(points.size(), 0.0);
  for (int64_t i = 0; i < n_decode; ++i) {
    for (size_t k = 0; k < points.size(); ++k) {
      const int32_t one[1] = {filler_token(x, vocab)};
      const double t0 = now_s();
      SNIPER_TRY(sessions[k]->eval(one));
      seconds[k] += now_s() - t0;
    }
    std::fprintf(stderr, "\rdepth: decoding %ld/%ld      ", static_cast<long>(i + 1), static_cast<long>(n_decode));
  }
  std::fprintf(stderr, "\n");
  for (size_t k = 0; k < points.size(); ++k) points[k].decode_tok_s = static_cast<double>(n_decode) / seconds[k];
  return points;
}

}  // namespace sniper::cli
