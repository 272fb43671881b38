// SPDX-License-Identifier: MIT
#include "server/ollama_protocol.h"

#include "server/field_validators.h"
#include "server/keep_alive.h"
#include "server/media_input.h"
#include "server/structured_output.h"

namespace sniper::server {

namespace {

std::optional<ApiError> bad(const std::string& message, const std::string& param = {}) {
  return bad_request(message, param);
}

std::optional<ApiError> parse_options(const Json* options, GenerationParams* p) {
  SamplerConfig& s = p->sampler;
  s.temperature = 0.8f;  // Ollama's defaults
  s.top_k = 40;
  s.top_p = 0.9f;
  s.min_p = 0.0f;
  s.repeat_penalty = 1.1f;
  s.repeat_last_n = 64;
  s.presence_penalty = 0;
  s.frequency_penalty = 0;
  if (options == nullptr) return std::nullopt;
  const FieldReader f(*options, "options");
  SNIPER_TRY_API(f.number("temperature", {0.0, 100.0}, &s.temperature));
  SNIPER_TRY_API(f.number("top_p", {0.0, 1.0}, &s.top_p));
  if (s.top_p <= 0.0f) s.top_p = 1.0f;  // Ollama/llama.cpp: top_p 0 disables the filter
  SNIPER_TRY_API(f.number("min_p", {0.0, 1.0}, &s.min_p));
  SNIPER_TRY_API(f.number("repeat_penalty", {0.0, 10.0}, &s.repeat_penalty));
  if (s.repeat_penalty <= 0.0f) s.repeat_penalty = 1.0f;  // 0 disables, as in llama.cpp
  SNIPER_TRY_API(f.number("presence_penalty", {-2.0, 2.0}, &s.presence_penalty));
  SNIPER_TRY_API(f.number("frequency_penalty", {-2.0, 2.0}, &s.frequency_penalty));
  int64_t v = s.top_k;
  SNIPER_TRY_API(f.integer("top_k", {0, 1 << 24}, &v));
  s.top_k = static_cast<int>(v);
  v = s.repeat_last_n;
  SNIPER_TRY_API(f.integer("repeat_last_n", {-1, 1 << 20}, &v));
  s.repeat_last_n = v < 0 ? 64 : static_cast<int>(v);
  SNIPER_TRY_API(f.seed("seed", &s.seed));
  // Checked against the model and the server by the prologue (it needs the loaded model).
  SNIPER_TRY_API(f.integer("num_ctx", {1, INT64_MAX}, &p->n_ctx));
  int64_t num_predict = -1;
  SNIPER_TRY_API(f.integer("num_predict", {-2, int64_t{1} << 53}, &num_predict));
  if (num_predict == 0) {
    return f.error("num_predict", "options.num_predict is 0 but must be -1 (no limit), -2 (fill the context) or >= 1");
  }
  p->max_tokens = num_predict < 0 ? -1 : num_predict;
  SNIPER_TRY_API(f.string_list("stop", StringListRule{}, &p->stop));
  return std::nullopt;
}

// The fields /api/chat and /api/generate share.
std::optional<ApiError> parse_common(const Json& body, OllamaRequest* out) {
  const FieldReader f(body);
  SNIPER_TRY_API(f.require("model"));
  SNIPER_TRY_API(f.string("model", &out->model, /*allow_empty=*/false));
  SNIPER_TRY_API(f.boolean("stream", &out->stream));
  if (const Json* think = f.get("think")) {
    if (think->is_boolean()) {
      out->think = think->get<bool>();
    } else if (*think == "high" || *think == "medium" || *think == "low") {
      out->think = true;  // gpt-oss levels: thinking on
    } else {
      return f.error("think", "think must be a boolean (or \"high\", \"medium\", \"low\"), got " +
                                  (think->is_string() ? describe_json(*think) : std::string(json_kind(*think))));
    }
  }
  if (const Json* ka = f.get("keep_alive")) {
    auto seconds = parse_keep_alive(*ka);
    if (!seconds.ok()) return bad(seconds.error().message, "keep_alive");
    out->keep_alive = *seconds;
  }
  const Json* options = nullptr;
  SNIPER_TRY_API(f.object("options", &options));
  SNIPER_TRY_API(parse_options(options, &out->params));
  if (auto it = body.find("format"); it != body.end()) SNIPER_TRY_API(ollama_format(*it, &out->params.grammar));
  return std::nullopt;
}

// Ollama's "images" (base64 strings, no data URL) as image parts (media_input.h); empty when
// absent. `at` names the field.
std::optional<ApiError> image_parts(const FieldReader& f, const std::string& at, Json* out) {
  *out = Json::array();
  // Clients that guess an audio field get told there is none (Ollama would ignore it silently).
  for (const char* key : {"audio", "audios"}) {
    if (f.get(key) != nullptr) {
      const std::string field = at.substr(0, at.size() - std::string_view("images").size()) + key;
      return bad(field + ": " + no_audio_field_message("ollama"), field);
    }
  }
  const Json* images = nullptr;
  SNIPER_TRY_API(f.array("images", SIZE_MAX, &images));
  if (images == nullptr) return std::nullopt;
  for (size_t k = 0; k < images->size(); ++k) {
    const Json& image = (*images)[k];
    const std::string field = at + "[" + std::to_string(k) + "]";
    if (!image.is_string()) return bad(field + " must be a base64 string, got " + json_kind(image), field);
    out->push_back(image_part_from_base64(image.get<std::string>(), "", field, "ollama"));
  }
  return std::nullopt;
}

// One Ollama message -> the OpenAI shape (the renderer validates roles and the rest).
std::optional<ApiError> convert_message(const Json& m, size_t i, Json* out) {
  const std::string at = "messages[" + std::to_string(i) + "]";
  if (!m.is_object()) return bad(at + " must be an object, got " + json_kind(m), at);
  const FieldReader f(m, at);
  std::string role;
  SNIPER_TRY_API(f.require("role"));
  SNIPER_TRY_API(f.string("role", &role));
  Json o = Json::object();
  o["role"] = role;
  std::string content;
  SNIPER_TRY_API(f.string("content", &content));
  Json parts;
  SNIPER_TRY_API(image_parts(f, at + ".images", &parts));
  if (parts.empty()) {
    o["content"] = std::move(content);
  } else {  // the images before the text, as Ollama and llama-mtmd-cli put them
    parts.push_back(Json{{"type", "text"}, {"text", std::move(content)}});
    o["content"] = std::move(parts);
  }
  std::string thinking;
  SNIPER_TRY_API(f.string("thinking", &thinking));
  if (role == "assistant" && !thinking.empty()) o["reasoning_content"] = thinking;
  const Json* tc = nullptr;
  SNIPER_TRY_API(f.array("tool_calls", SIZE_MAX, &tc));
  if (tc != nullptr) {
    Json calls = Json::array();
    for (size_t k = 0; k < tc->size(); ++k) {
      const Json& c = (*tc)[k];
      const std::string cat = at + ".tool_calls[" + std::to_string(k) + "]";
      if (!c.is_object()) return bad(cat + " must be an object, got " + json_kind(c), cat);
      const FieldReader call_fields(c, cat);
      SNIPER_TRY_API(call_fields.require("function"));
      const Json* fn = nullptr;
      SNIPER_TRY_API(call_fields.object("function", &fn));
      const FieldReader fn_fields(*fn, cat + ".function");
      std::string name, id = "call_" + std::to_string(k);
      SNIPER_TRY_API(fn_fields.require("name"));
      SNIPER_TRY_API(fn_fields.string("name", &name, /*allow_empty=*/false));
      SNIPER_TRY_API(call_fields.string("id", &id, /*allow_empty=*/false));
      const Json* args = nullptr;
      SNIPER_TRY_API(fn_fields.object("arguments", &args));
      Json call = Json::object();
      call["id"] = id;
      call["type"] = "function";
      call["function"] = Json{{"name", name}, {"arguments", dump_json(args != nullptr ? *args : Json::object())}};
      calls.push_back(std::move(call));
    }
    if (!calls.empty()) o["tool_calls"] = std::move(calls);
  }
  if (role == "tool") {
    // Ollama names the tool (tool_name); OpenAI's renderer wants a tool_call_id.
    std::string name = "tool";
    SNIPER_TRY_API(f.string("tool_name", &name, /*allow_empty=*/false));
    o["tool_call_id"] = name;
    o["name"] = name;
  }
  *out = std::move(o);
  return std::nullopt;
}

// A string field that must be absent or empty: the feature it asks for is not supported.
std::optional<ApiError> refuse_unless_empty(const FieldReader& f, const char* key, const char* why) {
  const Json* v = f.get(key);
  if (v == nullptr || (v->is_string() && v->get_ref<const std::string&>().empty()) || (v->is_array() && v->empty())) {
    return std::nullopt;
  }
  return f.error(key, why);
}

}  // namespace

std::optional<ApiError> parse_ollama_chat(const Json& body, OllamaRequest* out) {
  SNIPER_TRY_API(parse_common(body, out));
  const FieldReader f(body);
  const Json* messages = nullptr;
  SNIPER_TRY_API(f.array("messages", SIZE_MAX, &messages));
  if (messages != nullptr) {
    for (size_t i = 0; i < messages->size(); ++i) {
      Json m;
      SNIPER_TRY_API(convert_message((*messages)[i], i, &m));
      out->messages.push_back(std::move(m));
    }
  }
  const Json* tools = nullptr;
  SNIPER_TRY_API(f.array("tools", SIZE_MAX, &tools));
  if (tools != nullptr && !tools->empty()) out->tools = *tools;
  return std::nullopt;
}

std::optional<ApiError> parse_ollama_generate(const Json& body, OllamaRequest* out) {
  SNIPER_TRY_API(parse_common(body, out));
  const FieldReader f(body);
  SNIPER_TRY_API(f.string("prompt", &out->prompt));
  SNIPER_TRY_API(f.string("system", &out->system));
  SNIPER_TRY_API(f.boolean("raw", &out->raw));
  SNIPER_TRY_API(refuse_unless_empty(f, "suffix", "suffix (fill-in-the-middle) is not supported by this server"));
  SNIPER_TRY_API(refuse_unless_empty(f, "template",
                                     "template overrides are not supported: the model's own chat template is used"));
  SNIPER_TRY_API(refuse_unless_empty(
      f, "context", "context (the deprecated token context of an earlier reply) is not supported; use /api/chat"));
  SNIPER_TRY_API(image_parts(f, "images", &out->images));
  return std::nullopt;
}

std::string ollama_pool_name(const std::string& name) {
  constexpr std::string_view kLatest = ":latest";
  if (name.size() > kLatest.size() && name.compare(name.size() - kLatest.size(), kLatest.size(), kLatest) == 0) {
    return name.substr(0, name.size() - kLatest.size());
  }
  return name;
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
