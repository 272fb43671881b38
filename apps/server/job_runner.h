// SPDX-License-Identifier: MIT
// run_wire_job: submits a generation job and writes its output in any API's framing, streaming
// (a chunked body: start, one piece per text, end) or not (one body, after JSON whitespace
// keep-alives once the job runs past a second, as generation_routes.cpp does for OpenAI). A
// client that goes away cancels the job. The framing comes from a JobWire (Ollama's NDJSON,
// Anthropic's server-sent events). Runs on the HTTP connection thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <httplib.h>

#include "server/job.h"
#include "server/metrics.h"
#include "server/model_pool.h"
#include "server/openai_protocol.h"

namespace sniper::server {

struct ServerContext;

// The framing of one response. Thread-compatible: used by one connection thread.
class JobWire {
 public:
  virtual ~JobWire() = default;
  // Streaming: the bytes written first, for each new text, and at the end (success or failure).
  virtual std::string stream_start() = 0;
  virtual std::string stream_text(std::string_view text) = 0;
  virtual std::string stream_end(const JobResult& r) = 0;
  virtual std::string stream_error(int status, const std::string& message) = 0;
  // Non-streaming: text is fed as it comes; body() is the response for a finished job.
  virtual void feed(std::string_view text) = 0;
  virtual Json body(const JobResult& r) = 0;
  // An error response in the API's own form.
  virtual Json error_body(int status, const std::string& message) = 0;
};

// Submits `job` to the leased model's scheduler (503 in the wire's error form when the queue is
// full) and answers `res`. The lease is held until the response is written.
void run_wire_job(ServerContext& ctx, std::shared_ptr<ModelLease> lease, Endpoint endpoint, std::shared_ptr<Job> job,
                  std::shared_ptr<JobWire> wire, bool stream, const char* stream_content_type, httplib::Response& res);

}  // namespace sniper::server
