// SPDX-License-Identifier: MIT
// Anthropic Messages request parsing (no model): defaults, content blocks -> OpenAI messages,
// tools, thinking, and clear 400s in Anthropic's error form for bad JSON and wrong types.
#include "server/anthropic_protocol.h"

#include <gtest/gtest.h>

namespace sniper::server {
namespace {

std::optional<ApiError> messages(const std::string& body, AnthropicRequest* out = nullptr) {
  Json j;
  if (auto e = parse_body(body, &j)) return e;
  AnthropicRequest r;
  auto e = parse_anthropic_messages(j, &r);
  if (out != nullptr) *out = r;
  return e;
}

TEST(AnthropicProtocol, DefaultsAndFields) {
  AnthropicRequest r;
  ASSERT_FALSE(messages(R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})", &r));
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.chat.params.max_tokens, 5);
  EXPECT_FLOAT_EQ(r.chat.params.sampler.temperature, 1.0f);
  EXPECT_EQ(r.chat.params.sampler.top_k, 0);
  EXPECT_FALSE(r.chat.params.stream);
  EXPECT_TRUE(r.chat.params.sampler.validate().ok());
  ASSERT_FALSE(messages(R"({"model":"m","max_tokens":5,"temperature":0.2,"top_p":0.9,"top_k":7,"stream":true,
      "stop_sequences":["END"],"system":[{"type":"text","text":"a"},{"type":"text","text":"b"}],
      "thinking":{"type":"enabled","budget_tokens":1024},"metadata":{"user_id":"u"},
      "messages":[{"role":"user","content":[{"type":"text","text":"weather?"}]},
                  {"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"ok"},
                                                  {"type":"tool_use","id":"toolu_1","name":"get","input":{"city":"Paris"}}]},
                  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny"}]},
                                             {"type":"text","text":"and tomorrow?"}]}],
      "tools":[{"name":"get","description":"d","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],
      "tool_choice":{"type":"auto"}})",
                        &r));
  EXPECT_FLOAT_EQ(r.chat.params.sampler.temperature, 0.2f);
  EXPECT_EQ(r.chat.params.sampler.top_k, 7);
  EXPECT_TRUE(r.chat.params.stream);
  EXPECT_EQ(r.chat.params.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(r.thinking, true);
  const Json& m = r.chat.messages;
  ASSERT_EQ(m.size(), 5u) << m.dump();
  EXPECT_EQ(m[0], Json::parse(R"({"role":"system","content":"a\nb"})"));
  EXPECT_EQ(m[2]["reasoning_content"], "t");
  EXPECT_EQ(m[2]["content"], "ok");
  EXPECT_EQ(m[2]["tool_calls"][0]["id"], "toolu_1");
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(m[3], Json::parse(R"({"role":"tool","tool_call_id":"toolu_1","content":"sunny"})"));
  EXPECT_EQ(m[4], Json::parse(R"({"role":"user","content":"and tomorrow?"})"));
  EXPECT_EQ(r.chat.tools[0]["function"]["parameters"]["properties"]["city"]["type"], "string");
  ASSERT_FALSE(messages(R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],
      "tools":[{"name":"get","input_schema":{"type":"object"}}],"tool_choice":{"type":"none"}})",
                        &r));
  EXPECT_TRUE(r.chat.tools.is_null());
}

TEST(AnthropicProtocol, ImageBlocksBecomeImageParts) {
  AnthropicRequest r;
  ASSERT_FALSE(messages(R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":[
      {"type":"text","text":"one"},
      {"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGk="}},
      {"type":"text","text":"two"}]}]})",
                        &r));
  ASSERT_EQ(r.chat.messages.size(), 1u);
  EXPECT_EQ(r.chat.messages[0]["content"], Json::parse(R"([{"type":"text","text":"one"},
      {"type":"image_url","image_url":{"url":"data:image/png;base64,aGk="},
       "x-sniper-source":"messages[0].content[1].source.data","x-sniper-api":"anthropic"},{"type":"text","text":"two"}])"));
}

TEST(AnthropicProtocol, BadRequestsAreClear400s) {
  const std::string ok = R"("model":"m","max_tokens":5)";
  const std::string msgs = R"("messages":[{"role":"user","content":"hi"}])";
  struct Case {
    std::string body;
    const char* needle;
  } cases[] = {
      {"{", "not valid JSON"},
      {"{" + msgs + R"(,"max_tokens":5})", "model is required"},
      {R"({"model":"m",)" + msgs + "}", "max_tokens is required"},
      {R"({"model":"m","max_tokens":0,)" + msgs + "}", "max_tokens is 0 but must be in [1, "},
      {R"({"model":"m","max_tokens":"5",)" + msgs + "}", "max_tokens must be an integer, got a string"},
      {"{" + ok + "," + msgs + R"(,"temperature":1.5})", "temperature is 1.5 but must be in [0, 1]"},
      {"{" + ok + "," + msgs + R"(,"temperature":"x"})", "temperature must be a number, got a string"},
      {"{" + ok + "," + msgs + R"(,"top_k":-1})", "top_k is -1 but must be in [0, 16777216]"},
      {"{" + ok + "," + msgs + R"(,"stop_sequences":"END"})", "stop_sequences must be an array of strings"},
      {"{" + ok + "," + msgs + R"(,"stream":1})", "stream must be a boolean"},
      {"{" + ok + "," + msgs + R"(,"thinking":{"type":"sometimes"}})",
       "thinking.type is 'sometimes' but must be one of enabled, disabled"},
      {"{" + ok + "," + msgs + R"(,"tools":[{"type":"bash_20250124","name":"bash"}]})", "only custom tools"},
      {"{" + ok + "," + msgs + R"(,"system":5})", "system must be a string or an array of text blocks"},
      {"{" + ok + R"(,"messages":[]})", "at least one message"},
      {"{" + ok + R"(,"messages":[{"role":"system","content":"x"}]})",
       "messages[0].role is 'system' but must be one of user, assistant"},
      {"{" + ok + R"(,"messages":[{"role":"user","content":5}]})", "messages[0].content must be a string or an array"},
      {"{" + ok + R"(,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]})",
       "messages[0].content[0].source.type is required"},
      {"{" + ok +
           R"(,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"http://a/b.png"}}]}]})",
       "takes images inline only"},
      {"{" + ok +
           R"(,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/bmp","data":"AA=="}}]}]})",
       "media_type is 'image/bmp' but must be one of image/jpeg, image/png, image/gif, image/webp"},
      {"{" + ok +
           R"(,"messages":[{"role":"assistant","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]})",
       "image blocks belong to user messages"},
      {"{" + ok + R"(,"messages":[{"role":"user","content":[{"type":"tool_use","id":"a","name":"b","input":{}}]}]})",
       "tool_use blocks belong to assistant messages"},
      {"{" + ok +
           R"(,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"b","input":[]}]}]})",
       "input must be an object, got an array"},
  };
  for (const Case& c : cases) {
    auto e = messages(c.body);
    ASSERT_TRUE(e.has_value()) << c.body;
    EXPECT_EQ(e->status, 400) << c.body;
    EXPECT_NE(e->message.find(c.needle), std::string::npos) << c.body << " -> " << e->message;
  }
}

TEST(AnthropicProtocol, ErrorObject) {
  EXPECT_EQ(anthropic_error_json(404, "gone"),
            Json::parse(R"({"type":"error","error":{"type":"not_found_error","message":"gone"}})"));
  EXPECT_EQ(anthropic_error_type(400), "invalid_request_error");
  EXPECT_EQ(anthropic_error_type(401), "authentication_error");
  EXPECT_EQ(anthropic_error_type(503), "overloaded_error");
  EXPECT_EQ(anthropic_error_type(500), "api_error");
}

}  // namespace
}  // namespace sniper::server
