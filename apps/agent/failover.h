// SPDX-License-Identifier: MIT
// Tiered backends with failover: a request for a tier walks a chain (a pinned backend first, then
// the backends of that tier, then the neighbouring tiers), retrying 5xx replies, putting a backend
// that is down, timing out or rate limited on a cooldown (Retry-After seconds or HTTP date for 429)
// and skipping it until the cooldown ends. An answer from any backend but the chain's first is a
// fallback. Invariants: cooldowns only move forward in time; clocks are injectable for tests;
// thread-compatible (the REPL uses one pool from one thread).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/backend_client.h"
#include "agent/config.h"

namespace sniper::agent {

// Parses a Retry-After value: non-negative integer seconds or an HTTP date (IMF-fixdate,
// RFC 850 or asctime) relative to `now`. A date in the past gives 0. nullopt if unparseable.
std::optional<double> parse_retry_after(const std::string& value, std::chrono::system_clock::time_point now);

struct BackendStats {
  int requests = 0;
  int failures = 0;
  long prompt_tokens = 0;
  long completion_tokens = 0;
  double busy_s = 0;      // time spent in successful requests
  double last_tok_s = 0;  // decode speed of the last successful streamed answer
};

struct Backend {
  BackendClient client;
  std::chrono::steady_clock::time_point cooldown_until{};
  std::string last_error;
  BackendStats stats;
  std::optional<std::vector<std::string>> capabilities;        // cached answer of /v1/models
  std::chrono::steady_clock::time_point capabilities_retry{};  // after a failed ask, not before
  const std::string& name() const { return client.config().name; }
};

struct PoolResult {
  ChatResult result;                 // the final attempt's result
  std::string backend;               // name of the backend that produced `result` ("" if none tried)
  bool fallback = false;             // answered by a backend other than the chain's first
  std::vector<std::string> notices;  // one line per failed attempt / skipped backend
};

struct PoolClocks {
  std::function<std::chrono::steady_clock::time_point()> steady = [] { return std::chrono::steady_clock::now(); };
  std::function<std::chrono::system_clock::time_point()> system = [] { return std::chrono::system_clock::now(); };
  std::function<void(double seconds)> sleep;  // backoff between retries; default: real sleep
};

class BackendPool {
 public:
  explicit BackendPool(const AgentConfig& config, PoolClocks clocks = {});

  // Adds a backend at the end of the config order (e.g. the local server started by -m).
  void add_backend(const BackendConfig& config);

  // Indices of backends in the order a request for `tier` tries them.
  std::vector<size_t> chain(Tier tier) const;

  // The capabilities of backend `index`: its config's "capabilities", else what GET /v1/models
  // lists for its model, asked once (a failed ask, or a backend cooling down, gives none; asked
  // again once the cooldown ends).
  const std::vector<std::string>& capabilities(size_t index);

  // chain(tier) without the backends whose capabilities lack one of `required`.
  std::vector<size_t> capable_chain(Tier tier, const std::vector<std::string>& required);

  // Sends a request along the chain for `tier` (capable_chain when the request requires
  // capabilities; none capable: a kClient failure naming what is missing). on_notice (may be empty) is called for each
  // failed attempt or skipped backend as it happens. Streams through on_delta. Stops at cancellation or when a stream
  // fails after it produced output (its text cannot be taken back).
  PoolResult chat(Tier tier, const ChatRequest& request, const DeltaFn& on_delta, const std::atomic<bool>* cancel,
                  const std::function<void(const std::string&)>& on_notice = {});

  // Pins a backend (tried first for every tier); "" unpins. Returns false for an unknown name.
  [[nodiscard]] bool pin(const std::string& name);
  const std::string& pinned() const { return pinned_; }

  // Seconds left on a backend's cooldown (0 when available).
  double cooldown_left_s(size_t index) const;

  size_t size() const { return backends_.size(); }
  const Backend& backend(size_t index) const { return backends_[index]; }
  const AgentConfig& config() const { return config_; }
  void set_timeouts(double connect_s, double read_s);

 private:
  AgentConfig config_;
  PoolClocks clocks_;
  std::vector<Backend> backends_;
  std::string pinned_;
};

}  // namespace sniper::agent
