// SPDX-License-Identifier: MIT
// Ollama request parsing (no model): defaults, options, keep_alive forms, message conversion,
// format -> grammar, and clear 400s for bad JSON and wrong types; the OpenAI response_format
// forms that share the structured-output path.
#include "server/ollama_protocol.h"

#include <gtest/gtest.h>

#include <cmath>

#include "server/keep_alive.h"
#include "server/structured_output.h"

namespace sniper::server {
namespace {

std::optional<ApiError> chat(const std::string& body, OllamaRequest* out = nullptr) {
  Json j;
  if (auto e = parse_body(body, &j)) return e;
  OllamaRequest r;
  auto e = parse_ollama_chat(j, &r);
  if (out != nullptr) *out = r;
  return e;
}

std::optional<ApiError> generate(const std::string& body, OllamaRequest* out = nullptr) {
  Json j;
  if (auto e = parse_body(body, &j)) return e;
  OllamaRequest r;
  auto e = parse_ollama_generate(j, &r);
  if (out != nullptr) *out = r;
  return e;
}

TEST(OllamaProtocol, DefaultsFollowOllama) {
  OllamaRequest r;
  ASSERT_FALSE(chat(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})", &r));
  EXPECT_EQ(r.model, "m");
  EXPECT_TRUE(r.stream);  // Ollama streams unless told not to
  EXPECT_FALSE(r.think.has_value());
  EXPECT_FALSE(r.keep_alive.has_value());
  EXPECT_FLOAT_EQ(r.params.sampler.temperature, 0.8f);
  EXPECT_EQ(r.params.sampler.top_k, 40);
  EXPECT_FLOAT_EQ(r.params.sampler.top_p, 0.9f);
  EXPECT_FLOAT_EQ(r.params.sampler.repeat_penalty, 1.1f);
  EXPECT_EQ(r.params.max_tokens, -1);
  EXPECT_EQ(r.params.grammar, nullptr);
  EXPECT_TRUE(r.params.sampler.validate().ok());
  EXPECT_EQ(r.messages.size(), 1u);
}

TEST(OllamaProtocol, OptionsThinkKeepAliveAndFormat) {
  OllamaRequest r;
  ASSERT_FALSE(chat(R"({"model":"m","stream":false,"think":false,"keep_alive":"1h30m","format":"json",
                        "options":{"temperature":0,"top_p":0.5,"top_k":3,"seed":-5,"num_predict":9,"stop":["a","b"],
                        "num_ctx":8192,"num_thread":4,"mirostat":0},
                        "messages":[{"role":"user","content":"hi"}]})",
                    &r));
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.think, false);
  EXPECT_DOUBLE_EQ(*r.keep_alive, 5400.0);
  EXPECT_NE(r.params.grammar, nullptr);
  EXPECT_FLOAT_EQ(r.params.sampler.temperature, 0.0f);
  EXPECT_FLOAT_EQ(r.params.sampler.top_p, 0.5f);
  EXPECT_EQ(r.params.sampler.top_k, 3);
  EXPECT_EQ(r.params.sampler.seed, static_cast<uint64_t>(-5));
  EXPECT_EQ(r.params.max_tokens, 9);
  EXPECT_EQ(r.params.stop, (std::vector<std::string>{"a", "b"}));
  ASSERT_FALSE(generate(R"({"model":"m","prompt":"p","system":"s","raw":true,"options":{"num_predict":-2},
                            "format":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}})",
                        &r));
  EXPECT_EQ(r.prompt, "p");
  EXPECT_EQ(r.system, "s");
  EXPECT_TRUE(r.raw);
  EXPECT_EQ(r.params.max_tokens, -1);
  ASSERT_NE(r.params.grammar, nullptr);
  GrammarMatcher m(r.params.grammar);
  EXPECT_TRUE(m.accept(R"({"a": 12})") && m.is_complete());
}

TEST(OllamaProtocol, KeepAliveForms) {
  struct Case {
    const char* json;
    double seconds;
  } cases[] = {{"300", 300},
               {"0", 0},
               {"-1", kKeepAliveForever},
               {"\"5m\"", 300},
               {"\"10s\"", 10},
               {"\"1h\"", 3600},
               {"\"250ms\"", 0.25},
               {"\"-1m\"", kKeepAliveForever},
               {"\"0\"", 0},
               {"\"3600\"", 3600},
               {"1.5", 1.5}};
  for (const Case& c : cases) {
    auto v = parse_keep_alive(Json::parse(c.json));
    ASSERT_TRUE(v.ok()) << c.json << ": " << v.error().message;
    EXPECT_DOUBLE_EQ(*v, c.seconds) << c.json;
  }
  for (const char* bad : {"\"soon\"", "\"5x\"", "\"\"", "true", "[1]", "\"m5\"", "\"5m3\""}) {
    auto v = parse_keep_alive(Json::parse(bad));
    EXPECT_FALSE(v.ok()) << bad;
  }
}

TEST(OllamaProtocol, MessagesConvertToTheOpenAiShape) {
  OllamaRequest r;
  ASSERT_FALSE(chat(R"({"model":"m","messages":[
      {"role":"user","content":"weather?"},
      {"role":"assistant","content":"","thinking":"hmm","tool_calls":[{"function":{"name":"get","arguments":{"city":"Paris"}}}]},
      {"role":"tool","content":"sunny","tool_name":"get"}],
      "tools":[{"type":"function","function":{"name":"get","parameters":{"type":"object"}}}]})",
                    &r));
  ASSERT_EQ(r.messages.size(), 3u);
  const Json& a = r.messages[1];
  EXPECT_EQ(a["reasoning_content"], "hmm");
  EXPECT_EQ(a["tool_calls"][0]["function"]["name"], "get");
  EXPECT_EQ(a["tool_calls"][0]["function"]["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(r.messages[2]["tool_call_id"], "get");
  EXPECT_TRUE(r.tools.is_array());
  // Images become image parts before the text (server/media_input.h takes them out later).
  OllamaRequest with_image;
  ASSERT_FALSE(chat(R"({"model":"m","messages":[{"role":"user","content":"what?","images":["aGk="]}]})", &with_image));
  EXPECT_EQ(
      with_image.messages[0]["content"],
      Json::parse(
          R"([{"type":"image_url","image_url":{"url":"data:;base64,aGk="},)"
          R"("x-sniper-source":"messages[0].images[0]","x-sniper-api":"ollama"},{"type":"text","text":"what?"}])"));
  // And back: arguments as an object, reasoning as thinking.
  const Json back = ollama_message(
      Json{{"role", "assistant"},
           {"content", Json()},
           {"reasoning_content", "r"},
           {"tool_calls",
            Json::array({Json{
                {"id", "c"}, {"type", "function"}, {"function", Json{{"name", "f"}, {"arguments", R"({"x":1})"}}}}})}});
  EXPECT_EQ(back["content"], "");
  EXPECT_EQ(back["thinking"], "r");
  EXPECT_EQ(back["tool_calls"][0]["function"]["arguments"]["x"], 1);
}

TEST(OllamaProtocol, BadRequestsAreClear400s) {
  const std::string m = R"("model":"m","messages":[{"role":"user","content":"hi"}])";
  struct Case {
    std::string body;
    const char* needle;
  } cases[] = {
      {"{", "not valid JSON"},
      {"[]", "must be a JSON object"},
      {R"({"messages":[]})", "model is required"},
      {R"({"model":5,"messages":[]})", "model must be a string, got 5"},
      {"{" + m + R"(,"stream":"yes"})", "stream must be a boolean, got a string"},
      {"{" + m + R"(,"think":"maybe"})", "think must be a boolean"},
      {"{" + m + R"(,"options":[]})", "options must be an object, got an array"},
      {"{" + m + R"(,"options":{"temperature":"hot"}})", "options.temperature must be a number, got a string"},
      {"{" + m + R"(,"options":{"top_k":1.5}})", "options.top_k must be an integer, got 1.5"},
      {"{" + m + R"(,"options":{"num_predict":0}})", "options.num_predict is 0"},
      {"{" + m + R"(,"options":{"stop":[1]}})", "options.stop[0] must be a string, got a number"},
      {"{" + m + R"(,"keep_alive":"soon"})", "keep_alive is \"soon\""},
      {"{" + m + R"(,"format":"xml"})", "format is 'xml'"},
      {"{" + m + R"(,"format":{"type":"string","format":"date"}})", "the keyword 'format' is not supported"},
      {R"({"model":"m","messages":{}})", "messages must be an array, got an object"},
      {R"({"model":"m","messages":[{"role":"user","content":5}]})", "messages[0].content must be a string, got 5"},
      {R"({"model":"m","messages":[{"role":"user","content":"x","images":[42]}]})",
       "messages[0].images[0] must be a base64 string, got a number"},
      {R"({"model":"m","messages":[{"role":"user","content":"x","images":"aGk="}]})", "messages[0].images must be"},
      {R"({"model":"m","messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}]})",
       "arguments must be an object, got a string"},
  };
  for (const Case& c : cases) {
    auto e = chat(c.body);
    ASSERT_TRUE(e.has_value()) << c.body;
    EXPECT_EQ(e->status, 400) << c.body;
    EXPECT_NE(e->message.find(c.needle), std::string::npos) << c.body << " -> " << e->message;
  }
  for (const std::string body :
       {R"({"model":"m","prompt":5})", R"({"model":"m","prompt":"x","raw":1})",
        R"({"model":"m","prompt":"x","suffix":"y"})", R"({"model":"m","prompt":"x","context":[1,2]})",
        R"({"model":"m","prompt":"x","template":"{{ .Prompt }}"})"}) {
    auto e = generate(body);
    ASSERT_TRUE(e.has_value()) << body;
    EXPECT_EQ(e->status, 400);
  }
  EXPECT_EQ(ollama_error_json("boom"), Json::parse(R"({"error":"boom"})"));
}

TEST(StructuredOutput, OpenAiResponseFormats) {
  std::shared_ptr<const Grammar> g;
  EXPECT_FALSE(openai_response_format(Json::parse(R"({"type":"text"})"), &g));
  EXPECT_EQ(g, nullptr);
  EXPECT_FALSE(openai_response_format(Json::parse(R"({"type":"json_object"})"), &g));
  ASSERT_NE(g, nullptr);
  {
    GrammarMatcher m(g);
    EXPECT_TRUE(m.accept(R"({"k": [1, "x", null]})") && m.is_complete());
    GrammarMatcher m2(g);
    EXPECT_FALSE(m2.accept("[1]"));
  }
  g = nullptr;
  EXPECT_FALSE(openai_response_format(
      Json::parse(
          R"({"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":{"type":"array","items":{"type":"boolean"},"maxItems":1}}})"),
      &g));
  ASSERT_NE(g, nullptr);
  GrammarMatcher m(g);
  EXPECT_TRUE(m.accept("[true]") && m.is_complete());
  GrammarMatcher m3(g);
  EXPECT_FALSE(m3.accept("[true, false]"));
  auto e = openai_response_format(
      Json::parse(
          R"({"type":"json_schema","json_schema":{"schema":{"type":"object","properties":{"n":{"type":"number","minimum":1}}}}})"),
      &g);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->param, "response_format");
  EXPECT_NE(e->message.find("$.properties.n: the keyword 'minimum' is not supported"), std::string::npos) << e->message;
  EXPECT_TRUE(openai_response_format(Json::parse(R"({"type":"yaml"})"), &g).has_value());
  EXPECT_TRUE(openai_response_format(Json::parse(R"("json")"), &g).has_value());
}

}  // namespace
}  // namespace sniper::server
