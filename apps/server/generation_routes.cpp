// SPDX-License-Identifier: MIT
// POST /v1/chat/completions and POST /v1/completions: validate, render and tokenize the
// prompt on the HTTP thread, hand a Job to the scheduler, and turn its text into OpenAI
// responses: one JSON object, or server-sent events (`data: {chunk}\n\n` ... `data: [DONE]\n\n`).
// A client that goes away cancels its job: a streaming write that fails, or (non-streaming,
// after the first second) a failed keep-alive write of JSON whitespace before the body.

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

// The lease keeps the model loaded until the response is written (captured by the providers).
void run_job(ServerContext& ctx, std::shared_ptr<ModelLease> lease, Endpoint endpoint, const GenerationParams& p,
             std::shared_ptr<Job> job, std::shared_ptr<Formatter> fmt, httplib::Response& res) {
  run_wire_job(ctx, std::move(lease), endpoint, std::move(job),
               std::make_shared<OpenAiWire>(std::move(fmt), p.include_usage), p.stream, "text/event-stream", res);
}

// Plain chat rendering for models without a template ("System: ...\nUser: ...\nAssistant:").
std::optional<ApiError> plain_chat(const Json& messages, std::string* out) {
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return bad_request(at + " must be an object", "messages");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) return bad_request(at + ".role must be a string", "messages");
    const std::string r = role->get<std::string>();
    if (r != "system" && r != "user" && r != "assistant" && r != "developer") {
      return bad_request(
          at + ".role is '" + r + "' but must be one of system, user, assistant (this model has no chat template)",
          "messages");
    }
    auto content = m.find("content");
    std::string text;
    if (content != m.end() && content->is_string()) {
      text = content->get<std::string>();
    } else if (content != m.end() && content->is_array()) {
      for (const Json& part : *content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string()) {
          return bad_request(at + ".content parts must be {\"type\": \"text\", \"text\": string}", "messages");
        }
        text += part["text"].get<std::string>();
      }
    } else if (!(content != m.end() && content->is_null())) {
      return bad_request(at + ".content must be a string, an array of text parts or null", "messages");
    }
    *out += (r == "user" ? "User: " : r == "assistant" ? "Assistant: " : "System: ") + text + "\n";
  }
  *out += "Assistant:";
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> chat_prompt_tokens(const ServedModel& m, const ChatRequest& request, PromptTokens* out,
                                           bool add_generation_prompt) {
  if (!m.chat_template) {
    std::string prompt;
    if (auto e = plain_chat(request.messages, &prompt)) return e;
    if (!add_generation_prompt) prompt.resize(prompt.size() - std::string_view("Assistant:").size());
    out->ids = m.tokenizer->encode(prompt, /*add_special=*/true, /*parse_special=*/false);
    return std::nullopt;
  }
  ChatRenderInput in;
  in.messages = request.messages;
  in.tools = request.tools;
  in.template_kwargs = request.template_kwargs;
  in.add_generation_prompt = add_generation_prompt;
  in.cancel = &m.stopping;  // SIGTERM stops a render in progress
  auto rendered = render_chat(*m.chat_template, m.chat_format, in, m.bos_token, m.eos_token);
  if (!rendered.ok()) return bad_request(rendered.error().message, "messages");
  out->rendered = std::move(rendered).value();
  out->ids = m.tokenizer->encode(out->rendered.prompt, /*add_special=*/false, /*parse_special=*/true);
  return std::nullopt;
}

std::vector<int32_t> text_prompt_tokens(const ServedModel& m, const std::string& prompt) {
  return m.tokenizer->encode(prompt, /*add_special=*/true, /*parse_special=*/true);
}

std::shared_ptr<ModelLease> lease_model(ServerContext& ctx, const Json& body, ApiError* error) {
  std::string name;
  if (body.is_object()) {
    if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
      if (!it->is_string()) {
        *error = bad_request("model must be a string", "model");
        return nullptr;
      }
      name = it->get<std::string>();
    }
  }
  return ctx.models->acquire(name, error);
}

std::optional<ApiError> check_prompt_length(const ServedModel& m, size_t n_prompt) {
  if (n_prompt == 0) return bad_request("the prompt encodes to no tokens", "prompt");
  const int64_t n_ctx = m.scheduler->n_ctx();
  if (static_cast<int64_t>(n_prompt) >= n_ctx) {
    return bad_request("the prompt has " + std::to_string(n_prompt) + " tokens but the context holds " +
                           std::to_string(n_ctx) + " (at least one token must be left for the reply)",
                       "messages", "context_length_exceeded");
  }
  return std::nullopt;
}

// Validates the model name and builds the job for `prompt`.
std::optional<ApiError> make_generation_job(ServedModel& m, const GenerationParams& p, std::vector<int32_t> prompt,
                                            std::shared_ptr<Job>* out) {
  if (auto e = check_prompt_length(m, prompt.size())) return e;
  auto job = std::make_shared<Job>();
  job->kind = JobKind::kGenerate;
  job->generator.sampler = p.sampler;
  job->generator.stop = p.stop;
  job->generator.stop_at_eog = !p.ignore_eos;
  job->generator.grammar = p.grammar;
  if (p.grammar != nullptr) {
    std::lock_guard<std::mutex> lock(m.grammar_vocab_mu);
    if (m.grammar_vocab == nullptr) m.grammar_vocab = make_token_vocabulary(*m.tokenizer);
    job->generator.grammar_vocab = m.grammar_vocab;
  }
  // Capped by the context: the generator stops when the context is full ("length").
  job->generator.n_predict = p.max_tokens;
  job->prompt = std::move(prompt);
  *out = std::move(job);
  return std::nullopt;
}

void handle_chat_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  auto fail = [&](const ApiError& e) {
    ctx.metrics.count_request(Endpoint::kChat, RequestOutcome::kError);
    send_error(res, e);
  };
  Json body;
  if (auto e = parse_body(req.body, &body)) return fail(*e);
  ChatRequest request;
  if (auto e = parse_chat_request(body, &request)) return fail(*e);
  ApiError lease_error;
  std::shared_ptr<ModelLease> lease = ctx.models->acquire(request.params.model, &lease_error);
  if (lease == nullptr) return fail(lease_error);
  ServedModel& m = lease->model();
  PromptTokens prompt;
  if (auto e = chat_prompt_tokens(m, request, &prompt)) return fail(*e);
  std::shared_ptr<Job> job;
  if (auto e = make_generation_job(m, request.params, std::move(prompt.ids), &job)) return fail(*e);
  const bool tools = request.tools.is_array() && !request.tools.empty();
  auto fmt = std::make_shared<ChatFormatter>(m.id, m.chat_format, prompt.rendered, tools);
  run_job(ctx, std::move(lease), Endpoint::kChat, request.params, std::move(job), std::move(fmt), res);
}

void handle_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  auto fail = [&](const ApiError& e) {
    ctx.metrics.count_request(Endpoint::kCompletions, RequestOutcome::kError);
    send_error(res, e);
  };
  Json body;
  if (auto e = parse_body(req.body, &body)) return fail(*e);
  CompletionRequest request;
  if (auto e = parse_completion_request(body, &request)) return fail(*e);
  ApiError lease_error;
  std::shared_ptr<ModelLease> lease = ctx.models->acquire(request.params.model, &lease_error);
  if (lease == nullptr) return fail(lease_error);
  ServedModel& m = lease->model();
  std::shared_ptr<Job> job;
  if (auto e = make_generation_job(m, request.params, text_prompt_tokens(m, request.prompt), &job)) {
    if (e->code == "context_length_exceeded") e->param = "prompt";
    return fail(*e);
  }
  auto fmt = std::make_shared<CompletionFormatter>(m.id);
  run_job(ctx, std::move(lease), Endpoint::kCompletions, request.params, std::move(job), std::move(fmt), res);
}

}  // namespace sniper::server
