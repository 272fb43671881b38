// SPDX-License-Identifier: MIT
#include "server/generation_prologue.h"

#include <algorithm>

#include "server/server_context.h"

namespace sniper::server {

namespace {

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

// Whether `mark` occurs in any string or key of j.
bool contains_text(const Json& j, std::string_view mark) {
  if (j.is_string()) return j.get_ref<const std::string&>().find(mark) != std::string::npos;
  if (j.is_array()) return std::any_of(j.begin(), j.end(), [&](const Json& e) { return contains_text(e, mark); });
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key().find(mark) != std::string::npos || contains_text(it.value(), mark)) return true;
    }
  }
  return false;
}

// A mark for Tokenizer::escape_special_text that occurs nowhere in the request or the template:
// the first Unicode noncharacter of U+FDD0..U+FDEF that none of them holds (text never needs
// them; a request holding all 32 is refused).
Result<std::string> pick_literal_mark(std::initializer_list<const Json*> request, std::string_view template_source) {
  for (uint32_t cp = 0xFDD0; cp <= 0xFDEF; ++cp) {
    const std::string mark = {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
                              static_cast<char>(0x80 | (cp & 0x3F))};
    if (template_source.find(mark) != std::string_view::npos) continue;
    if (std::none_of(request.begin(), request.end(), [&](const Json* j) { return contains_text(*j, mark); })) {
      return mark;
    }
  }
  return make_error(
      "the messages hold every Unicode noncharacter U+FDD0..U+FDEF, which this server uses to keep message text "
      "apart from the chat template's markup; remove them");
}

std::string remove_mark(std::string_view text, std::string_view mark) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, mark.size(), mark) == 0) {
      i += mark.size();
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

// logit_bias entries as token ids of the model's vocabulary (text entries tokenized, without
// special tokens, each of their tokens getting the bias, as llama.cpp), into the sampler.
std::optional<ApiError> resolve_logit_bias(const ServedModel& m, const std::vector<LogitBiasEntry>& entries,
                                           SamplerConfig* sampler) {
  const int32_t n_vocab = m.tokenizer->n_vocab();
  for (const LogitBiasEntry& e : entries) {
    if (e.token >= 0) {
      if (e.token >= n_vocab) {
        return bad_request(e.field + " names token " + std::to_string(e.token) + " but the model's vocabulary has " +
                               std::to_string(n_vocab) + " tokens (ids 0 to " + std::to_string(n_vocab - 1) + ")",
                           e.field);
      }
      sampler->logit_bias.emplace_back(static_cast<int32_t>(e.token), e.bias);
      continue;
    }
    const std::vector<int32_t> ids = m.tokenizer->encode(e.text, /*add_special=*/false, /*parse_special=*/false);
    if (ids.empty()) return bad_request(e.field + ": the text encodes to no tokens", e.field);
    for (int32_t id : ids) sampler->logit_bias.emplace_back(id, e.bias);
  }
  return std::nullopt;
}

// The job for `prompt` on model `m` (sampler, stops, max tokens, grammar).
std::optional<ApiError> make_generation_job(ServedModel& m, const GenerationParams& p, std::vector<int32_t> prompt,
                                            std::shared_ptr<Job>* out) {
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

}  // namespace

std::optional<ApiError> chat_prompt_tokens(const ServedModel& m, const ChatRequest& request, PromptTokens* out,
                                           bool add_generation_prompt, bool content_special) {
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
  std::string mark;
  if (!content_special) {
    auto picked =
        pick_literal_mark({&request.messages, &request.tools, &request.template_kwargs}, m.model->chat_template());
    if (!picked.ok()) return bad_request(picked.error().message, "messages");
    mark = std::move(picked).value();
    in.escape_text = [&m, &mark, keep = model_output_markers(m.chat_format)](std::string_view s, bool model_output) {
      return m.tokenizer->escape_special_text(s, mark, model_output ? keep : std::vector<std::string>());
    };
  }
  auto rendered = render_chat(*m.chat_template, m.chat_format, in, m.bos_token, m.eos_token);
  if (!rendered.ok()) return bad_request(rendered.error().message, "messages");
  out->rendered = std::move(rendered).value();
  out->ids = m.tokenizer->encode_escaped(out->rendered.prompt, /*add_special=*/false, mark);
  if (!mark.empty()) out->rendered.prompt = remove_mark(out->rendered.prompt, mark);
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
  return check_prompt_length(n_prompt, m.scheduler->n_ctx());
}

std::optional<ApiError> check_prompt_length(size_t n_prompt, int64_t n_ctx) {
  if (n_prompt == 0) return bad_request("the prompt encodes to no tokens", "prompt");
  if (static_cast<int64_t>(n_prompt) >= n_ctx) {
    return bad_request("the prompt has " + std::to_string(n_prompt) + " tokens but the context holds " +
                           std::to_string(n_ctx) + " (at least one token must be left for the reply)",
                       "messages", "context_length_exceeded");
  }
  return std::nullopt;
}

std::optional<ApiError> prepare_generation(ServerContext& ctx, const GenerationRequest& request,
                                           std::shared_ptr<ModelLease> lease, PreparedGeneration* out) {
  if (lease == nullptr) {
    ApiError lease_error;
    lease = ctx.models->acquire(request.model, &lease_error);
    if (lease == nullptr) return lease_error;
  }
  ServedModel& m = lease->model();
  if (request.chat) {
    ChatRequest chat;
    chat.params = request.params;
    chat.messages = request.messages;
    chat.tools = request.tools;
    chat.template_kwargs = request.template_kwargs;
    if (request.thinking.has_value()) {
      if (m.chat_format.supports_thinking) {
        chat.template_kwargs["enable_thinking"] = *request.thinking;
      } else if (*request.thinking && request.thinking_required) {
        return bad_request("\"" + request.model + "\" does not support thinking", "think");
      }
    }
    if (auto e = chat_prompt_tokens(m, chat, &out->prompt, /*add_generation_prompt=*/true,
                                    ctx.options.content_special_tokens)) {
      return e;
    }
    out->template_rendered = m.chat_template.has_value();
    out->tools = chat.tools.is_array() && !chat.tools.empty();
  } else {
    out->prompt.ids = text_prompt_tokens(m, request.text);
  }
  GenerationParams params = request.params;
  if (auto e = resolve_logit_bias(m, params.logit_bias, &params.sampler)) return e;
  // The request's window: the slot's context, or a smaller one it asks for (Ollama num_ctx).
  int64_t n_ctx = m.scheduler->n_ctx();
  if (params.n_ctx > 0) {
    const int64_t trained = m.model->config().n_ctx_train;
    if (trained > 0 && params.n_ctx > trained) {
      return bad_request("options.num_ctx is " + std::to_string(params.n_ctx) + " but the model was trained for " +
                             std::to_string(trained) + " tokens",
                         "options.num_ctx");
    }
    if (params.n_ctx > n_ctx) {
      return bad_request("options.num_ctx is " + std::to_string(params.n_ctx) + " but this server's context is " +
                             std::to_string(n_ctx) + " tokens per request (start it with --ctx " +
                             std::to_string(params.n_ctx) + " for more)",
                         "options.num_ctx");
    }
    n_ctx = params.n_ctx;
  }
  if (auto e = check_prompt_length(out->prompt.ids.size(), n_ctx)) {
    if (e->code == "context_length_exceeded") e->param = request.prompt_param;
    return e;
  }
  if (params.n_ctx > 0) {  // the reply ends when the window is full ("length")
    const int64_t room = n_ctx - static_cast<int64_t>(out->prompt.ids.size());
    params.max_tokens = params.max_tokens < 0 ? room : std::min(params.max_tokens, room);
  }
  if (auto e = make_generation_job(m, params, out->prompt.ids, &out->job)) return e;
  out->lease = std::move(lease);
  return std::nullopt;
}

}  // namespace sniper::server
