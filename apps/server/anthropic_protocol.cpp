// SPDX-License-Identifier: MIT
#include "server/anthropic_protocol.h"

#include "server/field_validators.h"
#include "server/media_input.h"

namespace sniper::server {

namespace {

std::optional<ApiError> bad(const std::string& message, const std::string& param) {
  return bad_request(message, param);
}

// Text of a string or an array of text blocks (system prompts, tool results); `where` is the
// field's path.
std::optional<ApiError> text_of(const Json& v, const std::string& where, std::string* out) {
  if (v.is_string()) {
    *out = v.get<std::string>();
    return std::nullopt;
  }
  if (!v.is_array()) return bad(where + " must be a string or an array of text blocks, got " + json_kind(v), where);
  for (size_t i = 0; i < v.size(); ++i) {
    const Json& b = v[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!b.is_object() || b.value("type", Json()) != "text" || !b.contains("text") || !b["text"].is_string()) {
      return bad(at + " must be {\"type\": \"text\", \"text\": string}", at);
    }
    if (!out->empty()) *out += "\n";
    *out += b["text"].get<std::string>();
  }
  return std::nullopt;
}

std::optional<ApiError> convert_message(const Json& m, size_t i, Json* messages) {
  const std::string at = "messages[" + std::to_string(i) + "]";
  if (!m.is_object()) return bad(at + " must be an object, got " + json_kind(m), at);
  const FieldReader f(m, at);
  std::string role;
  SNIPER_TRY_API(f.require("role"));
  SNIPER_TRY_API(f.one_of("role", {"user", "assistant"}, &role));
  SNIPER_TRY_API(f.require("content"));
  const Json& content = *f.get("content");
  if (content.is_string()) {
    messages->push_back(Json{{"role", role}, {"content", content}});
    return std::nullopt;
  }
  if (!content.is_array()) return f.type_error("content", "a string or an array of content blocks");
  std::string text, thinking;
  Json parts = Json::array();  // a user message with images: text and image parts in order
  Json calls = Json::array();
  std::vector<Json> tool_results;
  for (size_t k = 0; k < content.size(); ++k) {
    const Json& b = content[k];
    const std::string bat = at + ".content[" + std::to_string(k) + "]";
    if (!b.is_object()) return bad(bat + " must be an object, got " + json_kind(b), bat);
    const FieldReader bf(b, bat);
    std::string type;
    SNIPER_TRY_API(bf.require("type"));
    SNIPER_TRY_API(bf.string("type", &type));
    if (type == "text") {
      std::string part;
      SNIPER_TRY_API(bf.require("text"));
      SNIPER_TRY_API(bf.string("text", &part));
      text += part;
    } else if (type == "thinking") {
      if (role != "assistant") return bad(bat + ": thinking blocks belong to assistant messages", bat);
      std::string part;
      SNIPER_TRY_API(bf.string("thinking", &part));
      thinking += part;
    } else if (type == "redacted_thinking") {
      continue;
    } else if (type == "tool_use") {
      if (role != "assistant") return bad(bat + ": tool_use blocks belong to assistant messages", bat);
      std::string id, name;
      SNIPER_TRY_API(bf.require("id"));
      SNIPER_TRY_API(bf.string("id", &id, /*allow_empty=*/false));
      SNIPER_TRY_API(bf.require("name"));
      SNIPER_TRY_API(bf.string("name", &name, /*allow_empty=*/false));
      const Json* input = nullptr;
      SNIPER_TRY_API(bf.object("input", &input));
      calls.push_back(Json{
          {"id", id},
          {"type", "function"},
          {"function", Json{{"name", name}, {"arguments", dump_json(input != nullptr ? *input : Json::object())}}}});
    } else if (type == "tool_result") {
      if (role != "user") return bad(bat + ": tool_result blocks belong to user messages", bat);
      std::string tool_use_id;
      SNIPER_TRY_API(bf.require("tool_use_id"));
      SNIPER_TRY_API(bf.string("tool_use_id", &tool_use_id, /*allow_empty=*/false));
      std::string result;
      if (const Json* c = bf.get("content")) SNIPER_TRY_API(text_of(*c, bat + ".content", &result));
      bool is_error = false;
      SNIPER_TRY_API(bf.boolean("is_error", &is_error));
      if (is_error) result = "Error: " + result;
      tool_results.push_back(Json{{"role", "tool"}, {"tool_call_id", tool_use_id}, {"content", result}});
    } else if (type == "image") {
      if (role != "user") return bad(bat + ": image blocks belong to user messages", bat);
      const Json* source = nullptr;
      SNIPER_TRY_API(bf.require("source"));
      SNIPER_TRY_API(bf.object("source", &source));
      const FieldReader sf(*source, bat + ".source");
      std::string source_type, media_type, data;
      SNIPER_TRY_API(sf.require("type"));
      SNIPER_TRY_API(sf.one_of("type", {"base64", "url", "file"}, &source_type));
      if (source_type != "base64") {
        return bad(bat + ".source.type is '" + source_type +
                       "' but this server takes images inline only: send {\"type\": \"base64\", \"media_type\", "
                       "\"data\"}",
                   bat + ".source.type");
      }
      SNIPER_TRY_API(sf.require("media_type"));
      SNIPER_TRY_API(sf.one_of("media_type", {"image/jpeg", "image/png", "image/gif", "image/webp"}, &media_type));
      SNIPER_TRY_API(sf.require("data"));
      SNIPER_TRY_API(sf.string("data", &data, /*allow_empty=*/false));
      if (!text.empty()) parts.push_back(Json{{"type", "text"}, {"text", std::move(text)}});
      text.clear();
      parts.push_back(image_part_from_base64(data, media_type, bat + ".source.data", "anthropic"));
    } else if (type == "document") {
      return bad(bat + ": document blocks are not supported by this server", bat);
    } else if (type == "audio" || type == "input_audio") {
      return bf.error("type", bat + ".type is '" + type + "' but " + no_audio_field_message("anthropic"));
    } else {
      return bf.error("type", bat + ".type is '" + type +
                                  "' but must be one of text, thinking, redacted_thinking, tool_use, tool_result");
    }
  }
  for (Json& r : tool_results) messages->push_back(std::move(r));
  if (role == "user") {
    if (!parts.empty()) {
      if (!text.empty()) parts.push_back(Json{{"type", "text"}, {"text", std::move(text)}});
      messages->push_back(Json{{"role", "user"}, {"content", std::move(parts)}});
    } else if (!text.empty() || tool_results.empty()) {
      messages->push_back(Json{{"role", "user"}, {"content", text}});
    }
    return std::nullopt;
  }
  Json a = Json{{"role", "assistant"}, {"content", calls.empty() || !text.empty() ? Json(text) : Json()}};
  if (!thinking.empty()) a["reasoning_content"] = thinking;
  if (!calls.empty()) a["tool_calls"] = std::move(calls);
  messages->push_back(std::move(a));
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_anthropic_messages(const Json& body, AnthropicRequest* out) {
  const FieldReader f(body);
  SNIPER_TRY_API(f.require("model"));
  SNIPER_TRY_API(f.string("model", &out->model, /*allow_empty=*/false));
  SNIPER_TRY_API(f.require("max_tokens"));
  GenerationParams& p = out->chat.params;
  SNIPER_TRY_API(f.integer("max_tokens", {1, int64_t{1} << 53}, &p.max_tokens));
  SamplerConfig& s = p.sampler;
  s.temperature = 1.0f;  // Anthropic's defaults
  s.top_p = 1.0f;
  s.top_k = 0;
  s.min_p = 0.0f;
  s.repeat_penalty = 1.0f;
  s.presence_penalty = 0;
  s.frequency_penalty = 0;
  SNIPER_TRY_API(f.number("temperature", {0.0, 1.0}, &s.temperature));
  SNIPER_TRY_API(f.number("top_p", {0.0, 1.0, /*open_lo=*/true}, &s.top_p));
  int64_t top_k = 0;
  SNIPER_TRY_API(f.integer("top_k", {0, 1 << 24}, &top_k));
  s.top_k = static_cast<int>(top_k);
  SNIPER_TRY_API(f.string_list("stop_sequences", StringListRule{16, 1024, /*allow_single=*/false}, &p.stop));
  SNIPER_TRY_API(f.boolean("stream", &p.stream));
  Json messages = Json::array();
  if (const Json* system = f.get("system")) {
    std::string text;
    SNIPER_TRY_API(text_of(*system, "system", &text));
    messages.push_back(Json{{"role", "system"}, {"content", text}});
  }
  SNIPER_TRY_API(f.require("messages"));
  const Json* msgs = nullptr;
  SNIPER_TRY_API(f.array("messages", SIZE_MAX, &msgs));
  if (msgs->empty()) return f.error("messages", "messages must hold at least one message");
  for (size_t i = 0; i < msgs->size(); ++i) SNIPER_TRY_API(convert_message((*msgs)[i], i, &messages));
  out->chat.messages = std::move(messages);
  const Json* tools_in = nullptr;
  SNIPER_TRY_API(f.array("tools", SIZE_MAX, &tools_in));
  if (tools_in != nullptr) {
    Json tools = Json::array();
    for (size_t i = 0; i < tools_in->size(); ++i) {
      const Json& t = (*tools_in)[i];
      const std::string at = "tools[" + std::to_string(i) + "]";
      if (!t.is_object()) return bad(at + " must be an object, got " + json_kind(t), at);
      const FieldReader tf(t, at);
      std::string name, description, type = "custom";
      SNIPER_TRY_API(tf.require("name"));
      SNIPER_TRY_API(tf.string("name", &name, /*allow_empty=*/false));
      SNIPER_TRY_API(tf.string("description", &description));
      if (tf.get("type") != nullptr && *tf.get("type") != "custom") {
        return tf.error("type", at + ".type is " + describe_json(*tf.get("type")) +
                                    ": only custom tools (name, description, input_schema) are supported");
      }
      const Json* schema = nullptr;
      SNIPER_TRY_API(tf.object("input_schema", &schema));
      Json fn = Json{{"name", name}};
      if (tf.get("description") != nullptr) fn["description"] = description;
      fn["parameters"] = schema != nullptr ? *schema : Json{{"type", "object"}};
      tools.push_back(Json{{"type", "function"}, {"function", std::move(fn)}});
    }
    if (!tools.empty()) out->chat.tools = std::move(tools);
  }
  const Json* tool_choice = nullptr;
  SNIPER_TRY_API(f.object("tool_choice", &tool_choice));
  if (tool_choice != nullptr) {
    const FieldReader tc(*tool_choice, "tool_choice");
    std::string type;
    SNIPER_TRY_API(tc.require("type"));
    SNIPER_TRY_API(tc.one_of("type", {"auto", "any", "tool", "none"}, &type));
    const bool have_tools = out->chat.tools.is_array() && !out->chat.tools.empty();
    if ((type == "any" || type == "tool") && !have_tools) {
      return tc.error("type", "tool_choice.type is '" + type + "' but the request has no tools");
    }
    if (type == "tool") {  // {"type": "tool", "name": NAME}: NAME must be one of the tools
      std::string name, names;
      SNIPER_TRY_API(tc.require("name"));
      SNIPER_TRY_API(tc.string("name", &name, /*allow_empty=*/false));
      bool found = false;
      for (const Json& t : out->chat.tools) {
        const std::string& n = t["function"]["name"].get_ref<const std::string&>();
        found = found || n == name;
        names += (names.empty() ? "" : ", ") + n;
      }
      if (!found) return tc.error("name", "tool_choice.name is '" + name + "' but the tools are " + names);
    }
    if (type == "none") out->chat.tools = Json();
  }
  const Json* thinking = nullptr;
  SNIPER_TRY_API(f.object("thinking", &thinking));
  if (thinking != nullptr) {
    const FieldReader tf(*thinking, "thinking");
    std::string type;
    SNIPER_TRY_API(tf.require("type"));
    SNIPER_TRY_API(tf.one_of("type", {"enabled", "disabled"}, &type));
    out->thinking = type == "enabled";
  }
  return std::nullopt;
}

std::string anthropic_error_type(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return status < 500 ? "invalid_request_error" : "api_error";
  }
}

Json anthropic_error_json(int status, const std::string& message) {
  return Json{{"type", "error"}, {"error", Json{{"type", anthropic_error_type(status)}, {"message", message}}}};
}

}  // namespace sniper::server
