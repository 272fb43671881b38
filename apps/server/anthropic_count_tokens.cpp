// SPDX-License-Identifier: MIT
// POST /v1/messages/count_tokens (Anthropic's token counting): the body of a Messages request
// without max_tokens (model, system, messages, tools, thinking), rendered through the model's chat
// template exactly as POST /v1/messages renders it, answered {"input_tokens": N}. Nothing is
// evaluated; the model is leased (loaded if needed) for its tokenizer and template.
#include "server/server_context.h"

#include "server/anthropic_protocol.h"
#include "server/generation_prologue.h"

namespace sniper::server {

void handle_anthropic_count_tokens(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  auto fail = [&](const ApiError& e) { send_json(res, anthropic_error_json(e.status, e.message), e.status); };
  Json body;
  if (auto e = parse_body(req.body, &body)) return fail(*e);
  if (!body.is_object()) return fail(bad_request("the body must be a JSON object"));
  // Counting takes no max_tokens (and no stream); the Messages parser wants one.
  body.erase("stream");
  if (!body.contains("max_tokens")) body["max_tokens"] = 1;
  AnthropicRequest request;
  if (auto e = parse_anthropic_messages(body, &request)) return fail(*e);
  if (!ctx.models->has(request.model)) {
    ApiError e = bad_request("model: " + request.model);
    e.status = 404;
    return fail(e);
  }
  ApiError lease_error;
  std::shared_ptr<ModelLease> lease = ctx.models->acquire(request.model, &lease_error);
  if (lease == nullptr) return fail(lease_error);
  ServedModel& m = lease->model();
  if (request.thinking.has_value() && m.chat_format.supports_thinking) {
    request.chat.template_kwargs["enable_thinking"] = *request.thinking;
  }
  PromptTokens prompt;
  if (auto e = chat_prompt_tokens(m, request.chat, &prompt, /*add_generation_prompt=*/true,
                                  ctx.options.content_special_tokens)) {
    return fail(*e);
  }
  send_json(res, Json{{"input_tokens", static_cast<int64_t>(prompt.ids.size())}});
}

}  // namespace sniper::server
