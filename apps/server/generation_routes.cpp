// SPDX-License-Identifier: MIT
// POST /v1/chat/completions and POST /v1/completions: validate, render and tokenize the
// prompt on the HTTP thread, hand a Job to the scheduler, and turn its text into OpenAI
// responses: one JSON object, or server-sent events (`data: {chunk}\n\n` ... `data: [DONE]\n\n`).
// A client that goes away cancels its job: a streaming write that fails, or (non-streaming,
// after the first second) a failed keep-alive write of JSON whitespace before the body.
#include <chrono>

#include "server/response_formatter.h"
#include "server/server_context.h"

namespace sniper::server {

namespace {

using std::chrono::milliseconds;

std::string sse(const Json& j) { return "data: " + dump_json(j) + "\n\n"; }

RequestOutcome outcome_of(const JobResult& r) {
  if (!r.error.empty()) return RequestOutcome::kError;
  return r.finish_reason == "cancelled" ? RequestOutcome::kCancelled : RequestOutcome::kOk;
}

ApiError job_error(const JobResult& r) {
  ApiError e;
  e.status = r.error_status;
  e.message = r.error;
  if (r.error_status >= 500) e.type = "server_error";
  return e;
}

// The lease keeps the model loaded until the response is written (captured by the providers).
void run_job(ServerContext& ctx, std::shared_ptr<ModelLease> lease, Endpoint endpoint, const GenerationParams& p,
             std::shared_ptr<Job> job, std::shared_ptr<Formatter> fmt, httplib::Response& res) {
  if (!(*lease)->scheduler->submit(job)) {
    ApiError e;
    e.status = 503;
    e.type = "server_error";
    e.message = "the server is busy: all slots and the queue are full; retry later";
    ctx.metrics.count_request(endpoint, RequestOutcome::kError);
    return send_error(res, e);
  }
  ServerContext* c = &ctx;
  if (p.stream) {
    const bool include_usage = p.include_usage;
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [c, lease, endpoint, job, fmt, include_usage](size_t, httplib::DataSink& sink) {
          auto write = [&](const std::string& s) {
            if (sink.write(s.data(), s.size())) return true;
            job->cancel();
            return false;
          };
          auto write_all = [&](const std::vector<Json>& chunks) {
            for (const Json& j : chunks) {
              if (!write(sse(j))) return false;
            }
            return true;
          };
          bool ok = write_all(fmt->start());
          bool done = false;
          while (ok && !done) {
            std::string text;
            done = job->wait(milliseconds(200), &text);
            if (!text.empty()) {
              ok = write_all(fmt->on_text(text));
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
          if (!r.error.empty()) {
            ok = write(sse(error_json(job_error(r))));
          } else {
            ok = write_all(fmt->finish(r));
            if (ok && include_usage) ok = write(sse(fmt->usage_chunk(r)));
          }
          if (ok) ok = write("data: [DONE]\n\n");
          c->metrics.count_request(endpoint, ok ? outcome_of(r) : RequestOutcome::kCancelled);
          if (ok) sink.done();
          return ok;
        },
        [lease, job](bool) { job->cancel(); });
    return;
  }
  // Non-streaming: most requests finish within a second and get an ordinary response. Longer
  // ones commit to 200 and send JSON whitespace every second so a vanished client is noticed.
  const auto t0 = std::chrono::steady_clock::now();
  bool done = false;
  while (!done && std::chrono::steady_clock::now() - t0 < milliseconds(1000)) {
    std::string text;
    done = job->wait(milliseconds(100), &text);
    if (!text.empty()) fmt->on_text(text);
  }
  if (done) {
    const JobResult& r = job->result();
    ctx.metrics.count_request(endpoint, outcome_of(r));
    if (!r.error.empty()) return send_error(res, job_error(r));
    return send_json(res, fmt->response(r));
  }
  res.set_chunked_content_provider(
      "application/json",
      [c, lease, endpoint, job, fmt](size_t, httplib::DataSink& sink) {
        bool finished = false;
        auto last_beat = std::chrono::steady_clock::now();
        while (!finished) {
          std::string text;
          finished = job->wait(milliseconds(100), &text);
          if (!text.empty()) fmt->on_text(text);
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
        c->metrics.count_request(endpoint, outcome_of(r));
        const std::string body = dump_json(r.error.empty() ? fmt->response(r) : error_json(job_error(r)));
        if (!sink.write(body.data(), body.size())) return false;
        sink.done();
        return true;
      },
      [lease, job](bool) { job->cancel(); });
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
      return bad_request(at + ".role is '" + r + "' but must be one of system, user, assistant (this model has no chat template)", "messages");
    }
    auto content = m.find("content");
    std::string text;
    if (content != m.end() && content->is_string()) {
      text = content->get<std::string>();
    } else if (content != m.end() && content->is_array()) {
      for (const Json& part : *content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string()) {
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
