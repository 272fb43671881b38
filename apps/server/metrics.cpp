// SPDX-License-Identifier: MIT
#include "server/metrics.h"

#include <cinttypes>
#include <cstdio>

namespace sniper::server {

namespace {

void metric(std::string* out, const char* name, const char* type, const char* help) {
  *out += "# HELP ";
  *out += name;
  *out += ' ';
  *out += help;
  *out += "\n# TYPE ";
  *out += name;
  *out += ' ';
  *out += type;
  *out += '\n';
}

void value(std::string* out, const char* name, double v, const char* labels = "") {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%s%s %.17g\n", name, labels, v);
  *out += buf;
}

void value_u(std::string* out, const char* name, uint64_t v) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%s %" PRIu64 "\n", name, v);
  *out += buf;
}

}  // namespace

Metrics::Metrics() : start_(std::chrono::steady_clock::now()), rate_time_(start_) { last_.ttft_ms = 0; }

void Metrics::count_request(Endpoint endpoint, RequestOutcome outcome) {
  requests_[static_cast<size_t>(endpoint) * 3 + static_cast<size_t>(outcome)]++;
}

uint64_t Metrics::requests(Endpoint endpoint, RequestOutcome outcome) const {
  return requests_[static_cast<size_t>(endpoint) * 3 + static_cast<size_t>(outcome)].load();
}

void Metrics::add_prompt_tokens(int64_t n_prompt, int64_t n_cached) {
  prompt_tokens_ += static_cast<uint64_t>(n_prompt);
  prompt_tokens_cached_ += static_cast<uint64_t>(n_cached);
}

void Metrics::record_timings(const RequestTimings& t) {
  std::lock_guard<std::mutex> lock(mu_);
  last_ = t;
  if (t.ttft_ms >= 0) {
    ttft_sum_s_ += t.ttft_ms / 1000.0;
    ++ttft_count_;
  }
}

void Metrics::record_latency(Latency kind, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  latency_[static_cast<size_t>(kind)].add(seconds);
}

void Metrics::set_engine(const EngineSnapshot& s) {
  std::lock_guard<std::mutex> lock(mu_);
  engine_ = s;
}

void Metrics::set_slots(int64_t total, int64_t busy, int64_t queued) {
  slots_total_ = total;
  slots_busy_ = busy;
  queued_ = queued;
}

std::string Metrics::render(uint64_t rss_bytes, uint64_t peak_rss_bytes, uint64_t memory_budget_bytes) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  metric(&out, "sniper_requests_total", "counter", "Requests by endpoint and outcome.");
  static constexpr const char* kEndpoints[] = {"chat", "completions"};
  static constexpr const char* kOutcomes[] = {"ok", "error", "cancelled"};
  for (size_t e = 0; e < 2; ++e) {
    for (size_t o = 0; o < 3; ++o) {
      char labels[96];
      std::snprintf(labels, sizeof(labels), "{endpoint=\"%s\",status=\"%s\"}", kEndpoints[e], kOutcomes[o]);
      out += "sniper_requests_total";
      out += labels;
      out += ' ' + std::to_string(requests_[e * 3 + o].load()) + '\n';
    }
  }
  metric(&out, "sniper_requests_active", "gauge", "Requests running in a slot.");
  value(&out, "sniper_requests_active", static_cast<double>(slots_busy_.load()));
  metric(&out, "sniper_requests_queued", "gauge", "Requests waiting for a slot.");
  value(&out, "sniper_requests_queued", static_cast<double>(queued_.load()));
  metric(&out, "sniper_slots_total", "gauge", "Sequence slots (sessions with their own KV cache).");
  value(&out, "sniper_slots_total", static_cast<double>(slots_total_.load()));
  metric(&out, "sniper_slots_busy", "gauge", "Slots serving a request.");
  value(&out, "sniper_slots_busy", static_cast<double>(slots_busy_.load()));
  metric(&out, "sniper_prompt_tokens_total", "counter", "Prompt tokens of all requests (cached ones included).");
  value_u(&out, "sniper_prompt_tokens_total", prompt_tokens_.load());
  metric(&out, "sniper_prompt_tokens_cached_total", "counter", "Prompt tokens reused from a slot's KV cache.");
  value_u(&out, "sniper_prompt_tokens_cached_total", prompt_tokens_cached_.load());
  metric(&out, "sniper_generated_tokens_total", "counter", "Generated tokens.");
  value_u(&out, "sniper_generated_tokens_total", generated_tokens_.load());
  metric(&out, "sniper_draft_tokens_total", "counter", "Speculative decoding: draft tokens verified.");
  value_u(&out, "sniper_draft_tokens_total", draft_tokens_.load());
  metric(&out, "sniper_draft_accepted_tokens_total", "counter", "Speculative decoding: draft tokens accepted.");
  value_u(&out, "sniper_draft_accepted_tokens_total", draft_accepted_tokens_.load());
  metric(&out, "sniper_batch_passes_total", "counter", "Batched forward passes (all busy slots in one pass).");
  value_u(&out, "sniper_batch_passes_total", batch_passes_.load());
  metric(&out, "sniper_batch_rows_total", "counter", "Tokens evaluated in batched passes.");
  value_u(&out, "sniper_batch_rows_total", batch_rows_.load());
  metric(&out, "sniper_batch_sequences_total", "counter", "Slots served by batched passes, summed over passes.");
  value_u(&out, "sniper_batch_sequences_total", batch_sequences_.load());
  metric(&out, "sniper_prefill_tokens_per_second", "gauge", "Prompt evaluation speed of the last request.");
  value(&out, "sniper_prefill_tokens_per_second",
        last_.prompt_ms > 0 ? last_.n_prompt_evaluated * 1000.0 / last_.prompt_ms : 0);
  metric(&out, "sniper_decode_tokens_per_second", "gauge", "Decode speed of the last request.");
  value(&out, "sniper_decode_tokens_per_second", last_.decode_ms > 0 ? last_.n_decoded * 1000.0 / last_.decode_ms : 0);
  metric(&out, "sniper_time_to_first_token_seconds", "gauge", "Time to first token of the last request.");
  value(&out, "sniper_time_to_first_token_seconds", last_.ttft_ms > 0 ? last_.ttft_ms / 1000.0 : 0);
  metric(&out, "sniper_time_to_first_token_seconds_sum", "counter", "Sum of the time to first token of all requests.");
  value(&out, "sniper_time_to_first_token_seconds_sum", ttft_sum_s_);
  metric(&out, "sniper_time_to_first_token_seconds_count", "counter", "Requests that produced a first token.");
  value_u(&out, "sniper_time_to_first_token_seconds_count", ttft_count_);
  latency_[0].render(&out, "sniper_queue_seconds", "Time a request waited for a slot.");
  latency_[1].render(&out, "sniper_first_token_seconds", "Time from a request's arrival to its first generated token.");
  latency_[2].render(&out, "sniper_inter_token_seconds", "Time between consecutive generated tokens of a request.");
  metric(&out, "sniper_rss_bytes", "gauge", "Resident set size of the process.");
  value_u(&out, "sniper_rss_bytes", rss_bytes);
  metric(&out, "sniper_peak_rss_bytes", "gauge", "Peak resident set size of the process.");
  value_u(&out, "sniper_peak_rss_bytes", peak_rss_bytes);
  metric(&out, "sniper_memory_budget_bytes", "gauge", "Memory budget the model was planned for (0 = unlimited).");
  value_u(&out, "sniper_memory_budget_bytes", memory_budget_bytes);
  metric(&out, "sniper_expert_cache_hit_rate", "gauge", "Expert cache hits / requests (0 when experts do not stream).");
  value(&out, "sniper_expert_cache_hit_rate",
        engine_.expert_requests > 0
            ? static_cast<double>(engine_.expert_hits) / static_cast<double>(engine_.expert_requests)
            : 0);
  metric(&out, "sniper_expert_cache_hits_total", "counter", "Expert requests served from memory.");
  value_u(&out, "sniper_expert_cache_hits_total", engine_.expert_hits);
  metric(&out, "sniper_expert_cache_misses_total", "counter", "Expert requests read from the SSD.");
  value_u(&out, "sniper_expert_cache_misses_total", engine_.expert_requests - engine_.expert_hits);
  metric(&out, "sniper_ssd_read_bytes_total", "counter", "Bytes read from the model file by the streaming I/O engine.");
  value_u(&out, "sniper_ssd_read_bytes_total", engine_.ssd_read_bytes);
  const double dt = std::chrono::duration<double>(now - rate_time_).count();
  if (dt >= 0.2) {
    rate_gbps_ = static_cast<double>(engine_.ssd_read_bytes - rate_bytes_) / dt / 1e9;
    rate_bytes_ = engine_.ssd_read_bytes;
    rate_time_ = now;
  }
  metric(&out, "sniper_ssd_read_gbps", "gauge", "SSD read rate since the previous scrape (GB/s).");
  value(&out, "sniper_ssd_read_gbps", rate_gbps_);
  metric(&out, "sniper_io_queue_depth", "gauge", "Reads in flight.");
  value_u(&out, "sniper_io_queue_depth", engine_.io_in_flight);
  metric(&out, "sniper_state_checkpoints", "gauge",
         "State checkpoints the slots keep for prefix reuse (hybrid models).");
  value_u(&out, "sniper_state_checkpoints", engine_.state_checkpoints);
  metric(&out, "sniper_state_checkpoint_bytes", "gauge", "Bytes allocated for the slots' state checkpoints.");
  value_u(&out, "sniper_state_checkpoint_bytes", engine_.state_checkpoint_bytes);
  metric(&out, "sniper_moe_experts_read_total", "counter",
         "Distinct routed experts read, per MoE layer and forward pass, summed (each read once for every row "
         "that chose it).");
  value_u(&out, "sniper_moe_experts_read_total", engine_.experts_read);
  metric(&out, "sniper_moe_experts_per_sequence_total", "counter",
         "The same counted per sequence of each pass and summed: what one pass per slot would read. Its ratio to "
         "sniper_moe_experts_read_total is the saving from experts shared across users.");
  value_u(&out, "sniper_moe_experts_per_sequence_total", engine_.experts_per_sequence);
  metric(&out, "sniper_uptime_seconds", "gauge", "Seconds since the server started.");
  value(&out, "sniper_uptime_seconds", std::chrono::duration<double>(now - start_).count());
  return out;
}

}  // namespace sniper::server
