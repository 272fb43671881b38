// SPDX-License-Identifier: MIT
// Issue 26 in the chat path: JSON that arrives inside strings is parsed within the same bounds as
// request bodies. A tool call's `arguments` string nested 100,000 deep (in a request's messages)
// is a render error, and a model that generates a 100,000-deep tool call gets it back as plain
// content; neither may overflow the stack in a recursive copy or walk.
#include <gtest/gtest.h>

#include <string>

#include "server/chat_format.h"

namespace sniper::server {
namespace {

using Json = nlohmann::ordered_json;

const std::string kDeep = std::string(100000, '[') + std::string(100000, ']');

TEST(ChatDepth, DeepToolCallArgumentsInARequestAreRefused) {
  auto tmpl = ChatTemplate::parse("{% for m in messages %}{{ m.role }}{% endfor %}");
  ASSERT_TRUE(tmpl.ok()) << tmpl.error().message;
  ChatRenderInput in;
  in.messages = Json::array();
  in.messages.push_back(Json{{"role", "user"}, {"content", "hi"}});
  Json call = {
      {"id", "c1"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{\"a\":" + kDeep + "}"}}}};
  in.messages.push_back(Json{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", Json::array({call})}});
  auto r = render_chat(*tmpl, ChatFormat{ToolCallFormat::kHermes, false}, in, "", "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("arguments"), std::string::npos) << r.error().message;
  // Within the bounds the same call renders.
  in.messages[1]["tool_calls"][0]["function"]["arguments"] = "{\"a\":[[1]]}";
  EXPECT_TRUE(render_chat(*tmpl, ChatFormat{ToolCallFormat::kHermes, false}, in, "", "").ok());
}

TEST(ChatDepth, DeepGeneratedToolCallBecomesContent) {
  for (const std::string& call :
       {"{\"name\": \"f\", \"arguments\": {\"a\": " + kDeep + "}}",
        "{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": " + kDeep + "}\"}", "[" + kDeep + "]"}) {
    const std::string text = "<tool_call>\n" + call + "\n</tool_call>";
    ChatOutputParser p(ChatFormat{ToolCallFormat::kHermes, true}, RenderedChat{}, /*tools_requested=*/true);
    std::vector<ChatDelta> deltas;
    p.feed(text, &deltas);
    p.finish(&deltas);
    EXPECT_FALSE(p.has_tool_calls());
    const Json m = p.message();
    ASSERT_TRUE(m["content"].is_string());
    EXPECT_EQ(m["content"].get<std::string>(), text);
  }
}

}  // namespace
}  // namespace sniper::server
