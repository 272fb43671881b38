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

// A short, printable rendering of a JSON value for error messages.
std::string describe(const Json& v) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s.size() > 40) s = s.substr(0, 40) + "...";
    return "'" + s + "'";
  }
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 40) + "...";
  return s;
}

const char* type_name(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

// Normalises `content` (string, or array of {"type":"text","text":...} parts joined with "\n")
// into a string. `field` is the field's name for errors ("messages[1].content").
Result<std::string> content_text(const Json& content, const std::string& field) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    return make_error("%s is %s but must be a string or an array of text parts", field.c_str(), type_name(content));
  }
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    const std::string part_field = field + "[" + std::to_string(i) + "]";
    if (!part.is_object()) return make_error("%s is %s but must be an object", part_field.c_str(), type_name(part));
    if (!part.contains("type") || !part["type"].is_string()) {
      return make_error("%s.type is missing or not a string", part_field.c_str());
    }
    if (part["type"] != "text") {
      return make_error("%s.type is %s but only 'text' parts are supported", part_field.c_str(),
                        describe(part["type"]).c_str());
    }
    if (!part.contains("text") || !part["text"].is_string()) {
      return make_error("%s.text is missing or not a string", part_field.c_str());
    }
    if (i > 0) text += '\n';
    text += part["text"].get<std::string>();
  }
  return text;
}

// Validates one assistant tool call and returns it with "arguments" as a JSON object.
Result<Json> normalise_tool_call(const Json& call, const std::string& field) {
  if (!call.is_object()) return make_error("%s is %s but must be an object", field.c_str(), type_name(call));
  if (!call.contains("id") || !call["id"].is_string() || call["id"].get_ref<const std::string&>().empty()) {
    return make_error("%s.id is missing or not a non-empty string", field.c_str());
  }
  if (call.contains("type") && call["type"] != "function") {
    return make_error("%s.type is %s but must be 'function'", field.c_str(), describe(call["type"]).c_str());
  }
  if (!call.contains("function") || !call["function"].is_object()) {
    return make_error("%s.function is missing or not an object", field.c_str());
  }
  const Json& fn = call["function"];
  if (!fn.contains("name") || !fn["name"].is_string() || fn["name"].get_ref<const std::string&>().empty()) {
    return make_error("%s.function.name is missing or not a non-empty string", field.c_str());
  }
  Json arguments = Json::object();
  if (fn.contains("arguments")) {
    const Json& a = fn["arguments"];
    if (a.is_string()) {
      arguments = parse_json_or_discarded<Json>(a.get_ref<const std::string&>());
      if (arguments.is_discarded()) {
        return make_error("%s.function.arguments is %s, which is not valid JSON", field.c_str(), describe(a).c_str());
      }
    } else if (a.is_object()) {
      arguments = a;  // lenient: some clients send the object itself
    } else {
      return make_error("%s.function.arguments is %s but must be a JSON string", field.c_str(), type_name(a));
    }
    if (!arguments.is_object()) {
      return make_error("%s.function.arguments is %s but must encode a JSON object", field.c_str(),
                        describe(a).c_str());
    }
  } else {
    return make_error("%s.function.arguments is missing", field.c_str());
  }
  Json out = Json::object();
  out["id"] = call["id"];
  out["type"] = "function";
  out["function"] = Json::object();
  out["function"]["name"] = fn["name"];
  out["function"]["arguments"] = std::move(arguments);
  return out;
}

// Validates and normalises one message; `i` is its index.
Result<Json> normalise_message(const Json& msg, size_t i) {
  const std::string field = "messages[" + std::to_string(i) + "]";
  if (!msg.is_object()) return make_error("%s is %s but must be an object", field.c_str(), type_name(msg));
  if (!msg.contains("role") || !msg["role"].is_string()) {
    return make_error("%s.role is missing or not a string", field.c_str());
  }
  std::string role = msg["role"].get<std::string>();
  if (role == "developer") role = "system";
  if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
    return make_error("%s.role is %s but must be one of system, user, assistant, tool, developer", field.c_str(),
                      describe(msg["role"]).c_str());
  }
  Json out = Json::object();
  out["role"] = role;

  const bool has_calls =
      role == "assistant" && msg.contains("tool_calls") && msg["tool_calls"].is_array() && !msg["tool_calls"].empty();
  const Json null_json;
  const Json& content = msg.contains("content") ? msg["content"] : null_json;
  if (content.is_null()) {
    if (!has_calls) {
      return make_error("%s.content is %s but must be a string or an array of text parts%s", field.c_str(),
                        msg.contains("content") ? "null" : "missing",
                        role == "assistant" ? " (null only with tool_calls)" : "");
    }
    out["content"] = "";  // templates concatenate content; null would render as "None" or fail
  } else {
    SNIPER_ASSIGN_OR_RETURN(std::string text, content_text(content, field + ".content"));
    out["content"] = std::move(text);
  }

  if (msg.contains("name")) {
    if (!msg["name"].is_string())
      return make_error("%s.name is %s but must be a string", field.c_str(), type_name(msg["name"]));
    out["name"] = msg["name"];
  }
  if (msg.contains("reasoning_content") && !msg["reasoning_content"].is_null()) {
    if (role != "assistant")
      return make_error("%s.reasoning_content is only allowed on assistant messages", field.c_str());
    if (!msg["reasoning_content"].is_string()) {
      return make_error("%s.reasoning_content is %s but must be a string", field.c_str(),
                        type_name(msg["reasoning_content"]));
    }
    out["reasoning_content"] = msg["reasoning_content"];
  }
  if (msg.contains("tool_calls") && !msg["tool_calls"].is_null()) {
    const Json& calls = msg["tool_calls"];
    if (role != "assistant") return make_error("%s.tool_calls is only allowed on assistant messages", field.c_str());
    if (!calls.is_array()) {
      return make_error("%s.tool_calls is %s but must be an array", field.c_str(), type_name(calls));
    }
    if (!calls.empty()) {
      Json normalised = Json::array();
      for (size_t k = 0; k < calls.size(); ++k) {
        SNIPER_ASSIGN_OR_RETURN(Json call,
                                normalise_tool_call(calls[k], field + ".tool_calls[" + std::to_string(k) + "]"));
        normalised.push_back(std::move(call));
      }
      out["tool_calls"] = std::move(normalised);
    }
  }
  if (role == "tool") {
    if (!msg.contains("tool_call_id") || !msg["tool_call_id"].is_string()) {
      return make_error("%s.tool_call_id is missing or not a string (required for role 'tool')", field.c_str());
    }
    out["tool_call_id"] = msg["tool_call_id"];
  }
  return out;
}

// Validates the OpenAI tools array; returns it unchanged (the templates print the objects).
Status validate_tools(const Json& tools) {
  if (!tools.is_array()) return make_error("tools is %s but must be an array or null", type_name(tools));
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    const std::string field = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) return make_error("%s is %s but must be an object", field.c_str(), type_name(t));
    if (!t.contains("type") || t["type"] != "function") {
      return make_error("%s.type is %s but must be 'function'", field.c_str(),
                        t.contains("type") ? describe(t["type"]).c_str() : "missing");
    }
    if (!t.contains("function") || !t["function"].is_object()) {
      return make_error("%s.function is missing or not an object", field.c_str());
    }
    const Json& fn = t["function"];
    if (!fn.contains("name") || !fn["name"].is_string() || fn["name"].get_ref<const std::string&>().empty()) {
      return make_error("%s.function.name is missing or not a non-empty string", field.c_str());
    }
    if (fn.contains("description") && !fn["description"].is_string()) {
      return make_error("%s.function.description is %s but must be a string", field.c_str(),
                        type_name(fn["description"]));
    }
    if (fn.contains("parameters") && !fn["parameters"].is_object()) {
      return make_error("%s.function.parameters is %s but must be a JSON Schema object", field.c_str(),
                        type_name(fn["parameters"]));
    }
  }
  return ok_status();
}

}  // namespace

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
  if (!input.messages.is_array()) {
    return make_error("messages is %s but must be an array", type_name(input.messages));
  }
  if (input.messages.empty()) return make_error("messages is empty but must hold at least one message");
  Json messages = Json::array();
  for (size_t i = 0; i < input.messages.size(); ++i) {
    SNIPER_ASSIGN_OR_RETURN(Json msg, normalise_message(input.messages[i], i));
    messages.push_back(std::move(msg));
  }
  if (!input.template_kwargs.is_null() && !input.template_kwargs.is_object()) {
    return make_error("chat_template_kwargs is %s but must be an object", type_name(input.template_kwargs));
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
        return make_error("chat_template_kwargs.enable_thinking is %s but must be a boolean", type_name(value));
      }
      context[key] = value;
    }
  }

  ChatTemplateLimits limits;
  limits.cancel = input.cancel;
  auto prompt = tmpl.render(context, limits);
  if (!prompt.ok()) return make_error("chat template: %s", prompt.error().message.c_str());

  RenderedChat out;
  out.prompt = std::move(prompt.value());
  if (context.contains("tools")) {
    for (const Json& tool : context["tools"]) {
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
