// SPDX-License-Identifier: MIT
#include "server/anthropic_protocol.h"

#include <cmath>

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

#define TRY_ANTHROPIC(expr)          \
  do {                               \
    if (auto e_ = (expr)) return e_; \
  } while (0)

// Text of a string or an array of text blocks (system prompts, tool results).
std::optional<ApiError> text_of(const Json& v, const std::string& where, std::string* out) {
  if (v.is_string()) {
    *out = v.get<std::string>();
    return std::nullopt;
  }
  if (!v.is_array()) return bad(where + " must be a string or an array of text blocks, got " + kind(v));
  for (size_t i = 0; i < v.size(); ++i) {
    const Json& b = v[i];
    if (!b.is_object() || b.value("type", Json()) != "text" || !b.contains("text") || !b["text"].is_string()) {
      return bad(where + "[" + std::to_string(i) + "] must be {\"type\": \"text\", \"text\": string}");
    }
    if (!out->empty()) *out += "\n";
    *out += b["text"].get<std::string>();
  }
  return std::nullopt;
}

std::optional<ApiError> convert_message(const Json& m, size_t i, Json* messages) {
  const std::string at = "messages[" + std::to_string(i) + "]";
  if (!m.is_object()) return bad(at + " must be an object", "messages");
  const Json role = m.value("role", Json());
  if (role != "user" && role != "assistant") return bad(at + ".role must be \"user\" or \"assistant\"", "messages");
  auto content = m.find("content");
  if (content == m.end()) return bad(at + ".content is required", "messages");
  if (content->is_string()) {
    messages->push_back(Json{{"role", role}, {"content", *content}});
    return std::nullopt;
  }
  if (!content->is_array())
    return bad(at + ".content must be a string or an array of content blocks, got " + kind(*content), "messages");
  std::string text, thinking;
  Json calls = Json::array();
  std::vector<Json> tool_results;
  for (size_t k = 0; k < content->size(); ++k) {
    const Json& b = (*content)[k];
    const std::string bat = at + ".content[" + std::to_string(k) + "]";
    if (!b.is_object() || !b.contains("type") || !b["type"].is_string())
      return bad(bat + " must be an object with a string type", "messages");
    const std::string type = b["type"].get<std::string>();
    if (type == "text") {
      if (!b.contains("text") || !b["text"].is_string()) return bad(bat + ".text must be a string", "messages");
      text += b["text"].get<std::string>();
    } else if (type == "thinking") {
      if (role != "assistant") return bad(bat + ": thinking blocks belong to assistant messages", "messages");
      if (b.contains("thinking") && b["thinking"].is_string()) thinking += b["thinking"].get<std::string>();
    } else if (type == "redacted_thinking") {
      continue;
    } else if (type == "tool_use") {
      if (role != "assistant") return bad(bat + ": tool_use blocks belong to assistant messages", "messages");
      if (!b.contains("id") || !b["id"].is_string() || !b.contains("name") || !b["name"].is_string()) {
        return bad(bat + " needs a string id and name", "messages");
      }
      const Json input = b.contains("input") ? b["input"] : Json::object();
      if (!input.is_object()) return bad(bat + ".input must be an object, got " + kind(input), "messages");
      calls.push_back(Json{{"id", b["id"]},
                           {"type", "function"},
                           {"function", Json{{"name", b["name"]}, {"arguments", dump_json(input)}}}});
    } else if (type == "tool_result") {
      if (role != "user") return bad(bat + ": tool_result blocks belong to user messages", "messages");
      if (!b.contains("tool_use_id") || !b["tool_use_id"].is_string())
        return bad(bat + ".tool_use_id must be a string", "messages");
      std::string result;
      if (b.contains("content") && !b["content"].is_null())
        TRY_ANTHROPIC(text_of(b["content"], bat + ".content", &result));
      if (b.value("is_error", false)) result = "Error: " + result;
      tool_results.push_back(Json{{"role", "tool"}, {"tool_call_id", b["tool_use_id"]}, {"content", result}});
    } else if (type == "image" || type == "document") {
      return bad(bat + ": " + type + " blocks are not supported (this server serves text-only models)", "messages");
    } else {
      return bad(bat + ".type is '" + type + "' but must be text, thinking, tool_use or tool_result", "messages");
    }
  }
  for (Json& r : tool_results) messages->push_back(std::move(r));
  if (role == "user") {
    if (!text.empty() || tool_results.empty()) messages->push_back(Json{{"role", "user"}, {"content", text}});
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
  auto model = body.find("model");
  if (model == body.end() || !model->is_string() || model->get_ref<const std::string&>().empty()) {
    return bad("model: a non-empty string is required", "model");
  }
  out->model = model->get<std::string>();
  auto mt = body.find("max_tokens");
  if (mt == body.end() || mt->is_null()) return bad("max_tokens: field required", "max_tokens");
  if (!mt->is_number_integer() || mt->get<int64_t>() < 1)
    return bad("max_tokens must be an integer >= 1, got " + mt->dump(), "max_tokens");
  GenerationParams& p = out->chat.params;
  p.max_tokens = mt->get<int64_t>();
  SamplerConfig& s = p.sampler;
  s.temperature = 1.0f;  // Anthropic's defaults
  s.top_p = 1.0f;
  s.top_k = 0;
  s.min_p = 0.0f;
  s.repeat_penalty = 1.0f;
  s.presence_penalty = 0;
  s.frequency_penalty = 0;
  struct Num {
    const char* key;
    double lo, hi;
    float* out;
  };
  for (const Num& n : {Num{"temperature", 0.0, 1.0, &s.temperature}, Num{"top_p", 0.0, 1.0, &s.top_p}}) {
    auto it = body.find(n.key);
    if (it == body.end() || it->is_null()) continue;
    if (!it->is_number()) return bad(std::string(n.key) + " must be a number, got " + kind(*it), n.key);
    const double v = it->get<double>();
    if (!std::isfinite(v) || v < n.lo || v > n.hi)
      return bad(std::string(n.key) + " is " + it->dump() + " but must be in [0, 1]", n.key);
    *n.out = static_cast<float>(v);
  }
  if (s.top_p <= 0.0f) return bad("top_p is 0 but must be in (0, 1]", "top_p");
  if (auto it = body.find("top_k"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > (1 << 24)) {
      return bad("top_k must be a non-negative integer, got " + it->dump(), "top_k");
    }
    s.top_k = static_cast<int>(it->get<int64_t>());
  }
  if (auto it = body.find("stop_sequences"); it != body.end() && !it->is_null()) {
    if (!it->is_array())
      return bad(std::string("stop_sequences must be an array of strings, got ") + kind(*it), "stop_sequences");
    if (it->size() > 16) return bad("stop_sequences has more than 16 entries", "stop_sequences");
    for (const Json& x : *it) {
      if (!x.is_string() || x.get_ref<const std::string&>().empty() || x.get_ref<const std::string&>().size() > 1024) {
        return bad("stop_sequences must hold non-empty strings of at most 1024 bytes", "stop_sequences");
      }
      p.stop.push_back(x.get<std::string>());
    }
  }
  if (auto it = body.find("stream"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return bad(std::string("stream must be a boolean, got ") + kind(*it), "stream");
    p.stream = it->get<bool>();
  }
  Json messages = Json::array();
  if (auto it = body.find("system"); it != body.end() && !it->is_null()) {
    std::string system;
    TRY_ANTHROPIC(text_of(*it, "system", &system));
    messages.push_back(Json{{"role", "system"}, {"content", system}});
  }
  auto msgs = body.find("messages");
  if (msgs == body.end() || !msgs->is_array()) return bad("messages: an array is required", "messages");
  if (msgs->empty()) return bad("messages: at least one message is required", "messages");
  for (size_t i = 0; i < msgs->size(); ++i) TRY_ANTHROPIC(convert_message((*msgs)[i], i, &messages));
  out->chat.messages = std::move(messages);
  if (auto it = body.find("tools"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) return bad(std::string("tools must be an array, got ") + kind(*it), "tools");
    Json tools = Json::array();
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& t = (*it)[i];
      const std::string at = "tools[" + std::to_string(i) + "]";
      if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
        return bad(at + ".name must be a string", "tools");
      if (t.contains("type") && t["type"] != "custom") {
        return bad(
            at + ".type is " + t["type"].dump() + ": only custom tools (name, description, input_schema) are supported",
            "tools");
      }
      Json fn = Json{{"name", t["name"]}};
      if (t.contains("description") && t["description"].is_string()) fn["description"] = t["description"];
      fn["parameters"] = t.contains("input_schema") ? t["input_schema"] : Json{{"type", "object"}};
      if (!fn["parameters"].is_object()) return bad(at + ".input_schema must be an object", "tools");
      tools.push_back(Json{{"type", "function"}, {"function", std::move(fn)}});
    }
    if (!tools.empty()) out->chat.tools = std::move(tools);
  }
  if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
    if (!it->is_object() || !it->contains("type") || !(*it)["type"].is_string()) {
      return bad("tool_choice must be an object with a type (auto, any, tool, none)", "tool_choice");
    }
    const std::string type = (*it)["type"].get<std::string>();
    if (type == "none") {
      out->chat.tools = Json();
    } else if (type != "auto" && type != "any" && type != "tool") {
      return bad("tool_choice.type is '" + type + "' but must be auto, any, tool or none", "tool_choice");
    }
  }
  if (auto it = body.find("thinking"); it != body.end() && !it->is_null()) {
    const Json type = it->is_object() ? it->value("type", Json()) : Json();
    if (type == "enabled") {
      out->thinking = true;
    } else if (type == "disabled") {
      out->thinking = false;
    } else {
      return bad("thinking must be {\"type\": \"enabled\", \"budget_tokens\": N} or {\"type\": \"disabled\"}",
                 "thinking");
    }
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
