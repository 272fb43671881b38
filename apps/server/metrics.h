// SPDX-License-Identifier: MIT
// Metrics: the server's counters and gauges, updated by the HTTP threads and the scheduler
// thread, rendered as Prometheus text format 0.0.4 for GET /metrics (names in the server
// contract). Engine statistics (expert cache, I/O) are copied in by the scheduler thread, which
// is the only thread that runs forward passes, so no engine object is read concurrently.
// Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "server/latency_histogram.h"

namespace sniper::server {

enum class Endpoint { kChat, kCompletions };
enum class RequestOutcome { kOk, kError, kCancelled };
// Per-request latencies kept as histograms (seconds): time in the queue before a slot took the
// request, time from arrival to the first generated token, time between consecutive tokens.
enum class Latency { kQueue, kFirstToken, kInterToken };

// Gauges describing the last finished request, set together.
struct RequestTimings {
  int64_t n_prompt_evaluated = 0;
  double prompt_ms = 0;
  int64_t n_decoded = 0;
  double decode_ms = 0;
  double ttft_ms = 0;  // < 0: no token was produced
};

// Engine statistics copied by the scheduler thread.
struct EngineSnapshot {
  uint64_t expert_hits = 0;
  uint64_t expert_requests = 0;
  uint64_t ssd_read_bytes = 0;
  uint64_t io_in_flight = 0;
  uint64_t state_checkpoints = 0;       // kept by all slots (hybrid models' prefix reuse)
  uint64_t state_checkpoint_bytes = 0;  // allocated for them by all slots
  // MoE (model/blocks/moe_ffn.h RoutingStats), every pass so far: distinct experts read per layer
  // and pass, and the same counted per sequence (what one pass per slot would read).
  uint64_t experts_read = 0;
  uint64_t experts_per_sequence = 0;
};

class Metrics {
 public:
  Metrics();

  void count_request(Endpoint endpoint, RequestOutcome outcome);
  void add_prompt_tokens(int64_t n_prompt, int64_t n_cached);
  void add_generated_tokens(int64_t n) { generated_tokens_ += static_cast<uint64_t>(n); }
  // Speculative decoding: draft tokens verified and, of those, accepted.
  void add_draft_tokens(int64_t n_drafted, int64_t n_accepted) {
    draft_tokens_ += static_cast<uint64_t>(n_drafted);
    draft_accepted_tokens_ += static_cast<uint64_t>(n_accepted);
  }
  void record_timings(const RequestTimings& t);
  void record_latency(Latency kind, double seconds);
  // One batched forward pass of the scheduler: its rows (tokens) and sequences (slots).
  void add_pass(int64_t rows, int64_t sequences) {
    batch_passes_ += 1;
    batch_rows_ += static_cast<uint64_t>(rows);
    batch_sequences_ += static_cast<uint64_t>(sequences);
  }
  void set_engine(const EngineSnapshot& s);
  void set_slots(int64_t total, int64_t busy, int64_t queued);

  uint64_t prompt_tokens_cached() const { return prompt_tokens_cached_.load(); }
  uint64_t requests(Endpoint endpoint, RequestOutcome outcome) const;

  // The Prometheus text; rss/peak/budget are passed by the caller.
  std::string render(uint64_t rss_bytes, uint64_t peak_rss_bytes, uint64_t memory_budget_bytes);

 private:
  std::chrono::steady_clock::time_point start_;
  std::array<std::atomic<uint64_t>, 6> requests_{};  // [endpoint * 3 + outcome]
  std::atomic<uint64_t> prompt_tokens_{0};
  std::atomic<uint64_t> prompt_tokens_cached_{0};
  std::atomic<uint64_t> generated_tokens_{0};
  std::atomic<uint64_t> draft_tokens_{0};
  std::atomic<uint64_t> draft_accepted_tokens_{0};
  std::atomic<uint64_t> batch_passes_{0}, batch_rows_{0}, batch_sequences_{0};
  std::atomic<int64_t> slots_total_{0}, slots_busy_{0}, queued_{0};

  std::mutex mu_;  // guards the fields below
  RequestTimings last_;
  double ttft_sum_s_ = 0;
  uint64_t ttft_count_ = 0;
  EngineSnapshot engine_;
  LatencyHistogram latency_[3];  // [Latency]
  // Previous render's SSD byte count, for the recent read rate.
  std::chrono::steady_clock::time_point rate_time_;
  uint64_t rate_bytes_ = 0;
  double rate_gbps_ = 0;
};

}  // namespace sniper::server
