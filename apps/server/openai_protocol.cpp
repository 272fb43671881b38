// SPDX-License-Identifier: MIT
#include "server/openai_protocol.h"

#include <chrono>
#include <random>

#include "server/field_validators.h"
#include "server/structured_output.h"

namespace sniper::server {

namespace {

std::optional<ApiError> parse_params(const FieldReader& f, GenerationParams* p) {
  SNIPER_TRY_API(f.string("model", &p->model));
  SamplerConfig& s = p->sampler;
  s.temperature = 1.0f;  // OpenAI defaults
  s.top_p = 1.0f;
  s.top_k = 0;
  s.min_p = 0.0f;
  s.repeat_penalty = 1.0f;
  s.presence_penalty = 0;
  s.frequency_penalty = 0;
  SNIPER_TRY_API(f.number("temperature", {0.0, 2.0}, &s.temperature));
  SNIPER_TRY_API(f.number("top_p", {0.0, 1.0, /*open_lo=*/true}, &s.top_p));
  SNIPER_TRY_API(f.number("min_p", {0.0, 1.0}, &s.min_p));
  SNIPER_TRY_API(f.number("presence_penalty", {-2.0, 2.0}, &s.presence_penalty));
  SNIPER_TRY_API(f.number("frequency_penalty", {-2.0, 2.0}, &s.frequency_penalty));
  SNIPER_TRY_API(f.number("repeat_penalty", {0.01, 10.0}, &s.repeat_penalty));
  int64_t top_k = 0;
  SNIPER_TRY_API(f.integer("top_k", {0, 1 << 24}, &top_k));
  s.top_k = static_cast<int>(top_k);
  SNIPER_TRY_API(f.seed("seed", &s.seed));
  constexpr int64_t kMaxTokens = int64_t{1} << 53;
  SNIPER_TRY_API(f.integer("max_tokens", {1, kMaxTokens}, &p->max_tokens));
  SNIPER_TRY_API(f.integer("max_completion_tokens", {1, kMaxTokens}, &p->max_tokens));
  int64_t n = 1;
  SNIPER_TRY_API(f.integer("n", {1, INT64_MAX}, &n));
  if (n != 1) return f.error("n", "n is " + std::to_string(n) + " but only n = 1 is supported");
  bool logprobs = false;
  SNIPER_TRY_API(f.boolean("logprobs", &logprobs));
  if (logprobs)
    return f.error("logprobs", "logprobs are not supported by this server (omit logprobs or set it to false)");
  if (f.get("top_logprobs") != nullptr) return f.error("top_logprobs", "top_logprobs is not supported by this server");
  if (const Json* rf = f.get("response_format")) SNIPER_TRY_API(openai_response_format(*rf, &p->grammar));
  SNIPER_TRY_API(f.string_list("stop", StringListRule{}, &p->stop));
  SNIPER_TRY_API(f.boolean("stream", &p->stream));
  SNIPER_TRY_API(f.boolean("ignore_eos", &p->ignore_eos));
  const Json* so = nullptr;
  SNIPER_TRY_API(f.object("stream_options", &so));
  if (so != nullptr) SNIPER_TRY_API(FieldReader(*so, "stream_options").boolean("include_usage", &p->include_usage));
  return std::nullopt;
}

}  // namespace

Json error_json(const ApiError& e) {
  Json err = Json::object();
  err["message"] = e.message;
  err["type"] = e.type;
  err["param"] = e.param.empty() ? Json() : Json(e.param);
  err["code"] = e.code.empty() ? Json() : Json(e.code);
  return Json{{"error", err}};
}

std::optional<ApiError> parse_chat_request(const Json& body, ChatRequest* out) {
  const FieldReader f(body);
  SNIPER_TRY_API(f.require("messages"));
  const Json* messages = nullptr;
  SNIPER_TRY_API(f.array("messages", SIZE_MAX, &messages));
  if (messages->empty()) return f.error("messages", "messages must not be empty");
  out->messages = *messages;
  SNIPER_TRY_API(parse_params(f, &out->params));
  const Json* tools = nullptr;
  SNIPER_TRY_API(f.array("tools", SIZE_MAX, &tools));
  if (tools != nullptr) out->tools = *tools;
  if (const Json* tc = f.get("tool_choice")) {
    if (tc->is_string()) {
      std::string v;
      SNIPER_TRY_API(f.one_of("tool_choice", {"none", "auto", "required"}, &v));
      if (v == "none") out->tools = Json();
    } else if (!tc->is_object()) {
      return f.type_error("tool_choice", "a string or an object");
    }
  }
  const Json* kwargs = nullptr;
  SNIPER_TRY_API(f.object("chat_template_kwargs", &kwargs));
  if (kwargs != nullptr) out->template_kwargs = *kwargs;
  return std::nullopt;
}

std::optional<ApiError> parse_completion_request(const Json& body, CompletionRequest* out) {
  const FieldReader f(body);
  SNIPER_TRY_API(f.require("prompt"));
  const Json& prompt = *f.get("prompt");
  if (prompt.is_array()) {
    if (prompt.size() != 1 || !prompt[0].is_string()) {
      return f.error("prompt", "prompt must be a string or an array of exactly one string (batches are not supported)");
    }
    out->prompt = prompt[0].get<std::string>();
  } else {
    SNIPER_TRY_API(f.string("prompt", &out->prompt));
  }
  bool echo = false;
  SNIPER_TRY_API(f.boolean("echo", &echo));
  if (echo) return f.error("echo", "echo is not supported by this server");
  if (f.get("suffix") != nullptr) return f.error("suffix", "suffix is not supported by this server");
  int64_t best_of = 1;
  SNIPER_TRY_API(f.integer("best_of", {1, 1}, &best_of));
  return parse_params(f, &out->params);
}

std::string make_id(const char* prefix) {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kChars[rng() % (sizeof(kChars) - 1)];
  return id;
}

int64_t unix_time_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace sniper::server
