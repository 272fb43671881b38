// SPDX-License-Identifier: MIT
// detect_chat_format and render_chat: turn an OpenAI chat request (messages, tools,
// chat_template_kwargs) into the prompt text of the model's own chat template.
// Invariants: every message field the template sees has been validated and normalised first
// (developer -> system, text parts joined, null content -> "", tool-call arguments parsed from
// their JSON string into an object); only known message fields reach the template; errors name
// the field and the bad value. Nothing throws.
#include "server/chat_format.h"

#include <string>
#include <string_view>
#include <utility>

#include "server/bounded_json.h"
#include "server/field_validators.h"

namespace sniper::server {
namespace {

using Json = nlohmann::ordered_json;

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view rstrip(std::string_view s) {
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// A validator's error as this file's Error.
#define TRY_FIELD(expr)                                                 \
  do {                                                                  \
    if (auto e_ = (expr)) return make_error("%s", e_->message.c_str()); \
  } while (0)

Status require_object(const Json& v, const std::string& field) {
  if (!v.is_object()) return make_error("%s must be an object, got %s", field.c_str(), json_kind(v));
  return ok_status();
}

// Normalises `content` (string, or array of {"type":"text","text":...} parts joined with "\n")
// into a string. `field` is the field's name for errors ("messages[1].content").
Result<std::string> content_text(const Json& content, const std::string& field) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    return make_error("%s must be a string or an array of text parts, got %s", field.c_str(), json_kind(content));
  }
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    const std::string part_field = field + "[" + std::to_string(i) + "]";
    SNIPER_TRY(require_object(part, part_field));
    const FieldReader f(part, part_field);
    std::string type, part_text;
    TRY_FIELD(f.require("type"));
    TRY_FIELD(f.string("type", &type));
    if (type != "text") {
      return make_error("%s.type is %s but only 'text' parts are supported", part_field.c_str(),
                        describe_json(part["type"]).c_str());
    }
    TRY_FIELD(f.require("text"));
    TRY_FIELD(f.string("text", &part_text));
    if (i > 0) text += '\n';
    text += part_text;
  }
  return text;
}

// Validates one assistant tool call and returns it with "arguments" as a JSON object.
Result<Json> normalise_tool_call(const Json& call, const std::string& field) {
  SNIPER_TRY(require_object(call, field));
  const FieldReader f(call, field);
  std::string id, type = "function", name;
  TRY_FIELD(f.require("id"));
  TRY_FIELD(f.string("id", &id, /*allow_empty=*/false));
  TRY_FIELD(f.one_of("type", {"function"}, &type));
  TRY_FIELD(f.require("function"));
  const Json* fn = nullptr;
  TRY_FIELD(f.object("function", &fn));
  const FieldReader ff(*fn, field + ".function");
  TRY_FIELD(ff.require("name"));
  TRY_FIELD(ff.string("name", &name, /*allow_empty=*/false));
  TRY_FIELD(ff.require("arguments"));
  const Json& a = *ff.get("arguments");
  Json arguments;
  if (a.is_string()) {
    arguments = parse_json_or_discarded<Json>(a.get_ref<const std::string&>());
    if (arguments.is_discarded()) {
      return make_error("%s.function.arguments is %s, which is not valid JSON", field.c_str(),
                        describe_json(a).c_str());
    }
  } else if (a.is_object()) {
    arguments = a;  // lenient: some clients send the object itself
  } else {
    return make_error("%s.function.arguments must be a JSON string, got %s", field.c_str(), json_kind(a));
  }
  if (!arguments.is_object()) {
    return make_error("%s.function.arguments is %s but must encode a JSON object", field.c_str(),
                      describe_json(a).c_str());
  }
  Json out = Json::object();
  out["id"] = id;
  out["type"] = "function";
  out["function"] = Json::object();
  out["function"]["name"] = name;
  out["function"]["arguments"] = std::move(arguments);
  return out;
}

// Validates and normalises one message; `i` is its index.
Result<Json> normalise_message(const Json& msg, size_t i) {
  const std::string field = "messages[" + std::to_string(i) + "]";
  SNIPER_TRY(require_object(msg, field));
  const FieldReader f(msg, field);
  std::string role;
  TRY_FIELD(f.require("role"));
  TRY_FIELD(f.one_of("role", {"system", "user", "assistant", "tool", "developer"}, &role));
  if (role == "developer") role = "system";
  Json out = Json::object();
  out["role"] = role;

  const Json* calls = nullptr;
  TRY_FIELD(f.array("tool_calls", SIZE_MAX, &calls));
  const bool has_calls = role == "assistant" && calls != nullptr && !calls->empty();
  if (const Json* content = f.get("content")) {
    SNIPER_ASSIGN_OR_RETURN(std::string text, content_text(*content, field + ".content"));
    out["content"] = std::move(text);
  } else if (has_calls) {
    out["content"] = "";  // templates concatenate content; null would render as "None" or fail
  } else {
    return make_error("%s.content is %s but must be a string or an array of text parts%s", field.c_str(),
                      msg.contains("content") ? "null" : "required",
                      role == "assistant" ? " (null only with tool_calls)" : "");
  }

  if (f.get("name") != nullptr) {
    std::string name;
    TRY_FIELD(f.string("name", &name));
    out["name"] = name;
  }
  if (f.get("reasoning_content") != nullptr) {
    if (role != "assistant")
      return make_error("%s.reasoning_content is only allowed on assistant messages", field.c_str());
    std::string reasoning;
    TRY_FIELD(f.string("reasoning_content", &reasoning));
    out["reasoning_content"] = reasoning;
  }
  if (calls != nullptr) {
    if (role != "assistant") return make_error("%s.tool_calls is only allowed on assistant messages", field.c_str());
    if (!calls->empty()) {
      Json normalised = Json::array();
      for (size_t k = 0; k < calls->size(); ++k) {
        SNIPER_ASSIGN_OR_RETURN(Json call,
                                normalise_tool_call((*calls)[k], field + ".tool_calls[" + std::to_string(k) + "]"));
        normalised.push_back(std::move(call));
      }
      out["tool_calls"] = std::move(normalised);
    }
  }
  if (role == "tool") {
    std::string id;
    if (f.get("tool_call_id") == nullptr) {
      return make_error("%s.tool_call_id is required for role 'tool'", field.c_str());
    }
    TRY_FIELD(f.string("tool_call_id", &id));
    out["tool_call_id"] = id;
  }
  return out;
}

// Validates the OpenAI tools array; returns it unchanged (the templates print the objects).
Status validate_tools(const Json& tools) {
  if (!tools.is_array()) return make_error("tools must be an array or null, got %s", json_kind(tools));
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    const std::string field = "tools[" + std::to_string(i) + "]";
    SNIPER_TRY(require_object(t, field));
    const FieldReader f(t, field);
    std::string type, name, description;
    TRY_FIELD(f.require("type"));
    TRY_FIELD(f.one_of("type", {"function"}, &type));
    TRY_FIELD(f.require("function"));
    const Json* fn = nullptr;
    TRY_FIELD(f.object("function", &fn));
    const FieldReader ff(*fn, field + ".function");
    TRY_FIELD(ff.require("name"));
    TRY_FIELD(ff.string("name", &name, /*allow_empty=*/false));
    TRY_FIELD(ff.string("description", &description));
    if (const Json* params = ff.get("parameters"); params != nullptr && !params->is_object()) {
      return make_error("%s.function.parameters must be a JSON Schema object, got %s", field.c_str(),
                        json_kind(*params));
    }
  }
  return ok_status();
}

using EscapeFn = std::function<std::string(std::string_view, bool)>;

// Applies `escape` to every string and key of j (recursion bounded by the body's depth limit).
Json escape_strings(const Json& j, const EscapeFn& escape, bool model_output) {
  if (j.is_string()) return escape(j.get_ref<const std::string&>(), model_output);
  if (j.is_array()) {
    Json out = Json::array();
    for (const Json& e : j) out.push_back(escape_strings(e, escape, model_output));
    return out;
  }
  if (j.is_object()) {
    Json out = Json::object();
    for (auto it = j.begin(); it != j.end(); ++it) {
      out[escape(it.key(), model_output)] = escape_strings(it.value(), escape, model_output);
    }
    return out;
  }
  return j;
}

}  // namespace

std::vector<std::string> model_output_markers(const ChatFormat& format) {
  std::vector<std::string> m;
  if (format.thinking == ThinkingSyntax::kGemma4Channel) {
    m = {"<|channel>", "<channel|>"};
  } else if (format.supports_thinking) {
    m = {"<think>", "</think>"};
  }
  switch (format.tool_calls) {
    case ToolCallFormat::kHermes:
    case ToolCallFormat::kQwen35Xml: m.insert(m.end(), {"<tool_call>", "</tool_call>"}); break;
    case ToolCallFormat::kGemma4: m.insert(m.end(), {"<|tool_call>", "<tool_call|>", "<|\"|>"}); break;
    case ToolCallFormat::kLlama3: m.push_back("<|python_tag|>"); break;
    case ToolCallFormat::kNone: break;
  }
  return m;
}

ChatFormat detect_chat_format(std::string_view source) {
  ChatFormat format;
  if (contains(source, "<|tool_call>call:")) {
    format.tool_calls = ToolCallFormat::kGemma4;
  } else if (contains(source, "<tool_call>") && contains(source, "<function=")) {
    format.tool_calls = ToolCallFormat::kQwen35Xml;
  } else if (contains(source, "<tool_call>")) {
    format.tool_calls = ToolCallFormat::kHermes;
  } else if (contains(source, "<|python_tag|>") ||
             (contains(source, "\"parameters\"") && (contains(source, "<|eom_id|>") || contains(source, "ipython")))) {
    format.tool_calls = ToolCallFormat::kLlama3;
  }
  format.supports_thinking = contains(source, "<think>") || contains(source, "enable_thinking");
  if (contains(source, "<|channel>thought")) format.thinking = ThinkingSyntax::kGemma4Channel;
  return format;
}

Result<RenderedChat> render_chat(const ChatTemplate& tmpl, const ChatFormat& format, const ChatRenderInput& input,
                                 const std::string& bos_token, const std::string& eos_token) {
  if (!input.messages.is_array()) return make_error("messages must be an array, got %s", json_kind(input.messages));
  if (input.messages.empty()) return make_error("messages must not be empty");
  Json messages = Json::array();
  for (size_t i = 0; i < input.messages.size(); ++i) {
    SNIPER_ASSIGN_OR_RETURN(Json msg, normalise_message(input.messages[i], i));
    messages.push_back(std::move(msg));
  }
  if (!input.template_kwargs.is_null() && !input.template_kwargs.is_object()) {
    return make_error("chat_template_kwargs must be an object, got %s", json_kind(input.template_kwargs));
  }

  Json context = Json::object();
  context["messages"] = std::move(messages);
  if (!input.tools.is_null()) {
    SNIPER_TRY(validate_tools(input.tools));
    if (!input.tools.empty()) context["tools"] = input.tools;
  }
  context["add_generation_prompt"] = input.add_generation_prompt;
  context["bos_token"] = bos_token;
  context["eos_token"] = eos_token;
  if (input.template_kwargs.is_object()) {
    for (const auto& [key, value] : input.template_kwargs.items()) {
      if (context.contains(key) || key == "tools") {
        return make_error("chat_template_kwargs.%s is reserved (set it through the request instead)", key.c_str());
      }
      if (key == "enable_thinking" && !value.is_boolean()) {
        return make_error("chat_template_kwargs.enable_thinking must be a boolean, got %s", json_kind(value));
      }
      context[key] = value;
    }
  }

  if (input.escape_text) {
    // Only what came from the request: the template's variables it sets itself stay as they are.
    for (auto it = context.begin(); it != context.end(); ++it) {
      if (it.key() == "add_generation_prompt" || it.key() == "bos_token" || it.key() == "eos_token") continue;
      if (it.key() == "messages") {
        for (Json& m : it.value()) m = escape_strings(m, input.escape_text, m["role"] == "assistant");
      } else {
        it.value() = escape_strings(it.value(), input.escape_text, false);
      }
    }
  }
  ChatTemplateLimits limits;
  limits.cancel = input.cancel;
  auto prompt = tmpl.render(context, limits);
  if (!prompt.ok()) return make_error("chat template: %s", prompt.error().message.c_str());

  RenderedChat out;
  out.prompt = std::move(prompt.value());
  if (context.contains("tools")) {
    for (const Json& tool : input.tools) {  // as the request wrote them (validated above), not escaped
      const Json& fn = tool["function"];
      out.tool_schemas[fn["name"].get<std::string>()] = fn.contains("parameters") ? fn["parameters"] : Json(nullptr);
    }
  }
  if (format.thinking == ThinkingSyntax::kGemma4Channel) {
    if (input.add_generation_prompt) {
      if (out.prompt.ends_with("<turn|>\n")) out.prompt += "<|turn>model\n";  // as llama.cpp
      // The template closes an empty thought channel ("<|channel>thought\n<channel|>") when
      // thinking is off; otherwise the model opens its own.
      out.thinking_enabled = !rstrip(out.prompt).ends_with("<channel|>");
    }
    return out;
  }
  if (input.add_generation_prompt) {
    const std::string_view tail = rstrip(out.prompt);
    if (tail.ends_with("<think>")) {
      out.thinking_open = true;  // the template opened the block: the model writes reasoning first
      out.thinking_enabled = true;
    } else if (format.supports_thinking && !tail.ends_with("</think>")) {
      // An empty "<think>\n\n</think>\n\n" at the end means thinking was switched off.
      const auto it = context.find("enable_thinking");
      out.thinking_enabled = it == context.end() || !it->is_boolean() || it->get<bool>();
    }
  }
  return out;
}

}  // namespace sniper::server
