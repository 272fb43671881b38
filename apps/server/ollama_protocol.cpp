// SPDX-License-Identifier: MIT
#include "server/ollama_protocol.h"

#include <cmath>

#include "server/keep_alive.h"
#include "server/structured_output.h"

namespace sniper::server {

namespace {

const char* kind(const Json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "an array";
  return "an object";
}

std::optional<ApiError> bad(const std::string& message, const std::string& param = {}) {
  return bad_request(message, param);
}

std::optional<ApiError> number(const Json& obj, const char* key, const std::string& where, double lo, double hi,
                               float* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return bad(where + key + " must be a number, got " + kind(*it), key);
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    return bad(where + key + " is " + it->dump() + " but must be in [" + Json(lo).dump() + ", " + Json(hi).dump() + "]",
               key);
  }
  *out = static_cast<float>(v);
  return std::nullopt;
}

std::optional<ApiError> integer(const Json& obj, const char* key, const std::string& where, int64_t lo, int64_t hi,
                                int64_t* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  const bool integral = it->is_number_integer() ||
                        (it->is_number_float() && std::isfinite(it->get<double>()) &&
                         it->get<double>() == std::floor(it->get<double>()) && std::fabs(it->get<double>()) < 9e15);
  if (!integral)
    return bad(where + key + " must be an integer, got " + (it->is_number() ? it->dump() : kind(*it)), key);
  const int64_t v = it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX
                    : it->is_number_float() ? static_cast<int64_t>(it->get<double>())
                                            : it->get<int64_t>();
  if (v < lo || v > hi)
    return bad(where + key + " is " + std::to_string(v) + " but must be in [" + std::to_string(lo) + ", " +
                   std::to_string(hi) + "]",
               key);
  *out = v;
  return std::nullopt;
}

#define TRY_OLLAMA(expr)             \
  do {                               \
    if (auto e_ = (expr)) return e_; \
  } while (0)

std::optional<ApiError> parse_options(const Json& options, GenerationParams* p) {
  SamplerConfig& s = p->sampler;
  s.temperature = 0.8f;  // Ollama's defaults
  s.top_k = 40;
  s.top_p = 0.9f;
  s.min_p = 0.0f;
  s.repeat_penalty = 1.1f;
  s.repeat_last_n = 64;
  s.presence_penalty = 0;
  s.frequency_penalty = 0;
  if (options.is_null()) return std::nullopt;
  if (!options.is_object()) return bad(std::string("options must be an object, got ") + kind(options), "options");
  const std::string w = "options.";
  TRY_OLLAMA(number(options, "temperature", w, 0.0, 100.0, &s.temperature));
  TRY_OLLAMA(number(options, "top_p", w, 0.0, 1.0, &s.top_p));
  if (s.top_p <= 0.0f) s.top_p = 1.0f;  // Ollama/llama.cpp: top_p 0 disables the filter
  TRY_OLLAMA(number(options, "min_p", w, 0.0, 1.0, &s.min_p));
  TRY_OLLAMA(number(options, "repeat_penalty", w, 0.0, 10.0, &s.repeat_penalty));
  if (s.repeat_penalty <= 0.0f) s.repeat_penalty = 1.0f;  // 0 disables, as in llama.cpp
  TRY_OLLAMA(number(options, "presence_penalty", w, -2.0, 2.0, &s.presence_penalty));
  TRY_OLLAMA(number(options, "frequency_penalty", w, -2.0, 2.0, &s.frequency_penalty));
  int64_t v = s.top_k;
  TRY_OLLAMA(integer(options, "top_k", w, 0, 1 << 24, &v));
  s.top_k = static_cast<int>(v);
  v = s.repeat_last_n;
  TRY_OLLAMA(integer(options, "repeat_last_n", w, -1, 1 << 20, &v));
  s.repeat_last_n = v < 0 ? 64 : static_cast<int>(v);
  int64_t seed = 0;
  TRY_OLLAMA(integer(options, "seed", w, INT64_MIN, INT64_MAX, &seed));
  s.seed = static_cast<uint64_t>(seed);
  int64_t num_ctx = 0;
  TRY_OLLAMA(integer(options, "num_ctx", w, 1, int64_t{1} << 40, &num_ctx));
  int64_t num_predict = -1;
  TRY_OLLAMA(integer(options, "num_predict", w, -2, int64_t{1} << 53, &num_predict));
  if (num_predict == 0)
    return bad("options.num_predict is 0 but must be -1 (no limit), -2 (fill the context) or >= 1", "num_predict");
  p->max_tokens = num_predict < 0 ? -1 : num_predict;
  if (auto it = options.find("stop"); it != options.end() && !it->is_null()) {
    if (it->is_string()) {
      p->stop.push_back(it->get<std::string>());
    } else if (it->is_array()) {
      if (it->size() > 16)
        return bad("options.stop has " + std::to_string(it->size()) + " entries but at most 16 are allowed", "stop");
      for (const Json& x : *it) {
        if (!x.is_string()) return bad(std::string("options.stop must hold strings, got ") + kind(x), "stop");
        p->stop.push_back(x.get<std::string>());
      }
    } else {
      return bad(std::string("options.stop must be an array of strings, got ") + kind(*it), "stop");
    }
    for (const std::string& x : p->stop) {
      if (x.size() > 1024) return bad("a stop string is longer than 1024 bytes", "stop");
    }
  }
  return std::nullopt;
}

// The fields /api/chat and /api/generate share.
std::optional<ApiError> parse_common(const Json& body, OllamaRequest* out) {
  auto m = body.find("model");
  if (m == body.end() || m->is_null()) return bad("model is required", "model");
  if (!m->is_string()) return bad(std::string("model must be a string, got ") + kind(*m), "model");
  out->model = m->get<std::string>();
  if (out->model.empty()) return bad("model is required", "model");
  if (auto it = body.find("stream"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return bad(std::string("stream must be a boolean, got ") + kind(*it), "stream");
    out->stream = it->get<bool>();
  }
  if (auto it = body.find("think"); it != body.end() && !it->is_null()) {
    if (it->is_boolean()) {
      out->think = it->get<bool>();
    } else if (it->is_string() && (*it == "high" || *it == "medium" || *it == "low")) {
      out->think = true;  // gpt-oss levels: thinking on
    } else {
      return bad(std::string("think must be a boolean (or \"high\", \"medium\", \"low\"), got ") +
                     (it->is_string() ? it->dump() : kind(*it)),
                 "think");
    }
  }
  if (auto it = body.find("keep_alive"); it != body.end() && !it->is_null()) {
    auto ka = parse_keep_alive(*it);
    if (!ka.ok()) return bad(ka.error().message, "keep_alive");
    out->keep_alive = *ka;
  }
  TRY_OLLAMA(parse_options(body.contains("options") ? body["options"] : Json(), &out->params));
  if (auto it = body.find("format"); it != body.end()) TRY_OLLAMA(ollama_format(*it, &out->params.grammar));
  return std::nullopt;
}

// One Ollama message -> the OpenAI shape.
std::optional<ApiError> convert_message(const Json& m, size_t i, Json* out) {
  const std::string at = "messages[" + std::to_string(i) + "]";
  if (!m.is_object()) return bad(at + " must be an object", "messages");
  auto role = m.find("role");
  if (role == m.end() || !role->is_string()) return bad(at + ".role must be a string", "messages");
  Json o = Json::object();
  o["role"] = *role;
  auto content = m.find("content");
  if (content == m.end() || content->is_null()) {
    o["content"] = "";
  } else if (content->is_string()) {
    o["content"] = *content;
  } else {
    return bad(at + ".content must be a string, got " + kind(*content), "messages");
  }
  if (auto im = m.find("images"); im != m.end() && !im->is_null() && !(im->is_array() && im->empty())) {
    return bad(at + ".images: images are not supported (this server serves text-only models)", "messages");
  }
  if (auto th = m.find("thinking"); th != m.end() && !th->is_null()) {
    if (!th->is_string()) return bad(at + ".thinking must be a string, got " + kind(*th), "messages");
    if (*role == "assistant" && !th->get_ref<const std::string&>().empty()) o["reasoning_content"] = *th;
  }
  if (auto tc = m.find("tool_calls"); tc != m.end() && !tc->is_null()) {
    if (!tc->is_array()) return bad(at + ".tool_calls must be an array, got " + kind(*tc), "messages");
    Json calls = Json::array();
    for (size_t k = 0; k < tc->size(); ++k) {
      const Json& c = (*tc)[k];
      const std::string cat = at + ".tool_calls[" + std::to_string(k) + "]";
      if (!c.is_object() || !c.contains("function") || !c["function"].is_object())
        return bad(cat + ".function must be an object", "messages");
      const Json& f = c["function"];
      if (!f.contains("name") || !f["name"].is_string())
        return bad(cat + ".function.name must be a string", "messages");
      Json args = f.contains("arguments") ? f["arguments"] : Json::object();
      if (!args.is_object()) return bad(cat + ".function.arguments must be an object, got " + kind(args), "messages");
      Json call = Json::object();
      call["id"] = c.contains("id") && c["id"].is_string() ? c["id"] : Json("call_" + std::to_string(k));
      call["type"] = "function";
      call["function"] = Json{{"name", f["name"]}, {"arguments", dump_json(args)}};
      calls.push_back(std::move(call));
    }
    if (!calls.empty()) o["tool_calls"] = std::move(calls);
  }
  if (*role == "tool") {
    // Ollama names the tool (tool_name); OpenAI's renderer wants a tool_call_id.
    std::string name = "tool";
    if (auto tn = m.find("tool_name"); tn != m.end() && tn->is_string()) name = tn->get<std::string>();
    o["tool_call_id"] = name;
    o["name"] = name;
  }
  *out = std::move(o);
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_ollama_chat(const Json& body, OllamaRequest* out) {
  TRY_OLLAMA(parse_common(body, out));
  auto it = body.find("messages");
  if (it != body.end() && !it->is_null()) {
    if (!it->is_array()) return bad(std::string("messages must be an array, got ") + kind(*it), "messages");
    for (size_t i = 0; i < it->size(); ++i) {
      Json m;
      TRY_OLLAMA(convert_message((*it)[i], i, &m));
      out->messages.push_back(std::move(m));
    }
  }
  if (auto t = body.find("tools"); t != body.end() && !t->is_null()) {
    if (!t->is_array()) return bad(std::string("tools must be an array, got ") + kind(*t), "tools");
    if (!t->empty()) out->tools = *t;
  }
  return std::nullopt;
}

std::optional<ApiError> parse_ollama_generate(const Json& body, OllamaRequest* out) {
  TRY_OLLAMA(parse_common(body, out));
  for (const char* key : {"prompt", "system"}) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) continue;
    if (!it->is_string()) return bad(std::string(key) + " must be a string, got " + kind(*it), key);
    (std::string_view(key) == "prompt" ? out->prompt : out->system) = it->get<std::string>();
  }
  if (auto it = body.find("raw"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return bad(std::string("raw must be a boolean, got ") + kind(*it), "raw");
    out->raw = it->get<bool>();
  }
  if (auto it = body.find("suffix");
      it != body.end() && !it->is_null() && !(it->is_string() && it->get_ref<const std::string&>().empty())) {
    return bad("suffix (fill-in-the-middle) is not supported by this server", "suffix");
  }
  if (auto it = body.find("template");
      it != body.end() && !it->is_null() && !(it->is_string() && it->get_ref<const std::string&>().empty())) {
    return bad("template overrides are not supported: the model's own chat template is used", "template");
  }
  if (auto it = body.find("context"); it != body.end() && !it->is_null() && !(it->is_array() && it->empty())) {
    return bad("context (the deprecated token context of an earlier reply) is not supported; use /api/chat", "context");
  }
  if (auto it = body.find("images"); it != body.end() && !it->is_null() && !(it->is_array() && it->empty())) {
    return bad("images are not supported (this server serves text-only models)", "images");
  }
  return std::nullopt;
}

Json ollama_error_json(const std::string& message) { return Json{{"error", message}}; }

Json ollama_message(const Json& m) {
  Json o = Json::object();
  o["role"] = "assistant";
  o["content"] = m.contains("content") && m["content"].is_string() ? m["content"] : Json("");
  if (m.contains("reasoning_content") && m["reasoning_content"].is_string()) o["thinking"] = m["reasoning_content"];
  if (m.contains("tool_calls") && m["tool_calls"].is_array()) {
    Json calls = Json::array();
    int index = 0;
    for (const Json& c : m["tool_calls"]) {
      const Json& f = c["function"];
      Json args = Json::parse(f.value("arguments", std::string("{}")), nullptr, false);
      if (args.is_discarded()) args = Json::object();
      Json fn = Json::object();
      fn["index"] = index++;
      fn["name"] = f["name"];
      fn["arguments"] = std::move(args);
      calls.push_back(Json{{"function", std::move(fn)}});
    }
    o["tool_calls"] = std::move(calls);
  }
  return o;
}

}  // namespace sniper::server
