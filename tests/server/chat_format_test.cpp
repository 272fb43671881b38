// SPDX-License-Identifier: MIT
// Tests of the server's chat formatting: detect_chat_format, render_chat (golden renders from
// ../shared/tokenizer/chat-*.json, made by reference Jinja2, plus OpenAI-shaped tool
// conversations and validation errors) and ChatOutputParser (reasoning/content/tool-call
// splitting, checked for every way of cutting the output into 2 and 3 pieces and byte by byte).
#include "server/chat_format.h"
#include "golden/shared_dir.h"
#include "server/tool_call_syntax.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace sniper::server {
namespace {

using Json = nlohmann::ordered_json;

Json read_json(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return Json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The model's chat template: <model>/tokenizer_config.json's chat_template, or
// <model>/chat_template.jinja where the model ships it that way (Qwen3.5, Gemma 4).
std::string template_source(const std::string& model) {
  const std::string dir = shared_dir() + "/tokenizer/" + model;
  const Json config = read_json(dir + "/tokenizer_config.json");
  if (config.is_object() && config.contains("chat_template")) return config["chat_template"].get<std::string>();
  return read_text(dir + "/chat_template.jinja");
}

ChatTemplate parse_template(const std::string& source) {
  auto t = ChatTemplate::parse(source);
  if (!t.ok()) {
    ADD_FAILURE() << t.error().message;
    return ChatTemplate::parse("").value();
  }
  return std::move(t.value());
}

// ---------------------------------------------------------------------------------------------
// detect_chat_format

TEST(DetectChatFormat, RealTemplates) {
  const std::string qwen = template_source("qwen3");
  const std::string llama = template_source("llama3");
  ASSERT_FALSE(qwen.empty());
  ASSERT_FALSE(llama.empty());
  const ChatFormat q = detect_chat_format(qwen);
  EXPECT_EQ(q.tool_calls, ToolCallFormat::kHermes);
  EXPECT_TRUE(q.supports_thinking);
  const ChatFormat l = detect_chat_format(llama);  // Llama 3.0 template: no tools, no thinking
  EXPECT_EQ(l.tool_calls, ToolCallFormat::kNone);
  EXPECT_FALSE(l.supports_thinking);
}

TEST(DetectChatFormat, Qwen35AndGemma4Templates) {
  const std::string qwen35 = template_source("qwen35");
  const std::string gemma4 = template_source("gemma4");
  ASSERT_FALSE(qwen35.empty());
  ASSERT_FALSE(gemma4.empty());
  const ChatFormat q = detect_chat_format(qwen35);
  EXPECT_EQ(q.tool_calls, ToolCallFormat::kQwen35Xml);
  EXPECT_TRUE(q.supports_thinking);
  EXPECT_EQ(q.thinking, ThinkingSyntax::kThinkTags);
  const ChatFormat g = detect_chat_format(gemma4);
  EXPECT_EQ(g.tool_calls, ToolCallFormat::kGemma4);
  EXPECT_TRUE(g.supports_thinking);
  EXPECT_EQ(g.thinking, ThinkingSyntax::kGemma4Channel);
  EXPECT_EQ(detect_chat_format(template_source("qwen3")).thinking, ThinkingSyntax::kThinkTags);
}

TEST(DetectChatFormat, Llama31Markers) {
  EXPECT_EQ(detect_chat_format("{{- '<|python_tag|>' + x }}").tool_calls, ToolCallFormat::kLlama3);
  EXPECT_EQ(detect_chat_format("{\"name\": ..., \"parameters\": ...} {% if m.role == 'ipython' %}").tool_calls,
            ToolCallFormat::kLlama3);
  EXPECT_EQ(detect_chat_format("\"parameters\" <|eom_id|>").tool_calls, ToolCallFormat::kLlama3);
  EXPECT_EQ(detect_chat_format("\"parameters\" only").tool_calls, ToolCallFormat::kNone);
  EXPECT_TRUE(detect_chat_format("{% if enable_thinking %}x{% endif %}").supports_thinking);
}

// ---------------------------------------------------------------------------------------------
// render_chat: goldens

void run_golden_file(const std::string& model, size_t min_cases) {
  const Json cases = read_json(shared_dir() + "/tokenizer/chat-" + model + ".json");
  ASSERT_TRUE(cases.is_object()) << "cannot read chat-" << model << ".json";
  const std::string source = template_source(model);
  const ChatTemplate tmpl = parse_template(source);
  const ChatFormat format = detect_chat_format(source);
  ASSERT_GE(cases["cases"].size(), min_cases);
  for (const Json& c : cases["cases"]) {
    SCOPED_TRACE(model + "/" + c["name"].get<std::string>() + " add_generation_prompt=" +
                 c["add_generation_prompt"].dump() + " enable_thinking=" + c["enable_thinking"].dump());
    ChatRenderInput in;
    in.messages = c["messages"];
    if (c.contains("tools")) in.tools = c["tools"];
    in.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    if (!c["enable_thinking"].is_null()) in.template_kwargs["enable_thinking"] = c["enable_thinking"];
    auto r =
        render_chat(tmpl, format, in, cases["bos_token"].get<std::string>(), cases["eos_token"].get<std::string>());
    ASSERT_TRUE(r.ok()) << r.error().message;
    const std::string expected = c["expected"].get<std::string>();
    EXPECT_EQ(r->prompt, expected);
    if (format.thinking == ThinkingSyntax::kGemma4Channel) {
      // Gemma 4 closes an empty thought channel when thinking is off (the default).
      EXPECT_FALSE(r->thinking_open);
      EXPECT_EQ(r->thinking_enabled, in.add_generation_prompt && !expected.ends_with("<channel|>"));
      EXPECT_EQ(r->thinking_enabled,
                in.add_generation_prompt && (c["enable_thinking"] == true || expected.ends_with("<tool_response|>")));
    } else {
      // Qwen3.5 opens <think> in the generation prompt; Qwen3 leaves it to the model.
      const bool opened = in.add_generation_prompt && expected.ends_with("<think>\n");
      EXPECT_EQ(r->thinking_open, opened);
      const bool thinking_off = c["enable_thinking"] == false;
      EXPECT_EQ(r->thinking_enabled, format.supports_thinking && in.add_generation_prompt && !thinking_off);
    }
    const bool has_tools = c.contains("tools") && c["tools"].is_array() && !c["tools"].empty();
    EXPECT_EQ(r->tool_schemas.empty(), !has_tools);
  }
}

TEST(RenderChat, Qwen3MatchesReference) { run_golden_file("qwen3", 36); }
TEST(RenderChat, Llama3MatchesReference) { run_golden_file("llama3", 12); }
TEST(RenderChat, Qwen35MatchesReference) { run_golden_file("qwen35", 60); }
TEST(RenderChat, Gemma4MatchesReference) { run_golden_file("gemma4", 60); }

// After a tool response the Gemma 4 template ends the turn when the assistant message also had
// content, and then adds no generation prompt; render_chat opens the model turn (as llama.cpp).
TEST(RenderChat, Gemma4OpensModelTurnAfterClosedToolTurn) {
  const std::string source = template_source("gemma4");
  const ChatTemplate tmpl = parse_template(source);
  ChatRenderInput in;
  in.messages = Json::parse(R"([
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": "Checking.",
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"}])");
  auto r = render_chat(tmpl, detect_chat_format(source), in, "<bos>", "<eos>");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->prompt,
            "<bos><|turn>user\nWeather?<turn|>\n<|turn>model\n<|tool_call>call:w{}<tool_call|>"
            "<|tool_response>response:w{value:<|\"|>sunny<|\"|>}<tool_response|>Checking.<turn|>\n<|turn>model\n");
  EXPECT_TRUE(r->thinking_enabled);
  in.add_generation_prompt = false;
  r = render_chat(tmpl, detect_chat_format(source), in, "<bos>", "<eos>");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->prompt.ends_with("Checking.<turn|>\n"));
}

// The reference rendering (Python Jinja2 as transformers configures it) of a tool conversation;
// the same string as tests/tokenizer/chat_template_test.cpp's kQwen3ToolsExpected.
constexpr const char* kQwen3ToolsExpected =
    "<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Get the weather «now»\", "
    "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": "
    "[\"city\"]}}}\n"
    "</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
    "</tool_call><|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<think>\n"
    "Need the tool.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
    "</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n{\"temp\": 21}\n</tool_response>\n<tool_response>\n"
    "second\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";

Json qwen_tools_messages() {
  return Json::parse(R"([
    {"role": "developer", "content": "Be brief."},
    {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
    {"role": "assistant", "content": null, "reasoning_content": "Need the tool.",
     "tool_calls": [{"id": "call1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call1", "content": "{\"temp\": 21}"},
    {"role": "tool", "tool_call_id": "call2", "content": [{"type": "text", "text": "second"}]}])");
}

Json weather_tools() {
  return Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "description": "Get the weather «now»", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");
}

TEST(RenderChat, Qwen3OpenAiToolConversation) {
  const std::string source = template_source("qwen3");
  const ChatTemplate tmpl = parse_template(source);
  ChatRenderInput in;
  in.messages = qwen_tools_messages();
  in.tools = weather_tools();
  in.template_kwargs["enable_thinking"] = false;
  auto r = render_chat(tmpl, detect_chat_format(source), in, "", "<|im_end|>");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->prompt, kQwen3ToolsExpected);
  EXPECT_FALSE(r->thinking_enabled);
  EXPECT_FALSE(r->thinking_open);
}

TEST(RenderChat, TextPartsJoinWithNewlineAndEmptyToolsAreNoTools) {
  const ChatTemplate tmpl = parse_template(
      "{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
      "{% if tools %}T{% endif %}");
  ChatRenderInput in;
  in.messages = Json::parse(R"([{"role": "user", "content": [{"type": "text", "text": "a"},
                                                              {"type": "text", "text": "b"}]}])");
  in.tools = Json::array();
  auto r = render_chat(tmpl, {}, in, "", "");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->prompt, "[user:a\nb]");
  EXPECT_FALSE(r->thinking_enabled);
}

TEST(RenderChat, OpenThinkInGenerationPrompt) {
  const ChatTemplate tmpl = parse_template(
      "{% for m in messages %}{{ m.content }}{% endfor %}{% if add_generation_prompt %}<think>\n{% endif %}");
  ChatRenderInput in;
  in.messages = Json::parse(R"([{"role": "user", "content": "hi"}])");
  auto r = render_chat(tmpl, {ToolCallFormat::kNone, true}, in, "", "");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->prompt, "hi<think>\n");
  EXPECT_TRUE(r->thinking_open);
  EXPECT_TRUE(r->thinking_enabled);
  in.add_generation_prompt = false;
  r = render_chat(tmpl, {ToolCallFormat::kNone, true}, in, "", "");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->thinking_open);
  EXPECT_FALSE(r->thinking_enabled);
}

TEST(RenderChat, TemplateErrorsAreReported) {
  const ChatTemplate tmpl = parse_template("{{ raise_exception('no system role') }}");
  ChatRenderInput in;
  in.messages = Json::parse(R"([{"role": "user", "content": "hi"}])");
  auto r = render_chat(tmpl, {}, in, "", "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no system role"), std::string::npos) << r.error().message;
}

// ---------------------------------------------------------------------------------------------
// render_chat: validation

struct BadInput {
  const char* messages;
  const char* tools;
  const char* kwargs;
  const char* expected;  // substring of the error message
};

const BadInput kBadInputs[] = {
    {R"({"role": "user"})", "null", "{}", "messages must be an array, got an object"},
    {R"([])", "null", "{}", "messages must not be empty"},
    {R"([1])", "null", "{}", "messages[0] must be an object, got a number"},
    {R"([{"content": "x"}])", "null", "{}", "messages[0].role is required"},
    {R"([{"role": "user", "content": "x"}, {"role": "robot", "content": "x"}])", "null", "{}",
     "messages[1].role is 'robot' but must be one of system, user, assistant, tool, developer"},
    {R"([{"role": "user"}])", "null", "{}", "messages[0].content is required"},
    {R"([{"role": "user", "content": null}])", "null", "{}", "messages[0].content is null"},
    {R"([{"role": "assistant", "content": null}])", "null", "{}",
     "messages[0].content is null but must be a string or an array of text parts (null only with tool_calls)"},
    {R"([{"role": "user", "content": 5}])", "null", "{}",
     "messages[0].content must be a string or an array of text parts, got a number"},
    {R"([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}}]}])",
     "null", "{}", "messages[0].content[1].type is 'image_url' but only 'text' parts are supported"},
    {R"([{"role": "user", "content": [{"type": "text"}]}])", "null", "{}", "messages[0].content[0].text is required"},
    {R"([{"role": "user", "content": ["a"]}])", "null", "{}", "messages[0].content[0] must be an object, got a string"},
    {R"([{"role": "user", "content": "x", "name": 3}])", "null", "{}", "messages[0].name must be a string, got 3"},
    {R"([{"role": "user", "content": "x", "tool_calls": []}])", "null", "{}",
     "messages[0].tool_calls is only allowed on assistant"},
    {R"([{"role": "assistant", "content": "x", "tool_calls": {}}])", "null", "{}",
     "messages[0].tool_calls must be an array, got an object"},
    {R"([{"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}])",
     "null", "{}", "messages[0].tool_calls[0].id is required"},
    {R"([{"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "code", "function": {"name": "f", "arguments": "{}"}}]}])",
     "null", "{}", "messages[0].tool_calls[0].type is 'code' but must be one of function"},
    {R"([{"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function"}]}])", "null", "{}",
     "messages[0].tool_calls[0].function is required"},
    {R"([{"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "", "arguments": "{}"}}]}])",
     "null", "{}", "messages[0].tool_calls[0].function.name must not be empty"},
    {R"([{"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{oops"}}]}])",
     "null", "{}", "messages[0].tool_calls[0].function.arguments is '{oops', which is not valid JSON"},
    {R"([{"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "[1]"}}]}])",
     "null", "{}", "messages[0].tool_calls[0].function.arguments is '[1]' but must encode a JSON object"},
    {R"([{"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f"}}]}])",
     "null", "{}", "messages[0].tool_calls[0].function.arguments is required"},
    {R"([{"role": "user", "content": "x", "reasoning_content": "r"}])", "null", "{}",
     "messages[0].reasoning_content is only allowed on assistant"},
    {R"([{"role": "tool", "content": "x"}])", "null", "{}", "messages[0].tool_call_id is required"},
    {R"([{"role": "user", "content": "x"}])", R"({"type": "function"})", "{}",
     "tools must be an array or null, got an object"},
    {R"([{"role": "user", "content": "x"}])", R"([{"type": "retrieval", "function": {"name": "f"}}])", "{}",
     "tools[0].type is 'retrieval' but must be one of function"},
    {R"([{"role": "user", "content": "x"}])", R"([{"type": "function"}])", "{}", "tools[0].function is required"},
    {R"([{"role": "user", "content": "x"}])", R"([{"type": "function", "function": {"name": ""}}])", "{}",
     "tools[0].function.name must not be empty"},
    {R"([{"role": "user", "content": "x"}])", R"([{"type": "function", "function": {"name": "f", "parameters": "x"}}])",
     "{}", "tools[0].function.parameters must be a JSON Schema object, got a string"},
    {R"([{"role": "user", "content": "x"}])", "null", R"({"enable_thinking": "no"})",
     "chat_template_kwargs.enable_thinking must be a boolean, got a string"},
    {R"([{"role": "user", "content": "x"}])", "null", R"({"messages": []})",
     "chat_template_kwargs.messages is reserved"},
    {R"([{"role": "user", "content": "x"}])", "null", "[1]", "chat_template_kwargs must be an object, got an array"},
};

TEST(RenderChat, ValidationErrorsNameTheField) {
  const ChatTemplate tmpl = parse_template("{% for m in messages %}{{ m.content }}{% endfor %}");
  for (const BadInput& bad : kBadInputs) {
    SCOPED_TRACE(bad.messages);
    ChatRenderInput in;
    in.messages = Json::parse(bad.messages);
    in.tools = Json::parse(bad.tools);
    in.template_kwargs = Json::parse(bad.kwargs);
    auto r = render_chat(tmpl, {}, in, "", "");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find(bad.expected), std::string::npos) << r.error().message;
  }
}

TEST(RenderChat, OnlyKnownFieldsReachTheTemplate) {
  const ChatTemplate tmpl = parse_template("{% for m in messages %}{{ m | tojson }}{% endfor %}");
  ChatRenderInput in;
  in.messages = Json::parse(R"([{"role": "assistant", "extra": 1, "content": null, "tool_calls": [
      {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{\"b\":1,\"a\":[2]}"}}]}])");
  auto r = render_chat(tmpl, {}, in, "", "");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->prompt,
            "{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"id\": \"c\", \"type\": \"function\", "
            "\"function\": {\"name\": \"f\", \"arguments\": {\"b\": 1, \"a\": [2]}}}]}");
}

// ---------------------------------------------------------------------------------------------
// ChatOutputParser

struct Parsed {
  std::vector<ChatDelta> deltas;
  Json message;
};

Parsed parse_pieces(ChatFormat format, const RenderedChat& rendered, bool tools,
                    const std::vector<std::string>& pieces) {
  ChatOutputParser p(format, rendered, tools);
  Parsed out;
  for (const std::string& piece : pieces) p.feed(piece, &out.deltas);
  p.finish(&out.deltas);
  out.message = p.message();
  EXPECT_EQ(p.has_tool_calls(), out.message.contains("tool_calls"));
  return out;
}

// Checks that the deltas concatenate to the message and returns the message with the tool ids
// replaced by "ID" (after checking they look like "call_..." and are unique).
Json check_deltas(const Parsed& parsed) {
  std::string content, reasoning;
  Json calls = Json::array();
  std::set<std::string> ids;
  for (const ChatDelta& d : parsed.deltas) {
    switch (d.kind) {
      case ChatDelta::Kind::kContent:
        EXPECT_FALSE(d.text.empty());
        content += d.text;
        break;
      case ChatDelta::Kind::kReasoning:
        EXPECT_FALSE(d.text.empty());
        reasoning += d.text;
        break;
      case ChatDelta::Kind::kToolCall:
        if (d.tool_index == static_cast<int>(calls.size())) {  // first delta of a new call
          EXPECT_EQ(d.tool_id.rfind("call_", 0), 0u) << d.tool_id;
          EXPECT_TRUE(ids.insert(d.tool_id).second) << "duplicate id " << d.tool_id;
          EXPECT_FALSE(d.tool_name.empty());
          calls.push_back(
              {{"id", d.tool_id}, {"type", "function"}, {"function", {{"name", d.tool_name}, {"arguments", ""}}}});
        } else {
          EXPECT_EQ(d.tool_index, static_cast<int>(calls.size()) - 1);
          EXPECT_TRUE(d.tool_id.empty());
        }
        if (!calls.empty()) {
          calls.back()["function"]["arguments"] =
              calls.back()["function"]["arguments"].get<std::string>() + d.tool_arguments;
        }
        break;
    }
  }
  const Json& m = parsed.message;
  EXPECT_EQ(m["role"], "assistant");
  if (m["content"].is_null()) {
    EXPECT_TRUE(content.empty());
    EXPECT_TRUE(m.contains("tool_calls"));
  } else {
    EXPECT_EQ(m["content"].get<std::string>(), content);
  }
  EXPECT_EQ(m.contains("reasoning_content") ? m["reasoning_content"].get<std::string>() : "", reasoning);
  EXPECT_EQ(m.contains("tool_calls") ? m["tool_calls"] : Json::array(), calls);
  Json normalised = m;
  if (normalised.contains("tool_calls")) {
    for (Json& c : normalised["tool_calls"]) c["id"] = "ID";
  }
  return normalised;
}

// Feeds `text` whole, byte by byte, and cut at every one and every two positions; every way
// must give `expected` (with tool ids replaced by "ID").
void expect_all_splits(ChatFormat format, const RenderedChat& rendered, bool tools, const std::string& text,
                       const Json& expected) {
  SCOPED_TRACE(text);
  const size_t n = text.size();
  {
    const Json got = check_deltas(parse_pieces(format, rendered, tools, {text}));
    ASSERT_EQ(got, expected) << got.dump();
  }
  {
    std::vector<std::string> bytes;
    for (char c : text) bytes.emplace_back(1, c);
    ASSERT_EQ(check_deltas(parse_pieces(format, rendered, tools, bytes)), expected) << "byte by byte";
  }
  for (size_t i = 0; i <= n; ++i) {
    for (size_t j = i; j <= n; ++j) {
      const Json got = check_deltas(
          parse_pieces(format, rendered, tools, {text.substr(0, i), text.substr(i, j - i), text.substr(j)}));
      ASSERT_EQ(got, expected) << "cut at " << i << " and " << j << ": " << got.dump();
    }
  }
}

// Whole and byte by byte only: for long texts whose point is the values, not the cut positions.
void expect_whole_and_bytes(ChatFormat format, const RenderedChat& rendered, bool tools, const std::string& text,
                            const Json& expected) {
  SCOPED_TRACE(text);
  ASSERT_EQ(check_deltas(parse_pieces(format, rendered, tools, {text})), expected);
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  ASSERT_EQ(check_deltas(parse_pieces(format, rendered, tools, bytes)), expected) << "byte by byte";
}

Json msg(const char* json) { return Json::parse(json); }

const ChatFormat kQwen{ToolCallFormat::kHermes, true};
const ChatFormat kLlama{ToolCallFormat::kLlama3, false};
const RenderedChat kThinking{"", false, true};
const RenderedChat kNoThinking{"", false, false};
const RenderedChat kOpenThink{"", true, true};

TEST(ChatOutputParser, ContentOnly) {
  expect_all_splits({}, kNoThinking, false, "Hello, wörld! 🙂 <b>x</b>",
                    msg(R"({"role": "assistant", "content": "Hello, wörld! 🙂 <b>x</b>"})"));
  expect_all_splits(kQwen, kNoThinking, false, "", msg(R"({"role": "assistant", "content": ""})"));
}

TEST(ChatOutputParser, ThinkThenContent) {
  expect_all_splits(kQwen, kThinking, false, "<think>\nLet me add: 2+2=4.\n</think>\n\nThe answer is 4.",
                    msg(R"({"role": "assistant", "content": "The answer is 4.",
                            "reasoning_content": "Let me add: 2+2=4."})"));
  // Whitespace inside the reasoning survives; an empty think block yields no reasoning.
  expect_all_splits(kQwen, kThinking, false, "<think>\na \n\n b\n</think>\n\n x \n",
                    msg(R"({"role": "assistant", "content": "x \n", "reasoning_content": "a \n\n b"})"));
  expect_all_splits(kQwen, kNoThinking, false, "<think>\n\n</think>\n\nHi",
                    msg(R"({"role": "assistant", "content": "Hi"})"));
}

TEST(ChatOutputParser, ThinkMarkersOnlyAtStart) {
  expect_all_splits(kQwen, kThinking, false, "I <think> therefore </think> I am",
                    msg(R"({"role": "assistant", "content": "I <think> therefore </think> I am"})"));
  expect_all_splits(kQwen, kThinking, false, "<thin>k", msg(R"({"role": "assistant", "content": "<thin>k"})"));
  expect_all_splits(kQwen, kThinking, false, "<thi", msg(R"({"role": "assistant", "content": "<thi"})"));
}

TEST(ChatOutputParser, UnterminatedThinkIsReasoning) {
  expect_all_splits(kQwen, kThinking, false, "<think>\nstill thinking </thi",
                    msg(R"({"role": "assistant", "content": "", "reasoning_content": "still thinking </thi"})"));
}

TEST(ChatOutputParser, ThinkingOpenInPrompt) {
  expect_all_splits({}, kOpenThink, false, "\nplan\n</think>\n\nanswer",
                    msg(R"({"role": "assistant", "content": "answer", "reasoning_content": "plan"})"));
  expect_all_splits({}, kOpenThink, false, "never closed",
                    msg(R"({"role": "assistant", "content": "", "reasoning_content": "never closed"})"));
}

TEST(ChatOutputParser, HermesSingleCall) {
  expect_all_splits(kQwen, kNoThinking, true,
                    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
                    msg(R"({"role": "assistant", "content": null, "tool_calls": [{"id": "ID", "type": "function",
                            "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]})"));
}

TEST(ChatOutputParser, HermesThinkContentAndSeveralCalls) {
  expect_all_splits(
      kQwen, kThinking, true,
      "<think>\nNeed two.\n</think>\n\nChecking both.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": [1, "
      "\"}\"]}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
      msg(R"({"role": "assistant", "content": "Checking both.", "reasoning_content": "Need two.",
              "tool_calls": [
                {"id": "ID", "type": "function", "function": {"name": "a", "arguments": "{\"x\":[1,\"}\"]}"}},
                {"id": "ID", "type": "function", "function": {"name": "b", "arguments": "{}"}}]})"));
}

TEST(ChatOutputParser, HermesArgumentsAsStringOrMissing) {
  expect_all_splits(kQwen, kNoThinking, true,
                    "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"k\\\": 1}\"}</tool_call>"
                    "<tool_call>{\"name\": \"g\"}</tool_call>",
                    msg(R"({"role": "assistant", "content": null, "tool_calls": [
                          {"id": "ID", "type": "function", "function": {"name": "f", "arguments": "{\"k\":1}"}},
                          {"id": "ID", "type": "function", "function": {"name": "g", "arguments": "{}"}}]})"));
}

TEST(ChatOutputParser, MalformedHermesCallFallsBackToContent) {
  expect_all_splits(kQwen, kNoThinking, true,
                    "Try:\n<tool_call>\n{\"name\": \"f\", \"arguments\": {oops}}\n</tool_call> done",
                    msg(R"({"role": "assistant",
                            "content": "Try:\n<tool_call>\n{\"name\": \"f\", \"arguments\": {oops}}\n</tool_call> done"})"));
  expect_all_splits(kQwen, kNoThinking, true, "<tool_call>\n{\"arguments\": {}}\n</tool_call>",
                    msg(R"({"role": "assistant", "content": "<tool_call>\n{\"arguments\": {}}\n</tool_call>"})"));
}

TEST(ChatOutputParser, UnterminatedHermesCall) {
  // Cut off inside the JSON: the text comes back as content.
  expect_all_splits(kQwen, kNoThinking, true, "Hm <tool_call>\n{\"name\": \"f\", \"argu",
                    msg(R"({"role": "assistant", "content": "Hm <tool_call>\n{\"name\": \"f\", \"argu"})"));
  // Complete JSON but no closing tag (generation stopped at the end of turn): still a call.
  expect_all_splits(kQwen, kNoThinking, true, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n",
                    msg(R"({"role": "assistant", "content": null, "tool_calls": [
                          {"id": "ID", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]})"));
  // A partial opening tag at the end is content.
  expect_all_splits(kQwen, kNoThinking, true, "Hello <tool_c",
                    msg(R"({"role": "assistant", "content": "Hello <tool_c"})"));
}

TEST(ChatOutputParser, NoToolsRequestedKeepsToolCallTextAsContent) {
  const char* text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
  Json expected = {{"role", "assistant"}, {"content", text}};
  expect_all_splits(kQwen, kNoThinking, false, text, expected);
  const char* llama = "{\"name\": \"f\", \"parameters\": {}}";
  expect_all_splits(kLlama, kNoThinking, false, llama, Json{{"role", "assistant"}, {"content", llama}});
}

TEST(ChatOutputParser, Llama3JsonCall) {
  expect_all_splits(kLlama, kNoThinking, true,
                    "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 2}}",
                    msg(R"({"role": "assistant", "content": null, "tool_calls": [{"id": "ID", "type": "function",
                            "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\",\"days\":2}"}}]})"));
  expect_all_splits(kLlama, kNoThinking, true,
                    "<|python_tag|>{\"type\": \"function\", \"name\": \"f\", \"parameters\": {}}; {\"name\": \"g\", "
                    "\"parameters\": {\"q\": \"a;b\"}}",
                    msg(R"({"role": "assistant", "content": null, "tool_calls": [
                          {"id": "ID", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                          {"id": "ID", "type": "function", "function": {"name": "g", "arguments": "{\"q\":\"a;b\"}"}}]})"));
}

TEST(ChatOutputParser, Llama3NonCallsAreContent) {
  expect_all_splits(kLlama, kNoThinking, true, "{\"answer\": 4}",
                    msg(R"({"role": "assistant", "content": "{\"answer\": 4}"})"));
  expect_all_splits(kLlama, kNoThinking, true, "The call {\"name\": \"f\", \"parameters\": {}}",
                    msg(R"({"role": "assistant", "content": "The call {\"name\": \"f\", \"parameters\": {}}"})"));
  expect_all_splits(kLlama, kNoThinking, true, "{\"name\": \"f\", \"parameters\": {} trailing",
                    msg(R"({"role": "assistant", "content": "{\"name\": \"f\", \"parameters\": {} trailing"})"));
  expect_all_splits(kLlama, kNoThinking, true, "<|python_tag|>brave_search.call(query=\"x\")",
                    msg(R"j({"role": "assistant", "content": "<|python_tag|>brave_search.call(query=\"x\")"})j"));
}

TEST(ChatOutputParser, HoldsBackOnlyWhatCouldBeAMarker) {
  ChatOutputParser p(kQwen, kNoThinking, true);
  std::vector<ChatDelta> d;
  p.feed("Hello <tool", &d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].text, "Hello");  // " <tool" is held: it may become a call
  p.feed("box> ok", &d);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].text, " <toolbox> ok");
  // A split UTF-8 sequence is held until it completes.
  ChatOutputParser q({}, kNoThinking, false);
  std::vector<ChatDelta> e;
  const std::string smile = "\xF0\x9F\x99\x82";
  q.feed("a" + smile.substr(0, 2), &e);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].text, "a");
  q.feed(smile.substr(2), &e);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1].text, smile);
}

// ---------------------------------------------------------------------------------------------
// Qwen3.5: <think> opened by the prompt, XML tool calls.

const ChatFormat kQwen35{ToolCallFormat::kQwen35Xml, true};

RenderedChat qwen35_rendered(bool open_think) {
  RenderedChat r{"", open_think, true};
  r.tool_schemas = Json::parse(R"({"get_weather": {"type": "object", "properties": {
      "location": {"type": "string"}, "zip": {"type": "string"}, "days": {"type": "integer"}}}})");
  return r;
}

TEST(ChatOutputParser, Qwen35ThinkingContentAndXmlCall) {
  expect_all_splits(
      kQwen35, qwen35_rendered(true), true,
      "\nNeed the tool.\n</think>\n\nLet me check.\n\n<tool_call>\n<function=get_weather>\n<parameter=location>\n"
      "Paris\n</parameter>\n<parameter=days>\n2\n</parameter>\n<parameter=zip>\n75001\n</parameter>\n</function>\n"
      "</tool_call>",
      msg(R"({"role": "assistant", "content": "Let me check.", "reasoning_content": "Need the tool.",
              "tool_calls": [{"id": "ID", "type": "function", "function": {"name": "get_weather",
                "arguments": "{\"location\":\"Paris\",\"days\":2,\"zip\":\"75001\"}"}}]})"));
}

TEST(ChatOutputParser, Qwen35ValuesWithoutSchemaAndSeveralCalls) {
  // No schema for "f": JSON-looking values are JSON (and Python's True, which the template's
  // `| string` writes), the rest strings; a multi-line value keeps its inner newlines.
  expect_whole_and_bytes(
      kQwen35, qwen35_rendered(false), true,
      "<tool_call>\n<function=f>\n<parameter=n>\n-1.5\n</parameter>\n<parameter=flag>\nTrue\n</parameter>\n"
      "<parameter=obj>\n{\"a\": [1, 2]}\n</parameter>\n<parameter=code>\nx = 1\n\ny = <b>\n</parameter>\n</function>\n"
      "</tool_call>\n<tool_call>\n<function=g>\n</function>\n</tool_call>",
      msg(R"({"role": "assistant", "content": null, "tool_calls": [
            {"id": "ID", "type": "function", "function": {"name": "f",
              "arguments": "{\"n\":-1.5,\"flag\":true,\"obj\":{\"a\":[1,2]},\"code\":\"x = 1\\n\\ny = <b>\"}"}},
            {"id": "ID", "type": "function", "function": {"name": "g", "arguments": "{}"}}]})"));
  expect_all_splits(kQwen35, qwen35_rendered(false), true,
                    "<tool_call>\n<function=f>\n<parameter=n>\n1\n</parameter>\n</function>\n</tool_call>\n"
                    "<tool_call>\n<function=g>\n</function>\n</tool_call>",
                    msg(R"({"role": "assistant", "content": null, "tool_calls": [
                          {"id": "ID", "type": "function", "function": {"name": "f", "arguments": "{\"n\":1}"}},
                          {"id": "ID", "type": "function", "function": {"name": "g", "arguments": "{}"}}]})"));
}

TEST(ChatOutputParser, Qwen35MalformedOutputDegradesToContent) {
  // Missing </function>, an empty function name, text after </function>, an unclosed parameter:
  // the block comes back verbatim as content.
  for (const char* text : {
           "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</tool_call>",
           "<tool_call>\n<function=>\n</function>\n</tool_call>",
           "<tool_call>\n<function=f>\n</function>\nextra\n</tool_call>",
           "<tool_call>\n<function=f>\n<parameter=a>\n1\n</function>\n</tool_call>",
           "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
       }) {
    expect_all_splits(kQwen35, qwen35_rendered(false), true, text, Json{{"role", "assistant"}, {"content", text}});
  }
  // Cut off inside the call: content. Cut off after </function> (end of turn): still a call.
  expect_all_splits(kQwen35, qwen35_rendered(false), true, "Hm\n<tool_call>\n<function=f>\n<parameter=a",
                    msg(R"({"role": "assistant", "content": "Hm\n<tool_call>\n<function=f>\n<parameter=a"})"));
  expect_all_splits(kQwen35, qwen35_rendered(false), true, "<tool_call>\n<function=f>\n</function>\n",
                    msg(R"({"role": "assistant", "content": null, "tool_calls": [
                          {"id": "ID", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})"));
  // Unterminated thinking is reasoning; without tools requested a call is content.
  expect_all_splits(kQwen35, qwen35_rendered(true), true, "\nstill thinking <tool_call>",
                    msg(R"({"role": "assistant", "content": "", "reasoning_content": "still thinking <tool_call>"})"));
  const char* call = "<tool_call>\n<function=f>\n</function>\n</tool_call>";
  expect_all_splits(kQwen35, qwen35_rendered(false), false, call, Json{{"role", "assistant"}, {"content", call}});
}

// ---------------------------------------------------------------------------------------------
// Gemma 4: <|channel>thought ... <channel|> and <|tool_call>call:NAME{..}<tool_call|>.

const ChatFormat kGemma4{ToolCallFormat::kGemma4, true, ThinkingSyntax::kGemma4Channel};

TEST(ChatOutputParser, Gemma4ThoughtAndToolCall) {
  // As the template renders an assistant turn with reasoning and a call (chat-gemma4.json).
  expect_all_splits(kGemma4, kThinking, true,
                    "<|channel>thought\nI should call "
                    "get_weather.\n<channel|><|tool_call>call:get_weather{location:<|\"|>Paris<|\"|>,"
                    "unit:<|\"|>celsius<|\"|>}<tool_call|>",
                    msg(R"({"role": "assistant", "content": null, "reasoning_content": "I should call get_weather.",
              "tool_calls": [{"id": "ID", "type": "function", "function": {"name": "get_weather",
                "arguments": "{\"location\":\"Paris\",\"unit\":\"celsius\"}"}}]})"));
  expect_all_splits(kGemma4, kThinking, false, "<|channel>thought\nplan<channel|>The answer is 4.",
                    msg(R"({"role": "assistant", "content": "The answer is 4.", "reasoning_content": "plan"})"));
  expect_all_splits(kGemma4, kNoThinking, false, "The answer is 4.",
                    msg(R"({"role": "assistant", "content": "The answer is 4."})"));
}

// Gemma 4 may write another (often empty) thought block or a stray <channel|> after content:
// they are syntax, not content (as llama.cpp's Gemma 4 parser); text around them stays content.
TEST(ChatOutputParser, Gemma4LaterThoughtBlocksAndStrayChannelClose) {
  expect_all_splits(kGemma4, kNoThinking, false, "It is 4.\n<|channel>thought\n<channel|>",
                    msg(R"({"role": "assistant", "content": "It is 4."})"));
  expect_all_splits(kGemma4, kNoThinking, false, "It is 4.<channel|>\nreally",
                    msg(R"({"role": "assistant", "content": "It is 4.really"})"));
  expect_all_splits(kGemma4, kThinking, true,
                    "<|channel>thought\na<channel|>Let me look.<|channel>thought\nb<channel|>"
                    "<|tool_call>call:f{}<tool_call|>",
                    msg(R"({"role": "assistant", "content": "Let me look.", "reasoning_content": "a\nb",
                            "tool_calls": [{"id": "ID", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})"));
  // Partial markers at the end are content.
  expect_all_splits(kGemma4, kNoThinking, false, "x <|chan", msg(R"({"role": "assistant", "content": "x <|chan"})"));
}

TEST(ChatOutputParser, Gemma4ArgumentValues) {
  expect_whole_and_bytes(kGemma4, kNoThinking, true,
                         "Sure.<|tool_call>call:f{a:1,b:-2.5e3,c:true,d:null,e:[1, "
                         "<|\"|>x,y}:<|\"|>],f:{g:<|\"|>h<|\"|>,<|\"|>k k<|\"|>:[]},"
                         "h:false}<tool_call|><|tool_call>call:g{}<tool_call|>",
                         msg(R"({"role": "assistant", "content": "Sure.", "tool_calls": [
            {"id": "ID", "type": "function", "function": {"name": "f",
              "arguments": "{\"a\":1,\"b\":-2500.0,\"c\":true,\"d\":null,\"e\":[1,\"x,y}:\"],\"f\":{\"g\":\"h\",\"k k\":[]},\"h\":false}"}},
            {"id": "ID", "type": "function", "function": {"name": "g", "arguments": "{}"}}]})"));
  expect_all_splits(kGemma4, kNoThinking, true, "Ok.<|tool_call>call:f{a:<|\"|>x<|\"|>}<tool_call|>",
                    msg(R"({"role": "assistant", "content": "Ok.", "tool_calls": [
                          {"id": "ID", "type": "function", "function": {"name": "f", "arguments": "{\"a\":\"x\"}"}}]})"));
}

TEST(ChatOutputParser, Gemma4MalformedOutputDegradesToContent) {
  std::string deep = "<|tool_call>call:f{a:";
  for (int i = 0; i < kMaxToolCallDepth + 2; ++i) deep += "[";
  for (int i = 0; i < kMaxToolCallDepth + 2; ++i) deep += "]";
  deep += "}<tool_call|>";
  for (const std::string& text : {
           std::string("<|tool_call>call:f{a:<|\"|>x}<tool_call|>"),     // unterminated string
           std::string("<|tool_call>call:f{a:1} trailing<tool_call|>"),  // text after the arguments
           std::string("<|tool_call>call:f{a:1,}<tool_call|>"),          // dangling comma
           std::string("<|tool_call>call:f{a 1}<tool_call|>"),           // no ':'
           std::string("<|tool_call>call:{a:1}<tool_call|>"),            // no name
           std::string("<|tool_call>f{a:1}<tool_call|>"),                // no "call:"
           std::string("<|tool_call>call:f{a:[1,2}<tool_call|>"),        // unbalanced
           std::string("<|tool_call>call:f{a:1e}<tool_call|>"),          // bad number
           deep,                                                         // nesting beyond the limit
       }) {
    expect_all_splits(kGemma4, kNoThinking, true, text, Json{{"role", "assistant"}, {"content", text}});
  }
  // Cut off inside a call: content. Unterminated thought: reasoning.
  expect_all_splits(kGemma4, kNoThinking, true, "Ok <|tool_call>call:f{a:<|\"|>Par",
                    msg(R"({"role": "assistant", "content": "Ok <|tool_call>call:f{a:<|\"|>Par"})"));
  expect_all_splits(kGemma4, kThinking, true, "<|channel>thought\nhmm <channel",
                    msg(R"({"role": "assistant", "content": "", "reasoning_content": "hmm <channel"})"));
  // Complete call whose closing marker never came (generation stopped): still a call.
  expect_all_splits(kGemma4, kNoThinking, true, "<|tool_call>call:f{x:2}",
                    msg(R"({"role": "assistant", "content": null, "tool_calls": [
                          {"id": "ID", "type": "function", "function": {"name": "f", "arguments": "{\"x\":2}"}}]})"));
  // No tools requested: the call is content.
  const char* call = "<|tool_call>call:f{}<tool_call|>";
  expect_all_splits(kGemma4, kNoThinking, false, call, Json{{"role", "assistant"}, {"content", call}});
}

// What the real template writes for an assistant tool call, the parser reads back as the same
// call: arguments of every JSON type survive Qwen3.5's XML (typed by the schema, or by
// JSON/Python literals without one) and Gemma 4's syntax.
void expect_template_round_trip(const std::string& model, const std::string& open, const std::string& close) {
  SCOPED_TRACE(model);
  const std::string source = template_source(model);
  const ChatTemplate tmpl = parse_template(source);
  const ChatFormat format = detect_chat_format(source);
  const Json arguments = Json::parse(R"({"query": "ssd \"cache\"\nnext line", "code": "42", "limit": 3,
      "score": -0.5, "exact": true, "off": false, "none": null, "tags": ["a", "b"],
      "filters": {"year": 2024, "lang": "en"}})");
  ChatRenderInput in;
  in.messages = Json::array();
  in.messages.push_back({{"role", "user"}, {"content", "Find it."}});
  in.messages.push_back(
      {{"role", "assistant"},
       {"content", nullptr},
       {"tool_calls",
        Json::array(
            {{{"id", "c1"}, {"type", "function"}, {"function", {{"name", "search"}, {"arguments", arguments.dump()}}}},
             {{"id", "c2"}, {"type", "function"}, {"function", {{"name", "now"}, {"arguments", "{}"}}}}})}});
  in.tools = Json::parse(R"([{"type": "function", "function": {"name": "search", "parameters": {"type": "object",
      "properties": {"query": {"type": "string"}, "code": {"type": "string"}, "limit": {"type": "integer"}}}}},
      {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}])");
  in.add_generation_prompt = false;
  auto r = render_chat(tmpl, format, in, "", "");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const size_t begin = r->prompt.find(open, r->prompt.find("Find it."));  // past the system prompt's example
  const size_t end = r->prompt.rfind(close);
  ASSERT_NE(begin, std::string::npos) << r->prompt;
  ASSERT_NE(end, std::string::npos) << r->prompt;
  const std::string written = r->prompt.substr(begin, end + close.size() - begin);
  RenderedChat rendered;
  rendered.tool_schemas = r->tool_schemas;
  const Json got = check_deltas(parse_pieces(format, rendered, true, {written}));
  ASSERT_TRUE(got.contains("tool_calls")) << written << "\n" << got.dump();
  ASSERT_EQ(got["tool_calls"].size(), 2u) << written;
  EXPECT_EQ(got["tool_calls"][0]["function"]["name"], "search");
  const Json parsed = Json::parse(got["tool_calls"][0]["function"]["arguments"].get<std::string>());
  // Gemma 4's template sorts keys: compare as unordered JSON.
  EXPECT_EQ(nlohmann::json(parsed), nlohmann::json(arguments)) << written;
  EXPECT_EQ(got["tool_calls"][1]["function"]["name"], "now");
  EXPECT_EQ(got["tool_calls"][1]["function"]["arguments"], "{}");
  EXPECT_TRUE(got["content"].is_null());
}

TEST(ChatOutputParser, Qwen35ReadsBackWhatItsTemplateWrites) {
  expect_template_round_trip("qwen35", "<tool_call>", "</tool_call>");
}

TEST(ChatOutputParser, Gemma4ReadsBackWhatItsTemplateWrites) {
  expect_template_round_trip("gemma4", "<|tool_call>", "<tool_call|>");
}

TEST(ToolCallSyntax, Gemma4NestingLimit) {
  auto nested = [](int n_arrays) {
    return "call:f{a:" + std::string(size_t(n_arrays), '[') + std::string(size_t(n_arrays), ']') + "}";
  };
  EXPECT_TRUE(parse_gemma4_call(nested(kMaxToolCallDepth - 1)).has_value());  // the call's {} is level 1
  EXPECT_FALSE(parse_gemma4_call(nested(kMaxToolCallDepth)).has_value());
  EXPECT_FALSE(parse_gemma4_call(nested(100000)).has_value());  // no stack overflow
}

TEST(ChatOutputParser, ToolIdsDifferAcrossParsers) {
  const std::string text = "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>";
  const Json a = parse_pieces(kQwen, kNoThinking, true, {text}).message;
  const Json b = parse_pieces(kQwen, kNoThinking, true, {text}).message;
  EXPECT_NE(a["tool_calls"][0]["id"], b["tool_calls"][0]["id"]);
}

}  // namespace
}  // namespace sniper::server
