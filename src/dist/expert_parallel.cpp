// SPDX-License-Identifier: MIT
#include "dist/expert_parallel.h"

#include <chrono>
#include <cstdio>
#include <cstring>

#include "base/thread_pool.h"
#include "io/io_engine.h"
#include "model/blocks/moe_ffn.h"

namespace sniper {

namespace {

constexpr size_t kHeaderBytes = 4 * sizeof(int64_t);
constexpr size_t kAnswerHeaderBytes = 2 * sizeof(int64_t);
constexpr size_t kMaxMessageBytes = 1024;

size_t request_bytes(int64_t n_rows, int64_t n_pairs, int64_t dim) {
  return kHeaderBytes + static_cast<size_t>(n_rows * dim) * sizeof(float) +
         static_cast<size_t>(n_pairs) * sizeof(ExpertPair);
}

}  // namespace

Status ClusterExperts::post(int rank, int64_t layer_idx, const float* h, int64_t n_rows, int64_t dim,
                            std::span<const ExpertPair> pairs) {
  // After a lost rank every pass would wait out the timeout again: fail at once with the cause.
  if (std::string lost = cluster_.lost_reason(); !lost.empty()) {
    return make_error("a rank was lost earlier (%s); restart the job", lost.c_str());
  }
  const int64_t n_pairs = static_cast<int64_t>(pairs.size());
  send_.resize(request_bytes(n_rows, n_pairs, dim));
  const int64_t header[4] = {layer_idx, n_rows, n_pairs, dim};
  unsigned char* p = send_.data();
  std::memcpy(p, header, kHeaderBytes);
  p += kHeaderBytes;
  std::memcpy(p, h, static_cast<size_t>(n_rows * dim) * sizeof(float));
  p += static_cast<size_t>(n_rows * dim) * sizeof(float);
  std::memcpy(p, pairs.data(), pairs.size() * sizeof(ExpertPair));
  const auto t0 = std::chrono::steady_clock::now();
  Status st = cluster_.send(rank, kTagExperts, send_.data(), send_.size());
  front_.send_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++front_.posts;
  front_.bytes_sent += send_.size();
  return st;
}

Status ClusterExperts::collect(int rank, float* out, int64_t n_pairs, int64_t dim) {
  const size_t payload = static_cast<size_t>(n_pairs * dim) * sizeof(float);
  recv_.resize(kAnswerHeaderBytes + std::max(payload, kMaxMessageBytes));
  const auto t0 = std::chrono::steady_clock::now();
  auto received = cluster_.receive(rank, kTagAnswer, recv_.data(), recv_.size());
  front_.wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  SNIPER_ASSIGN_OR_RETURN(size_t got, std::move(received));
  front_.bytes_received += got;
  int64_t header[2] = {0, 0};
  if (got < kAnswerHeaderBytes) {
    return make_error("rank %d (host %s) sent a %zu-byte answer, shorter than its header", rank,
                      cluster_.host_of(rank).c_str(), got);
  }
  std::memcpy(header, recv_.data(), kAnswerHeaderBytes);
  const size_t body = got - kAnswerHeaderBytes;
  if (header[0] != 0) {
    const size_t n = std::min(body, static_cast<size_t>(std::max<int64_t>(header[1], 0)));
    return make_error("rank %d (host %s) failed: %.*s", rank, cluster_.host_of(rank).c_str(), static_cast<int>(n),
                      reinterpret_cast<const char*>(recv_.data() + kAnswerHeaderBytes));
  }
  if (body != payload) {
    return make_error("rank %d (host %s) answered %zu bytes of expert outputs, expected %zu", rank,
                      cluster_.host_of(rank).c_str(), body, payload);
  }
  std::memcpy(out, recv_.data() + kAnswerHeaderBytes, payload);
  return ok_status();
}

Status ClusterExperts::stop_all() {
  // A lost rank cannot be told; the cluster aborts the job on exit instead (cluster.h).
  if (std::string lost = cluster_.lost_reason(); !lost.empty()) {
    return make_error("the serving ranks were not stopped: a rank was lost (%s)", lost.c_str());
  }
  Status first = ok_status();
  for (int r = 1; r < cluster_.size(); ++r) {
    Status st = cluster_.send(r, kTagStop, nullptr, 0);
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

Result<std::vector<RankFigures>> ClusterExperts::rank_figures() {
  if (std::string lost = cluster_.lost_reason(); !lost.empty()) {
    return make_error("a rank was lost earlier (%s)", lost.c_str());
  }
  std::vector<RankFigures> all(static_cast<size_t>(cluster_.size()));
  for (int r = 1; r < cluster_.size(); ++r) {
    SNIPER_TRY(cluster_.send(r, kTagFigures, nullptr, 0));
    RankFigures f;
    SNIPER_ASSIGN_OR_RETURN(size_t got, cluster_.receive(r, kTagFiguresAnswer, &f, sizeof(f)));
    if (got != sizeof(f)) {
      return make_error("rank %d (host %s) sent %zu bytes of figures, expected %zu", r, cluster_.host_of(r).c_str(),
                        got, sizeof(f));
    }
    all[static_cast<size_t>(r)] = f;
  }
  return all;
}

Status serve_experts(Cluster& cluster, Model& model, int64_t max_batch, int n_threads) {
  const ModelConfig& c = model.config();
  MoeFfn moe(c, model.weights(), max_batch, model.sources().experts);
  BlockBuffers bufs;
  ThreadPool pool(n_threads);
  std::vector<unsigned char> in;
  std::vector<unsigned char> answer;
  std::vector<ExpertPair> pairs;
  using Clock = std::chrono::steady_clock;
  RankFigures fig;
  fig.planned_bytes = model.plan().planned_bytes();
  auto figures_now = [&] {
    RankFigures f = fig;
    if (const ExpertCache* cache = model.expert_cache()) {
      const LayerCacheStats t = cache->stats().total();
      f.cache_requests = t.requests;
      f.cache_hits = t.hits;
    }
    if (model.io() != nullptr) {
      const IoStats io = model.io()->stats();
      f.ssd_bytes = io.bytes_read;
      f.ssd_stall_s = io.stall_seconds;
    }
    return f;
  };
  for (;;) {
    SNIPER_ASSIGN_OR_RETURN(auto next, cluster.wait_message(0));
    const auto [tag, bytes] = next;
    in.resize(std::max<size_t>(bytes, 1));
    SNIPER_ASSIGN_OR_RETURN(size_t got, cluster.receive(0, tag, in.data(), in.size()));
    if (tag == kTagStop) {
      const RankFigures f = figures_now();
      std::fprintf(stderr,
                   "rank %d (host %s): served %llu expert requests (%llu routed rows), %.1f MiB in, %.1f MiB out, "
                   "%.1f ms computing%s\n",
                   cluster.rank(), cluster.host().c_str(), static_cast<unsigned long long>(f.requests),
                   static_cast<unsigned long long>(f.rows), static_cast<double>(f.bytes_in) / (1 << 20),
                   static_cast<double>(f.bytes_out) / (1 << 20), f.compute_s * 1e3,
                   model.expert_cache() != nullptr ? ", experts streamed through its own cache" : ", experts resident");
      return ok_status();
    }
    if (tag == kTagFigures) {
      const RankFigures f = figures_now();
      SNIPER_TRY(cluster.send(0, kTagFiguresAnswer, &f, sizeof(f)));
      continue;
    }
    fig.bytes_in += got;
    const auto t0 = Clock::now();
    Status st = ok_status();
    int64_t header[4] = {0, 0, 0, 0};
    if (tag != kTagExperts) {
      st = make_error("unknown message tag %d from rank 0", tag);
    } else if (got < kHeaderBytes) {
      st = make_error("expert request of %zu bytes is shorter than its header", got);
    } else {
      std::memcpy(header, in.data(), kHeaderBytes);
      const int64_t layer_idx = header[0], n_rows = header[1], n_pairs = header[2], dim = header[3];
      if (dim != c.dim || n_rows < 1 || n_rows > max_batch || n_pairs < 1 || n_pairs > n_rows * c.n_experts_active) {
        st = make_error(
            "expert request (dim %ld, %ld rows, %ld pairs) does not fit this model (dim %ld, at most %ld "
            "rows of %ld experts)",
            static_cast<long>(dim), static_cast<long>(n_rows), static_cast<long>(n_pairs), static_cast<long>(c.dim),
            static_cast<long>(max_batch), static_cast<long>(c.n_experts_active));
      } else if (got != request_bytes(n_rows, n_pairs, dim)) {
        st =
            make_error("expert request is %zu bytes but its header says %zu", got, request_bytes(n_rows, n_pairs, dim));
      } else if (layer_idx < 0 || layer_idx >= c.n_layers) {
        st = make_error("expert request for layer %ld, outside [0, %ld)", static_cast<long>(layer_idx),
                        static_cast<long>(c.n_layers));
      } else {
        const float* rows = reinterpret_cast<const float*>(in.data() + kHeaderBytes);
        pairs.resize(static_cast<size_t>(n_pairs));
        std::memcpy(pairs.data(), in.data() + kHeaderBytes + static_cast<size_t>(n_rows * dim) * sizeof(float),
                    pairs.size() * sizeof(ExpertPair));
        answer.resize(kAnswerHeaderBytes + static_cast<size_t>(n_pairs * dim) * sizeof(float));
        st = moe.serve_pairs(layer_idx, model.weights().layers[static_cast<size_t>(layer_idx)], rows, n_rows, pairs,
                             reinterpret_cast<float*>(answer.data() + kAnswerHeaderBytes), bufs, pool);
        if (st.ok()) {
          const int64_t ok_header[2] = {0, n_pairs * dim};
          std::memcpy(answer.data(), ok_header, kAnswerHeaderBytes);
          ++fig.requests;
          fig.rows += static_cast<uint64_t>(n_pairs);
        }
      }
    }
    if (!st.ok()) {
      const std::string msg = st.error().message.substr(0, kMaxMessageBytes);
      answer.resize(kAnswerHeaderBytes + msg.size());
      const int64_t err_header[2] = {1, static_cast<int64_t>(msg.size())};
      std::memcpy(answer.data(), err_header, kAnswerHeaderBytes);
      std::memcpy(answer.data() + kAnswerHeaderBytes, msg.data(), msg.size());
    }
    fig.compute_s += std::chrono::duration<double>(Clock::now() - t0).count();
    fig.bytes_out += answer.size();
    SNIPER_TRY(cluster.send(0, kTagAnswer, answer.data(), answer.size()));
  }
}

}  // namespace sniper
