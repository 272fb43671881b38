// SPDX-License-Identifier: MIT
// Request parsing and validation (no model): defaults, ranges, types, UTF-8, and the response
// formatters' wire format, tool calls and reasoning included.
#include "server/openai_protocol.h"

#include <gtest/gtest.h>

#include <cmath>

#include "server/response_formatter.h"

namespace sniper::server {
namespace {

std::optional<ApiError> chat(const std::string& body, ChatRequest* out = nullptr) {
  Json j;
  if (auto e = parse_body(body, &j)) return e;
  ChatRequest r;
  auto e = parse_chat_request(j, &r);
  if (out != nullptr) *out = r;
  return e;
}

TEST(OpenAiProtocol, DefaultsFollowOpenAi) {
  ChatRequest r;
  ASSERT_FALSE(chat(R"({"messages":[{"role":"user","content":"hi"}]})", &r));
  EXPECT_EQ(r.params.sampler.temperature, 1.0f);
  EXPECT_EQ(r.params.sampler.top_p, 1.0f);
  EXPECT_EQ(r.params.sampler.top_k, 0);
  EXPECT_EQ(r.params.sampler.min_p, 0.0f);
  EXPECT_EQ(r.params.max_tokens, -1);
  EXPECT_FALSE(r.params.stream);
  EXPECT_TRUE(r.params.sampler.validate().ok());
  ASSERT_FALSE(chat(R"({"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":7,"stop":"x","seed":-1,
                       "stream":true,"stream_options":{"include_usage":true},"top_k":5,"min_p":0.1,"logprobs":false,
                       "chat_template_kwargs":{"enable_thinking":false},"tool_choice":"auto","tools":[]})",
                    &r));
  EXPECT_EQ(r.params.max_tokens, 7);
  EXPECT_EQ(r.params.stop, std::vector<std::string>{"x"});
  EXPECT_TRUE(r.params.stream && r.params.include_usage);
  EXPECT_EQ(r.params.sampler.top_k, 5);
  EXPECT_EQ(r.template_kwargs["enable_thinking"], false);
}

TEST(OpenAiProtocol, RejectsBadValuesNamingTheField) {
  const std::string m = R"("messages":[{"role":"user","content":"hi"}])";
  struct Case {
    std::string body;
    const char* param;
  } cases[] = {
      {"{" + m + R"(,"temperature":"hot"})", "temperature"},
      {"{" + m + R"(,"temperature":2.5})", "temperature"},
      {"{" + m + R"(,"top_p":0})", "top_p"},
      {"{" + m + R"(,"top_p":1.5})", "top_p"},
      {"{" + m + R"(,"max_tokens":0})", "max_tokens"},
      {"{" + m + R"(,"max_tokens":"5"})", "max_tokens"},
      {"{" + m + R"(,"max_tokens":1e300})", "max_tokens"},
      {"{" + m + R"(,"presence_penalty":3})", "presence_penalty"},
      {"{" + m + R"(,"stop":[1]})", "stop"},
      {"{" + m + R"(,"n":2})", "n"},
      {"{" + m + R"(,"top_logprobs":2})", "top_logprobs"},
      {"{" + m + R"(,"tools":{}})", "tools"},
      {"{" + m + R"(,"tool_choice":"maybe"})", "tool_choice"},
      {"{" + m + R"(,"response_format":{"type":"xml"}})", "response_format"},
      {"{" + m +
           R"(,"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object","pattern":"x"}}}})",
       "response_format"},
      {"{" + m + R"(,"stream_options":5})", "stream_options"},
      {"{" + m + R"(,"chat_template_kwargs":[]})", "chat_template_kwargs"},
      {R"({"messages":{}})", "messages"},
      {"{" + m + R"(,"logit_bias":{"5":101}})", "logit_bias.5"},
      {"{" + m + R"(,"logit_bias":[[5]]})", "logit_bias[0]"},
      {"{" + m + R"(,"grammar":"root ::= x"})", "grammar"},
      {"{" + m + R"(,"grammar":"root ::= \"a\"","json_schema":{"type":"string"}})", "json_schema"},
      {"{" + m + R"(,"tool_choice":{"type":"function","function":{"name":"f"}}})", "tool_choice"},
      {"{" + m + R"(,"tool_choice":{"type":"function"}})", "tool_choice.function"},
  };
  for (const Case& c : cases) {
    auto e = chat(c.body);
    ASSERT_TRUE(e.has_value()) << c.body;
    EXPECT_EQ(e->status, 400);
    EXPECT_EQ(e->param, c.param) << c.body << " -> " << e->message;
    EXPECT_FALSE(e->message.empty());
  }
  auto t = chat("{" + m + R"(,"temperature":1e9})");
  ASSERT_TRUE(t);
  EXPECT_NE(t->message.find("[0, 2]"), std::string::npos) << t->message;
}

// logit_bias in OpenAI's and llama.cpp's forms (issue 40 finding 8): ids and text, -100 and
// false ban; the vocabulary is checked later, with the model (generation_prologue).
TEST(OpenAiProtocol, LogitBiasForms) {
  ChatRequest r;
  ASSERT_FALSE(chat(R"({"messages":[{"role":"user","content":"hi"}],
                        "logit_bias":{"50256":-100,"7":2.5,"hello":false}})",
                    &r));
  const auto& b = r.params.logit_bias;
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].token, 50256);
  EXPECT_TRUE(std::isinf(b[0].bias) && b[0].bias < 0);
  EXPECT_EQ(b[1].token, 7);
  EXPECT_EQ(b[1].bias, 2.5f);
  EXPECT_EQ(b[2].token, -1);
  EXPECT_EQ(b[2].text, "hello");
  EXPECT_TRUE(std::isinf(b[2].bias));
  ASSERT_FALSE(chat(R"({"messages":[{"role":"user","content":"hi"}],"logit_bias":[[3,-1],["x",false]]})", &r));
  ASSERT_EQ(r.params.logit_bias.size(), 2u);
  EXPECT_EQ(r.params.logit_bias[0].token, 3);
  EXPECT_EQ(r.params.logit_bias[1].text, "x");
  auto e = chat(R"({"messages":[{"role":"user","content":"hi"}],"logit_bias":{"99999999999":1}})");
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("which is not a token id"), std::string::npos) << e->message;
}

TEST(OpenAiProtocol, BodyMustBeValidJsonObjectAndUtf8) {
  Json j;
  EXPECT_TRUE(parse_body("", &j));
  EXPECT_TRUE(parse_body("{", &j));
  EXPECT_TRUE(parse_body("42", &j));
  EXPECT_TRUE(parse_body("{\"a\":\"\xc3\x28\"}", &j));
  EXPECT_TRUE(parse_body(R"({"a":"\udc00"})", &j));
  EXPECT_FALSE(parse_body(R"({"a":"caf\u00e9 \ud83d\ude00 ok"})", &j));
  EXPECT_TRUE(is_valid_utf8("h\xc3\xa9llo \xf0\x9f\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // > U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));          // truncated
}

TEST(OpenAiProtocol, CompletionRequests) {
  Json j;
  CompletionRequest r;
  ASSERT_FALSE(parse_body(R"({"prompt":["one"],"max_tokens":3})", &j));
  ASSERT_FALSE(parse_completion_request(j, &r));
  EXPECT_EQ(r.prompt, "one");
  for (const char* bad : {R"({"prompt":5})", R"({"prompt":["a","b"]})", R"({"prompt":"a","echo":true})",
                          R"({"prompt":"a","suffix":"b"})", R"({})"}) {
    ASSERT_FALSE(parse_body(bad, &j));
    CompletionRequest c;
    EXPECT_TRUE(parse_completion_request(j, &c)) << bad;
  }
}

TEST(ResponseFormatter, ChatChunksToolCallsAndReasoning) {
  ChatFormat format;
  format.tool_calls = ToolCallFormat::kHermes;
  format.supports_thinking = true;
  RenderedChat rendered;
  rendered.thinking_enabled = true;
  ChatFormatter f("m", format, rendered, /*tools=*/true);
  std::vector<Json> chunks = f.start();
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "assistant");
  for (const char* piece : {"<think>", "let me ", "check</think>", "\n\n<tool_call>\n{\"name\": \"get_weather\", ",
                            "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"}) {
    for (Json& c : f.on_text(piece)) chunks.push_back(std::move(c));
  }
  JobResult r;
  r.finish_reason = "stop";
  r.n_prompt = 10;
  r.n_generated = 20;
  for (Json& c : f.finish(r)) chunks.push_back(std::move(c));
  std::string reasoning, args, name;
  for (const Json& c : chunks) {
    const Json& d = c["choices"][0]["delta"];
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("tool_calls")) {
      const Json& call = d["tool_calls"][0];
      EXPECT_EQ(call["index"], 0);
      if (call.contains("id")) {
        EXPECT_EQ(call["type"], "function");
        name = call["function"]["name"];
      }
      args += call["function"]["arguments"].get<std::string>();
    }
  }
  EXPECT_EQ(reasoning, "let me check");
  EXPECT_EQ(name, "get_weather");
  EXPECT_EQ(Json::parse(args), Json({{"city", "Paris"}}));
  EXPECT_EQ(chunks.back()["choices"][0]["finish_reason"], "tool_calls");
  const Json resp = f.response(r);
  EXPECT_EQ(resp["object"], "chat.completion");
  EXPECT_EQ(resp["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(resp["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(resp["usage"]["total_tokens"], 30);
  const Json usage = f.usage_chunk(r);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 20);
}

TEST(ResponseFormatter, TextCompletion) {
  CompletionFormatter f("m");
  EXPECT_TRUE(f.start().empty());
  auto c = f.on_text("Hello");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]["object"], "text_completion");
  EXPECT_EQ(c[0]["choices"][0]["text"], "Hello");
  EXPECT_TRUE(c[0]["choices"][0]["finish_reason"].is_null());
  f.on_text(" world");
  JobResult r;
  r.finish_reason = "length";
  const Json resp = f.response(r);
  EXPECT_EQ(resp["choices"][0]["text"], "Hello world");
  EXPECT_EQ(resp["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(resp["id"].get<std::string>().rfind("cmpl-", 0), 0u);
}

TEST(OpenAiProtocol, ErrorShape) {
  ApiError e = bad_request("bad", "temperature");
  const Json j = error_json(e);
  EXPECT_EQ(j.dump(),
            R"({"error":{"message":"bad","type":"invalid_request_error","param":"temperature","code":null}})");
}

}  // namespace
}  // namespace sniper::server
