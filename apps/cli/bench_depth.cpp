// SPDX-License-Identifier: MIT
#include "bench_depth.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

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

Result<std::vector<DepthPoint>> measure_depths(Model& model, const SessionOptions& base, const std::vector<int64_t>& depths,
                                               const std::vector<KvConfig>& kv_types, int64_t n_decode,
                                               int64_t n_prefill) {
  std::vector<DepthPoint> points;
  if (depths.empty() || kv_types.empty() || n_decode < 1) return points;
  const int64_t vocab = model.config().vocab_size;
  uint64_t x = 0xD1B54A32D192ED03ull;
  // One session per point, each filled to its depth.
  std::vector<std::unique_ptr<Session>> sessions;
  for (const KvConfig& kv : kv_types) {
    for (int64_t depth : depths) {
      SessionOptions so = base;
      so.kv_type = kv;
      so.n_ctx = depth + std::max(n_decode, n_prefill) + 1;
      // A recurrent or sliding-window state cannot be cut back after the prefill measurement by
      // forgetting KV rows: one checkpoint, taken at the depth (below), restores it.
      so.n_checkpoints = 1;
      so.checkpoint_interval = int64_t{1} << 40;
      SNIPER_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::create(model, so));
      DepthPoint p;
      p.kv_type = kv;
      p.depth = depth;
      const double t_fill = now_s();
      while (session->n_past() < depth) {
        const int64_t n = std::min<int64_t>(so.batch, depth - session->n_past());
        std::vector<int32_t> chunk(static_cast<size_t>(n));
        for (int32_t& t : chunk) t = filler_token(x, vocab);
        SNIPER_TRY(session->eval(chunk));
        std::fprintf(stderr, "\rdepth %s: filling %ld/%ld   ", kv_label(kv).c_str(), static_cast<long>(session->n_past()),
                     static_cast<long>(depth));
      }
      p.fill_s = now_s() - t_fill;
      session->checkpoint();  // a no-op unless the state needs checkpoints
      if (n_prefill > 0) {
        std::vector<int32_t> chunk(static_cast<size_t>(n_prefill));
        for (int32_t& t : chunk) t = filler_token(x, vocab);
        const double t0 = now_s();
        SNIPER_TRY(session->eval(chunk));
        p.prefill_tok_s = static_cast<double>(n_prefill) / (now_s() - t0);
        if (session->truncate(depth) != depth) {
          return make_error("the model's state cannot be cut back to depth %ld after the prefill measurement",
                            static_cast<long>(depth));
        }
      }
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
