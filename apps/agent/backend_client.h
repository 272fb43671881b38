// SPDX-License-Identifier: MIT
// OpenAI-compatible chat client over httplib::Client (http and https): POST /v1/chat/completions,
// streaming via server-sent events (`data: {...}` lines, `data: [DONE]`) or one JSON reply.
// Every failure is classified (down, timeout, rate limited, server error, bad request, protocol,
// cancelled) so the failover layer can decide between retry, cooldown and the next backend.
// A cancel flag (set from a SIGINT handler) is polled for every received chunk.
// Invariants: nothing throws; a BackendClient holds no connection between calls; thread-compatible.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/config.h"
#include "base/result.h"

namespace sniper::agent {

struct ChatRequest {
  nlohmann::json messages = nlohmann::json::array();  // OpenAI messages [{role, content}]
  std::optional<double> temperature;                  // omitted when empty
  int max_tokens = 0;                                 // 0 = omitted
  std::optional<bool> thinking;                       // chat_template_kwargs.enable_thinking
  bool stream = true;
  // Not sent: what the backend's model must read besides text ("vision", "audio"); the pool only
  // tries backends whose capabilities hold all of them.
  std::vector<std::string> required_capabilities;
};

enum class FailureKind {
  kNone,
  kDown,         // connection refused / DNS / TLS failure: the backend is not there
  kTimeout,      // connected but no answer within the read timeout
  kRateLimited,  // HTTP 429 (retry_after holds the Retry-After header)
  kServer,       // HTTP 5xx
  kClient,       // other HTTP 4xx (bad request, unknown model, auth)
  kProtocol,     // 200 but the body is not a chat completion
  kCancelled,    // the cancel flag was set
};
const char* failure_name(FailureKind kind);

struct ChatResult {
  std::string content;    // assistant text (content deltas concatenated)
  std::string reasoning;  // reasoning_content, if the server separates it
  std::string finish_reason;
  FailureKind failure = FailureKind::kNone;
  int http_status = 0;
  std::string error;          // human-readable failure description
  std::string retry_after;    // raw Retry-After header of a 429/503
  int prompt_tokens = 0;      // from usage when reported, else 0
  int completion_tokens = 0;  // from usage when reported, else the number of content chunks
  double ttft_s = 0;          // time to the first content/reasoning delta
  double elapsed_s = 0;
  bool streamed = false;  // the reply came as SSE (ttft_s is then the real first-token time)
  bool ok() const { return failure == FailureKind::kNone; }
  // Streamed: completion tokens over the decode time (after the first token). Not streamed:
  // completion tokens over the whole request time.
  double tokens_per_second() const;
};

// Called for each streamed delta: text and whether it is reasoning (thinking) text.
using DeltaFn = std::function<void(std::string_view text, bool reasoning)>;

// Incremental server-sent-events parser: feed raw bytes, get each event's data payload
// (multiple data lines joined with '\n'). Handles \n and \r\n and lines split across feeds.
class SseParser {
 public:
  void feed(std::string_view bytes, const std::function<void(const std::string& data)>& on_event);
  void finish(const std::function<void(const std::string& data)>& on_event);

 private:
  void take_line(std::string_view line, const std::function<void(const std::string&)>& on_event);
  std::string line_;
  std::string data_;
  bool has_data_ = false;
};

// Splits "https://host:port/prefix" into origin ("https://host:port") and path prefix ("/prefix",
// no trailing slash). Returns false for a URL that is not http(s).
[[nodiscard]] bool split_url(const std::string& url, std::string* origin, std::string* path);

// Path of an OpenAI endpoint under a base URL path: "" -> "/v1/chat/completions",
// "/v1" -> "/v1/chat/completions", "/api/v1/" -> "/api/v1/chat/completions".
std::string endpoint_path(const std::string& base_path, const std::string& endpoint);

class BackendClient {
 public:
  BackendClient(BackendConfig config, double connect_timeout_s, double read_timeout_s);

  // Sends one chat request. on_delta (may be empty) sees streamed text as it arrives. Never
  // throws; failures are in the result. cancel (may be null) is polled per received chunk.
  ChatResult chat(const ChatRequest& request, const DeltaFn& on_delta, const std::atomic<bool>* cancel) const;

  // Ok when the server answers HTTP at all (any status: a 401 still means it is there); the
  // Error names the backend, its URL and why nothing answered (connection refused, timeout).
  [[nodiscard]] Status probe(double timeout_s) const;

  // GET /v1/models: the ids the server offers.
  [[nodiscard]] Result<std::vector<std::string>> list_models() const;

  // GET /v1/models: the "capabilities" of the entry for this backend's model (its id or one of its
  // aliases equals config().model; with no model configured, the first entry). An entry without
  // the field, or no matching entry, gives an empty list.
  [[nodiscard]] Result<std::vector<std::string>> model_capabilities() const;

  // The request body chat() would send (exposed for tests).
  nlohmann::json request_body(const ChatRequest& request) const;

  const BackendConfig& config() const { return config_; }

 private:
  // GET /v1/models: the reply, checked to hold a "data" array.
  [[nodiscard]] Result<nlohmann::json> get_models() const;

  BackendConfig config_;
  double connect_timeout_s_;
  double read_timeout_s_;
};

}  // namespace sniper::agent
