// SPDX-License-Identifier: MIT
// Issue 40 finding 8: parameters that were accepted and ignored. Over HTTP on stories260K
// (512-token vocabulary, served with a 64-token context below its trained one): logit_bias bans and forces
// tokens in every form llama-server accepts and refuses ids outside the vocabulary; a GBNF
// grammar constrains the output and a bad one is a 400 naming the line and column; tool_choice
// must name a tool; Ollama's num_ctx is checked against the model and the server and, within
// them, caps the request. Before the fix each of these returned 200 and did nothing.
#include <gtest/gtest.h>

#include "server/test_server.h"

namespace sniper::server {
namespace {

class ServerParams : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ServerOptions o;
    o.context_dir = ::testing::TempDir() + "/sniper_params_ctx";
    server_ = new TestServer(models_dir() + "/stories260K.gguf", o, 64);
    ASSERT_TRUE(server_->ok()) << server_->error();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static TestServer* server_;

  static TJson post(const std::string& path, const TJson& body, int expect = 200) {
    auto r = server_->client()->Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return TJson();
    EXPECT_EQ(r->status, expect) << body.dump() << " -> " << r->body;
    return TJson::parse(r->body, nullptr, false);
  }
  static std::vector<int32_t> tokens(const std::string& text) {
    return (*server_->model().tokenizer())->encode(text, false, false);
  }
  // Greedy completion of `prompt` with extra fields.
  static std::string complete(const TJson& extra, int n = 12) {
    TJson body = {{"prompt", "Once upon a time"}, {"max_tokens", n}, {"temperature", 0}};
    for (auto it = extra.begin(); it != extra.end(); ++it) body[it.key()] = it.value();
    const TJson j = post("/v1/completions", body);
    return j.is_object() ? j["choices"][0]["text"].get<std::string>() : "";
  }
};
TestServer* ServerParams::server_ = nullptr;

TEST_F(ServerParams, LogitBiasBansAndForcesTokens) {
  const std::string plain = complete({});
  ASSERT_FALSE(plain.empty());
  // The first greedy token, banned in each accepted form, never appears; the text changes.
  const Tokenizer& tok = **server_->model().tokenizer();
  const std::vector<int32_t> ids = tok.encode("Once upon a time" + plain, true, false);
  const std::vector<int32_t> prompt = tok.encode("Once upon a time", true, false);
  ASSERT_GT(ids.size(), prompt.size());
  const int32_t first = ids[prompt.size()];
  const std::string id = std::to_string(first);
  for (const TJson& bias : {TJson{{id, -100}}, TJson{{id, false}}, TJson::array({TJson::array({first, -100})}),
                            TJson::array({TJson::array({first, false})})}) {
    SCOPED_TRACE(bias.dump());
    const std::string text = complete({{"logit_bias", bias}});
    EXPECT_NE(text, plain);
    const std::vector<int32_t> got = tok.encode("Once upon a time" + text, true, false);
    EXPECT_NE(got[prompt.size()], first);
  }
  // +100 on one token makes it win every step; text keys are tokenized (llama.cpp: without
  // special tokens; SentencePiece adds its space prefix).
  const int32_t forced = tokens(" cat").back();
  const std::string piece = tok.token_to_piece(forced, false);
  const std::string all_cat = complete({{"logit_bias", {{std::to_string(forced), 100}}}}, 4);
  EXPECT_EQ(all_cat, piece + piece + piece + piece);
  std::string word;  // a word that is one token
  for (const char* w : {"the", "and", "a", "was", "Lily", "at"}) {
    if (word.empty() && tokens(w).size() == 1) word = w;
  }
  ASSERT_FALSE(word.empty());
  const std::string text_piece = tok.token_to_piece(tokens(word)[0], false);
  const std::string by_text = complete({{"logit_bias", TJson::array({TJson::array({word, 100})})}}, 3);
  EXPECT_EQ(by_text, text_piece + text_piece + text_piece);
  // The chat route takes it too.
  const TJson chat = post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                                   {"max_tokens", 3},
                                                   {"temperature", 0},
                                                   {"logit_bias", {{std::to_string(forced), 100}}}});
  EXPECT_EQ(chat["choices"][0]["message"]["content"], piece + piece + piece);
}

TEST_F(ServerParams, LogitBiasIsValidated) {
  const TJson base = {{"prompt", "Once"}, {"max_tokens", 2}};
  struct Case {
    TJson bias;
    const char* needle;
  } cases[] = {
      {{{"512", 1}}, "logit_bias.512 names token 512 but the model's vocabulary has 512 tokens (ids 0 to 511)"},
      {{{"abc", 200}}, "logit_bias.abc is 200 but must be in [-100, 100]"},
      {{{"5", true}}, "logit_bias.5 must be a number in [-100, 100] or false (banned), got true"},
      {{{"5", "x"}}, "must be a number in [-100, 100] or false"},
      {{{"-5", 1}}, "names token -5, which is not a token id"},
      {{{"", 1}}, "the token must not be empty"},
      {TJson::array({1, 2}), "logit_bias[0] must be a [token, bias] pair, got 1"},
      {TJson::array({TJson::array({1.5, 2})}), "logit_bias[0][0] must be a token id or text, got a number"},
      {"x", "logit_bias must be an object of token ids to biases"},
  };
  for (const Case& c : cases) {
    TJson body = base;
    body["logit_bias"] = c.bias;
    const TJson j = post("/v1/completions", body, 400);
    ASSERT_TRUE(j.is_object());
    EXPECT_NE(j["error"]["message"].get<std::string>().find(c.needle), std::string::npos) << j.dump();
  }
}

TEST_F(ServerParams, GbnfGrammarConstrainsTheOutput) {
  const std::string grammar = "root ::= (\"yes\" | \"no\") \" \" [a-c]{2} \"!\"\n";
  for (int seed = 0; seed < 3; ++seed) {
    const TJson j = post("/v1/completions", {{"prompt", "Once upon a time"},
                                             {"max_tokens", 30},
                                             {"temperature", 1.5},
                                             {"seed", seed},
                                             {"grammar", grammar}});
    const std::string text = j["choices"][0]["text"];
    const bool ok = text.size() == 6 + (text.rfind("yes", 0) == 0 ? 1 : 0) &&
                    (text.rfind("yes ", 0) == 0 || text.rfind("no ", 0) == 0) && text.back() == '!';
    EXPECT_TRUE(ok) << text;
    EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  }
  TJson e = post("/v1/completions", {{"prompt", "x"}, {"grammar", "root ::= \"a\"\nitem ::= (\"b\"\n"}}, 400);
  EXPECT_EQ(e["error"]["param"], "grammar");
  EXPECT_NE(e["error"]["message"].get<std::string>().find(
                "grammar line 3, column 1: expected ')' to close the group opened at column 10"),
            std::string::npos)
      << e.dump();
  e = post("/v1/completions",
           {{"prompt", "x"}, {"grammar", "root ::= \"a\""}, {"response_format", {{"type", "json_object"}}}}, 400);
  EXPECT_NE(e["error"]["message"].get<std::string>().find("both constrain"), std::string::npos) << e.dump();
  e = post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"grammar", 5}}, 400);
  EXPECT_NE(e["error"]["message"].get<std::string>().find("grammar must be a string (GBNF), got a number"),
            std::string::npos);
  // llama.cpp's json_schema field.
  const TJson j =
      post("/v1/completions",
           {{"prompt", "Once"}, {"max_tokens", 30}, {"temperature", 0}, {"json_schema", {{"type", "boolean"}}}});
  std::string b = j["choices"][0]["text"];
  b.erase(0, b.find_first_not_of(" \t\n\r"));  // the JSON grammar allows leading whitespace
  EXPECT_TRUE(b == "true" || b == "false") << b;
}

TEST_F(ServerParams, ToolChoiceMustNameATool) {
  const TJson tools = TJson::parse(R"([{"type":"function","function":{"name":"get_weather","parameters":{}}}])");
  const TJson msgs = {{{"role", "user"}, {"content", "hi"}}};
  TJson e = post("/v1/chat/completions",
                 {{"messages", msgs},
                  {"tools", tools},
                  {"tool_choice", {{"type", "function"}, {"function", {{"name", "delete_everything"}}}}}},
                 400);
  EXPECT_EQ(e["error"]["message"], "tool_choice.function.name is 'delete_everything' but the tools are get_weather");
  e = post("/v1/chat/completions", {{"messages", msgs}, {"tool_choice", "required"}}, 400);
  EXPECT_EQ(e["error"]["message"], "tool_choice is 'required' but the request has no tools");
  post("/v1/chat/completions", {{"messages", msgs},
                                {"max_tokens", 2},
                                {"tools", tools},
                                {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}});
  e = post("/v1/messages",
           {{"model", "stories260K"},
            {"max_tokens", 2},
            {"messages", msgs},
            {"tools", {{{"name", "get_weather"}, {"input_schema", {{"type", "object"}}}}}},
            {"tool_choice", {{"type", "tool"}, {"name", "nope"}}}},
           400);
  EXPECT_EQ(e["error"]["message"], "tool_choice.name is 'nope' but the tools are get_weather");
}

TEST_F(ServerParams, OllamaNumCtxIsCheckedAndCapsTheRequest) {
  const int64_t trained = server_->model().config().n_ctx_train;
  ASSERT_GT(trained, 64);  // the server runs a 64-token context below the model's trained one
  auto generate = [](int64_t num_ctx, int expect) {
    return post("/api/generate",
                {{"model", "stories260K"},
                 {"prompt", "Once upon a time"},
                 {"stream", false},
                 {"raw", true},
                 {"options", {{"num_ctx", num_ctx}, {"temperature", 0}, {"num_predict", 200}}}},
                expect);
  };
  TJson e = generate(int64_t{1} << 40, 400);
  EXPECT_EQ(e["error"],
            "options.num_ctx is 1099511627776 but the model was trained for " + std::to_string(trained) + " tokens");
  e = generate(trained, 400);
  EXPECT_EQ(e["error"], "options.num_ctx is " + std::to_string(trained) +
                            " but this server's context is 64 tokens per request (start it with --ctx " +
                            std::to_string(trained) + " for more)");
  e = generate(3, 400);  // the prompt does not fit
  EXPECT_NE(e["error"].get<std::string>().find("the context holds 3"), std::string::npos) << e.dump();
  const TJson j = generate(16, 200);
  EXPECT_EQ(j["done_reason"], "length");
  const auto n_prompt =
      static_cast<int64_t>((*server_->model().tokenizer())->encode("Once upon a time", true, true).size());
  EXPECT_EQ(j["eval_count"].get<int64_t>(), 16 - n_prompt) << j.dump();
}

}  // namespace
}  // namespace sniper::server
