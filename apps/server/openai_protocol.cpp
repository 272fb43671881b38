// SPDX-License-Identifier: MIT
#include "server/openai_protocol.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>

#include "server/field_validators.h"
#include "server/structured_output.h"

namespace sniper::server {

namespace {

// One logit_bias value: a number in [-100, 100] (-100 bans, as OpenAI says it should), or false
// (banned, llama.cpp's spelling).
std::optional<ApiError> bias_value(const Json& v, const std::string& field, float* out) {
  if (v.is_boolean() && !v.get<bool>()) {
    *out = -std::numeric_limits<float>::infinity();
    return std::nullopt;
  }
  if (!v.is_number()) {
    return bad_request(field + " must be a number in [-100, 100] or false (banned), got " +
                           (v.is_boolean() ? std::string("true") : std::string(json_kind(v))),
                       field);
  }
  const double b = v.get<double>();
  if (!std::isfinite(b) || b < -100 || b > 100) {
    return bad_request(field + " is " + dump_json(v) + " but must be in [-100, 100]", field);
  }
  *out = b <= -100 ? -std::numeric_limits<float>::infinity() : static_cast<float>(b);
  return std::nullopt;
}

// A token written as a JSON key: a decimal id, or (llama.cpp) text to tokenize. A negative or
// oversized number is an error, not text.
std::optional<ApiError> bias_target(const std::string& key, LogitBiasEntry* e) {
  const bool negative = key.size() > 1 && key[0] == '-';
  const std::string_view digits = negative ? std::string_view(key).substr(1) : std::string_view(key);
  const bool number =
      !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!number) {
    e->text = key;
    return std::nullopt;
  }
  if (negative || digits.size() > 10 || std::stoll(std::string(digits)) > INT32_MAX) {
    return bad_request(e->field + " names token " + key + ", which is not a token id (ids are >= 0)", e->field);
  }
  e->token = std::stoll(std::string(digits));
  return std::nullopt;
}

// logit_bias as OpenAI ({"50256": -100}) and llama.cpp ({"text": 5}, [[id or text, bias or
// false], ...]) write it; token ids are checked against the vocabulary by the prologue.
std::optional<ApiError> parse_logit_bias(const FieldReader& f, std::vector<LogitBiasEntry>* out) {
  constexpr size_t kMaxEntries = 4096;
  constexpr size_t kMaxTextBytes = 1024;
  const Json* lb = f.get("logit_bias");
  if (lb == nullptr) return std::nullopt;
  if (!lb->is_object() && !lb->is_array()) {
    return f.type_error("logit_bias", "an object of token ids to biases (or an array of [token, bias] pairs)");
  }
  if (lb->size() > kMaxEntries) {
    return f.error("logit_bias", "logit_bias has " + std::to_string(lb->size()) + " entries but at most " +
                                     std::to_string(kMaxEntries) + " are allowed");
  }
  auto add = [&](LogitBiasEntry e, const Json& value) -> std::optional<ApiError> {
    if (e.token < 0 && e.text.empty()) return bad_request(e.field + ": the token must not be empty", e.field);
    if (e.text.size() > kMaxTextBytes) {
      return bad_request(e.field + ": the token text is " + std::to_string(e.text.size()) + " bytes but at most " +
                             std::to_string(kMaxTextBytes) + " are allowed",
                         e.field);
    }
    SNIPER_TRY_API(bias_value(value, e.field, &e.bias));
    out->push_back(std::move(e));
    return std::nullopt;
  };
  if (lb->is_object()) {
    for (auto it = lb->begin(); it != lb->end(); ++it) {
      LogitBiasEntry e;
      e.field = "logit_bias." + it.key().substr(0, 64);
      SNIPER_TRY_API(bias_target(it.key(), &e));
      SNIPER_TRY_API(add(std::move(e), it.value()));
    }
    return std::nullopt;
  }
  for (size_t i = 0; i < lb->size(); ++i) {
    const Json& pair = (*lb)[i];
    const std::string field = "logit_bias[" + std::to_string(i) + "]";
    if (!pair.is_array() || pair.size() != 2) {
      return bad_request(field + " must be a [token, bias] pair, got " + describe_json(pair), field);
    }
    LogitBiasEntry e;
    e.field = field;
    if (pair[0].is_string()) {
      e.text = pair[0].get<std::string>();
    } else if (pair[0].is_number_integer()) {
      SNIPER_TRY_API(bias_target(dump_json(pair[0]), &e));
    } else {
      return bad_request(field + "[0] must be a token id or text, got " + json_kind(pair[0]), field);
    }
    SNIPER_TRY_API(add(std::move(e), pair[1]));
  }
  return std::nullopt;
}

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
  if (const Json* g = f.get("grammar")) SNIPER_TRY_API(gbnf_grammar(*g, &p->grammar));
  if (const Json* js = f.get("json_schema")) SNIPER_TRY_API(llama_json_schema(*js, &p->grammar));
  SNIPER_TRY_API(parse_logit_bias(f, &p->logit_bias));
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
    const bool have_tools = out->tools.is_array() && !out->tools.empty();
    if (tc->is_string()) {
      std::string v;
      SNIPER_TRY_API(f.one_of("tool_choice", {"none", "auto", "required"}, &v));
      if (v == "none") out->tools = Json();
      if (v == "required" && !have_tools) {
        return f.error("tool_choice", "tool_choice is 'required' but the request has no tools");
      }
    } else if (tc->is_object()) {
      // {"type": "function", "function": {"name": NAME}}: NAME must be one of the tools.
      const FieldReader c(*tc, "tool_choice");
      std::string type, name;
      SNIPER_TRY_API(c.require("type"));
      SNIPER_TRY_API(c.one_of("type", {"function"}, &type));
      SNIPER_TRY_API(c.require("function"));
      const Json* fn = nullptr;
      SNIPER_TRY_API(c.object("function", &fn));
      const FieldReader cf(*fn, "tool_choice.function");
      SNIPER_TRY_API(cf.require("name"));
      SNIPER_TRY_API(cf.string("name", &name, /*allow_empty=*/false));
      std::string names;
      bool found = false;
      if (have_tools) {
        for (const Json& t : out->tools) {
          if (!t.is_object() || !t.contains("function") || !t["function"].is_object()) continue;
          const Json& n = t["function"].value("name", Json());
          if (!n.is_string()) continue;
          found = found || n == name;
          names += (names.empty() ? "" : ", ") + n.get<std::string>();
        }
      }
      if (!found) {
        return f.error("tool_choice",
                       "tool_choice.function.name is '" + name + "' but " +
                           (names.empty() ? std::string("the request has no tools") : "the tools are " + names));
      }
    } else {
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
