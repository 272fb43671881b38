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

Result<std::vector<KvType>> parse_kv_types(const std::string& text) {
  std::vector<KvType> types;
  for (const std::string& item : split_commas(text)) {
    SNIPER_ASSIGN_OR_RETURN(KvType t, parse_kv_type(item));
    types.push_back(t);
  }
  return types;
}

Result<std::vector<DepthPoint>> measure_depths(Model& model, const SessionOptions& base, const std::vector<int64_t>& depths,
                                               const std::vector<KvType>& kv_types, int64_t n_decode) {
  std::vector<DepthPoint> points;
  if (depths.empty() || kv_types.empty() || n_decode < 1) return points;
  const int64_t vocab = model.config().vocab_size;
  uint64_t x = 0xD1B54A32D192ED03ull;
  // One session per point, each filled to its depth.
  std::vector<std::unique_ptr<Session>> sessions;
  for (KvType kv : kv_types) {
    for (int64_t depth : depths) {
      SessionOptions so = base;
      so.kv_type = kv;
      so.n_ctx = depth + n_decode + 1;
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
        std::fprintf(stderr, "\rdepth %s: filling %ld/%ld   ", kv_type_name(kv), static_cast<long>(session->n_past()),
                     static_cast<long>(depth));
      }
      p.fill_s = now_s() - t_fill;
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
