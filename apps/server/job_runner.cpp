// SPDX-License-Identifier: MIT
#include "server/job_runner.h"

#include <chrono>

#include "server/server_context.h"

namespace sniper::server {

namespace {

using std::chrono::milliseconds;

RequestOutcome outcome(const JobResult& r) {
  if (!r.error.empty()) return RequestOutcome::kError;
  return r.finish_reason == "cancelled" ? RequestOutcome::kCancelled : RequestOutcome::kOk;
}

}  // namespace

void run_wire_job(ServerContext& ctx, std::shared_ptr<ModelLease> lease, Endpoint endpoint, std::shared_ptr<Job> job,
                  std::shared_ptr<JobWire> wire, bool stream, const char* stream_content_type, httplib::Response& res) {
  if (const std::string why = ctx.options.degraded ? ctx.options.degraded() : std::string(); !why.empty()) {
    ctx.metrics.count_request(endpoint, RequestOutcome::kError);
    return send_json(res, wire->error_body(503, "the server cannot generate: " + why), 503);
  }
  if (!(*lease)->scheduler->submit(job)) {
    ctx.metrics.count_request(endpoint, RequestOutcome::kError);
    return send_json(res, wire->error_body(503, "the server is busy: all slots and the queue are full; retry later"),
                     503);
  }
  ServerContext* c = &ctx;
  if (stream) {
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        stream_content_type,
        [c, lease, endpoint, job, wire](size_t, httplib::DataSink& sink) {
          auto write = [&](const std::string& s) {
            if (s.empty() || sink.write(s.data(), s.size())) return true;
            job->cancel();
            return false;
          };
          bool ok = write(wire->stream_start());
          bool done = false;
          while (ok && !done) {
            std::string text;
            done = job->wait(milliseconds(200), &text);
            if (!text.empty()) {
              ok = write(wire->stream_text(text));
            } else if (!done && !sink.is_writable()) {
              job->cancel();
              ok = false;
            }
          }
          if (!ok) {
            const JobResult& r = job->wait_done();
            c->metrics.count_request(endpoint, r.error.empty() ? RequestOutcome::kCancelled : RequestOutcome::kError);
            return false;
          }
          const JobResult& r = job->result();
          ok = write(r.error.empty() ? wire->stream_end(r) : wire->stream_error(r.error_status, r.error));
          c->metrics.count_request(endpoint, ok ? outcome(r) : RequestOutcome::kCancelled);
          if (ok) sink.done();
          return ok;
        },
        [lease, job](bool) { job->cancel(); });
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  bool done = false;
  while (!done && std::chrono::steady_clock::now() - t0 < milliseconds(1000)) {
    std::string text;
    done = job->wait(milliseconds(100), &text);
    if (!text.empty()) wire->feed(text);
  }
  if (done) {
    const JobResult& r = job->result();
    ctx.metrics.count_request(endpoint, outcome(r));
    if (!r.error.empty()) return send_json(res, wire->error_body(r.error_status, r.error), r.error_status);
    return send_json(res, wire->body(r));
  }
  res.set_chunked_content_provider(
      "application/json",
      [c, lease, endpoint, job, wire](size_t, httplib::DataSink& sink) {
        bool finished = false;
        auto last_beat = std::chrono::steady_clock::now();
        while (!finished) {
          std::string text;
          finished = job->wait(milliseconds(100), &text);
          if (!text.empty()) wire->feed(text);
          if (!finished && std::chrono::steady_clock::now() - last_beat >= milliseconds(1000)) {
            last_beat = std::chrono::steady_clock::now();
            if (!sink.write(" ", 1)) {
              job->cancel();
              job->wait_done();
              c->metrics.count_request(endpoint, RequestOutcome::kCancelled);
              return false;
            }
          }
        }
        const JobResult& r = job->result();
        c->metrics.count_request(endpoint, outcome(r));
        const std::string body = dump_json(r.error.empty() ? wire->body(r) : wire->error_body(r.error_status, r.error));
        if (!sink.write(body.data(), body.size())) return false;
        sink.done();
        return true;
      },
      [lease, job](bool) { job->cancel(); });
}

}  // namespace sniper::server
