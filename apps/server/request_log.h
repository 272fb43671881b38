// SPDX-License-Identifier: MIT
// The per-request log of `sniper serve`: one line on stderr when a response has been written
// (streamed bodies included): client, method, route, model, status, prompt and completion tokens,
// how the generation ended, and the time taken; as text or as one JSON object per line
// (--log-format). By default the routes that dashboards poll every second (GET /health, /metrics,
// /props, /v1/models, the page) are left out; --verbose logs them too, with the user agent.
// How the record is filled: each admitted connection has its own thread and serves its requests
// one after another, streamed bodies included (http_listener.h), so the record of the request in
// flight is per thread: HttpServer::dispatch() begins it, the model pool notes the model a route
// leases, a generation job notes its counts when its consumer sees it done, and the listener's
// completion hook ends it. Thread-safe: the record is thread-local, the output is serialized.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "base/result.h"

namespace sniper::server {

enum class LogFormat { kText, kJson };
[[nodiscard]] Result<LogFormat> parse_log_format(const std::string& text);

struct RequestLogOptions {
  bool enabled = false;  // serve turns it on (--log-format off: not); in-process tests leave it off
  LogFormat format = LogFormat::kText;
  bool verbose = false;  // also the polled routes, and the user agent
};

struct RequestRecord {
  std::chrono::steady_clock::time_point start;
  std::string client;  // remote address
  std::string method;
  std::string path;
  std::string user_agent;
  std::string model;  // the model a route leased; "" when none
  int status = 0;
  int64_t prompt_tokens = -1;  // -1: no generation
  int64_t cached_tokens = 0;
  int64_t completion_tokens = -1;
  std::string finish;    // the generation's finish reason ("stop", "length", "cancelled")
  bool complete = true;  // false: the response could not be written to the end (client gone)
};

// Starts the calling thread's record for a request.
void begin_request_record(const std::string& client, const std::string& method, const std::string& path,
                          const std::string& user_agent);
// Notes on the calling thread's record (no-ops outside a request).
void note_request_model(const std::string& model);
void note_request_tokens(int64_t prompt, int64_t cached, int64_t completion, const std::string& finish);
// Ends the calling thread's record with the response's status and prints its line (when the
// options say so). Safe to call when no record was begun (nothing is printed).
void end_request_record(int status, bool complete, const RequestLogOptions& options);

// True for the routes left out without --verbose.
bool is_polled_route(const std::string& method, const std::string& path);
// The line for a record, without the newline. `elapsed_ms` from its start; `now_unix` for JSON.
std::string format_request_record(const RequestRecord& r, double elapsed_ms, LogFormat format, bool verbose,
                                  int64_t now_unix_ms);

}  // namespace sniper::server
