// SPDX-License-Identifier: MIT
// POST /v1/chat/completions and POST /v1/completions: validate, render and tokenize the
// prompt on the HTTP thread, hand a Job to the scheduler, and turn its text into OpenAI
// responses: one JSON object, or server-sent events (`data: {chunk}\n\n` ... `data: [DONE]\n\n`).
// A client that goes away cancels its job: a streaming write that fails, or (non-streaming,
// after the first second) a failed keep-alive write of JSON whitespace before the body.

#include "server/generation_prologue.h"
#include "server/job_runner.h"
#include "server/response_formatter.h"
#include "server/server_context.h"

namespace sniper::server {

namespace {

std::string sse(const Json& j) { return "data: " + dump_json(j) + "\n\n"; }

// OpenAI's framing of a job's output for run_wire_job (job_runner.h): server-sent events of the
// formatter's chunks ending in "data: [DONE]", or the formatter's one body; errors in OpenAI's form.
class OpenAiWire final : public JobWire {
 public:
  OpenAiWire(std::shared_ptr<Formatter> fmt, bool include_usage)
      : fmt_(std::move(fmt)), include_usage_(include_usage) {}
  std::string stream_start() override { return events(fmt_->start()); }
  std::string stream_text(std::string_view text) override { return events(fmt_->on_text(text)); }
  std::string stream_end(const JobResult& r) override {
    std::string out = events(fmt_->finish(r));
    if (include_usage_) out += sse(fmt_->usage_chunk(r));
    return out + "data: [DONE]\n\n";
  }
  std::string stream_error(int status, const std::string& message) override {
    return sse(error_body(status, message)) + "data: [DONE]\n\n";
  }
  void feed(std::string_view text) override { fmt_->on_text(text); }
  Json body(const JobResult& r) override { return fmt_->response(r); }
  Json error_body(int status, const std::string& message) override {
    ApiError e;
    e.status = status;
    e.message = message;
    if (status >= 500) e.type = "server_error";
    return error_json(e);
  }

 private:
  static std::string events(const std::vector<Json>& chunks) {
    std::string out;
    for (const Json& j : chunks) out += sse(j);
    return out;
  }
  std::shared_ptr<Formatter> fmt_;
  bool include_usage_;
};

}  // namespace

void handle_chat_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  auto fail = [&](const ApiError& e) {
    ctx.metrics.count_request(Endpoint::kChat, RequestOutcome::kError);
    send_error(res, e);
  };
  Json body;
  if (auto e = parse_body(req.body, &body)) return fail(*e);
  ChatRequest chat;
  if (auto e = parse_chat_request(body, &chat)) return fail(*e);
  GenerationRequest request;
  request.model = chat.params.model;
  request.params = std::move(chat.params);
  request.chat = true;
  request.messages = std::move(chat.messages);
  request.tools = std::move(chat.tools);
  request.template_kwargs = std::move(chat.template_kwargs);
  PreparedGeneration g;
  if (auto e = prepare_generation(ctx, request, nullptr, &g)) return fail(*e);
  ServedModel& m = g.lease->model();
  auto fmt = std::make_shared<ChatFormatter>(m.id, m.chat_format, g.prompt.rendered, g.tools);
  run_wire_job(ctx, std::move(g.lease), Endpoint::kChat, std::move(g.job),
               std::make_shared<OpenAiWire>(std::move(fmt), request.params.include_usage), request.params.stream,
               "text/event-stream", res);
}

void handle_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  auto fail = [&](const ApiError& e) {
    ctx.metrics.count_request(Endpoint::kCompletions, RequestOutcome::kError);
    send_error(res, e);
  };
  Json body;
  if (auto e = parse_body(req.body, &body)) return fail(*e);
  CompletionRequest completion;
  if (auto e = parse_completion_request(body, &completion)) return fail(*e);
  GenerationRequest request;
  request.model = completion.params.model;
  request.params = std::move(completion.params);
  request.text = std::move(completion.prompt);
  request.prompt_param = "prompt";
  PreparedGeneration g;
  if (auto e = prepare_generation(ctx, request, nullptr, &g)) return fail(*e);
  auto fmt = std::make_shared<CompletionFormatter>(g.lease->model().id);
  run_wire_job(ctx, std::move(g.lease), Endpoint::kCompletions, std::move(g.job),
               std::make_shared<OpenAiWire>(std::move(fmt), request.params.include_usage), request.params.stream,
               "text/event-stream", res);
}

}  // namespace sniper::server
