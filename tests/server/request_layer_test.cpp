// SPDX-License-Identifier: MIT
// The request layer (issue 41 item 4): the field validators' rules and message shape, and the
// same rules through each API's parser (OpenAI chat and completions, Ollama chat and generate,
// Anthropic messages), so that a value is accepted or refused the same way whichever API it
// arrives through, unless the API's documented semantics differ.
#include <gtest/gtest.h>

#include <functional>

#include "server/anthropic_protocol.h"
#include "server/field_validators.h"
#include "server/ollama_protocol.h"
#include "server/openai_protocol.h"
#include "server/request_defaults.h"

namespace sniper::server {
namespace {

Json parse(const std::string& text) {
  Json j;
  EXPECT_FALSE(parse_body(text, &j)) << text;
  return j;
}

TEST(FieldReader, NumbersNameTheFieldValueAndRange) {
  const Json j = parse(R"({"t":2.5,"s":"x"})");
  const FieldReader f(j, "options");
  float v = 7;
  auto e = f.number("t", {0, 2}, &v);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "options.t is 2.5 but must be in [0, 2]");
  EXPECT_EQ(e->param, "options.t");
  EXPECT_EQ(v, 7);  // unchanged on error
  e = f.number("s", {0, 2}, &v);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "options.s must be a number, got a string");
  EXPECT_FALSE(f.number("absent", {0, 2}, &v));
  EXPECT_EQ(v, 7);
  e = f.number("t", {2.5, 3, /*open_lo=*/true}, &v);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "options.t is 2.5 but must be in (2.5, 3]");
  EXPECT_FALSE(f.number("t", {0, 3}, &v));
  EXPECT_EQ(v, 2.5f);
}

TEST(FieldReader, IntegersAreNeverClamped) {
  const Json j = parse(R"({"big":18446744073709551615,"neg":-9223372036854775808,"f":5.0,"half":1.5,
                           "huge":1e300,"s":"5","null":null})");
  const FieldReader f(j);
  int64_t v = -3;
  auto e = f.integer("big", {0, INT64_MAX}, &v);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "big is 18446744073709551615 but must be in [0, 9223372036854775807]");
  EXPECT_FALSE(f.integer("neg", {INT64_MIN, 0}, &v));
  EXPECT_EQ(v, INT64_MIN);
  EXPECT_FALSE(f.integer("f", {0, 10}, &v));
  EXPECT_EQ(v, 5);
  e = f.integer("half", {0, 10}, &v);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "half must be an integer, got 1.5");
  EXPECT_TRUE(f.integer("huge", {0, INT64_MAX}, &v));
  e = f.integer("s", {0, 10}, &v);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "s must be an integer, got a string");
  v = 9;
  EXPECT_FALSE(f.integer("null", {0, 1}, &v));  // null is "not given"
  EXPECT_EQ(v, 9);
  uint64_t seed = 0;
  EXPECT_FALSE(f.seed("big", &seed));
  EXPECT_EQ(seed, UINT64_MAX);
  EXPECT_FALSE(f.seed("neg", &seed));
  EXPECT_EQ(seed, uint64_t{1} << 63);
}

TEST(FieldReader, StringsEnumsAndLists) {
  const Json j = parse(R"({"e":"maybe","l":["a","","c"],"one":"x","many":[1],"long":"abcdef","arr":[1,2,3]})");
  const FieldReader f(j);
  std::string s;
  auto e = f.one_of("e", {"none", "auto"}, &s);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "e is 'maybe' but must be one of none, auto");
  std::vector<std::string> list;
  e = f.string_list("l", StringListRule{}, &list);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "l[1] must not be empty");
  EXPECT_TRUE(list.empty());  // nothing appended on error
  EXPECT_FALSE(f.string_list("one", StringListRule{}, &list));
  EXPECT_EQ(list, std::vector<std::string>{"x"});
  e = f.string_list("one", StringListRule{16, 1024, /*allow_single=*/false}, &list);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "one must be an array of strings, got a string");
  e = f.string_list("l", StringListRule{2, 1024}, &list);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "l has 3 entries but at most 2 are allowed");
  e = f.string("long", &s, true, 4);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "long is 6 bytes long but at most 4 are allowed");
  const Json* arr = nullptr;
  e = f.array("arr", 2, &arr);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "arr has 3 entries but at most 2 are allowed");
  e = f.require("absent");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "absent is required");
}

// One parser per API, each given the same extra fields on a minimal valid body.
struct Api {
  const char* name;
  std::string base;  // a valid body's members, without braces
  std::function<std::optional<ApiError>(const Json&, GenerationParams*)> parse;
};

std::vector<Api> apis() {
  return {
      {"openai chat", R"("messages":[{"role":"user","content":"hi"}])",
       [](const Json& j, GenerationParams* p) {
         ChatRequest r;
         auto e = parse_chat_request(j, &r);
         *p = r.params;
         return e;
       }},
      {"openai completions", R"("prompt":"hi")",
       [](const Json& j, GenerationParams* p) {
         CompletionRequest r;
         auto e = parse_completion_request(j, &r);
         *p = r.params;
         return e;
       }},
      {"ollama chat", R"("model":"m","messages":[{"role":"user","content":"hi"}])",
       [](const Json& j, GenerationParams* p) {
         OllamaRequest r;
         auto e = parse_ollama_chat(j, &r);
         *p = r.params;
         return e;
       }},
      {"ollama generate", R"("model":"m","prompt":"hi")",
       [](const Json& j, GenerationParams* p) {
         OllamaRequest r;
         auto e = parse_ollama_generate(j, &r);
         *p = r.params;
         return e;
       }},
      {"anthropic", R"("model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}])",
       [](const Json& j, GenerationParams* p) {
         AnthropicRequest r;
         auto e = parse_anthropic_messages(j, &r);
         *p = r.chat.params;
         return e;
       }},
  };
}

// Where each API keeps a field: Ollama's sampling fields live in "options".
std::string with(const Api& api, const std::string& key, const std::string& value) {
  const bool ollama = std::string(api.name).starts_with("ollama");
  const std::string member = "\"" + key + "\":" + value;
  return "{" + api.base + "," + (ollama ? "\"options\":{" + member + "}" : member) + "}";
}

TEST(RequestLayer, HugeUnsignedIntegersAreRefusedByEveryApi) {
  // Before the request layer, Ollama clamped 2^64-1 to INT64_MAX while OpenAI refused it.
  for (const Api& api : apis()) {
    GenerationParams p;
    auto e = api.parse(parse(with(api, "top_k", "18446744073709551615")), &p);
    ASSERT_TRUE(e) << api.name;
    EXPECT_NE(e->message.find("top_k is 18446744073709551615 but must be in [0, 16777216]"), std::string::npos)
        << api.name << ": " << e->message;
  }
}

TEST(RequestLayer, IntegralFloatsAreIntegersInEveryApi) {
  // Before, Anthropic refused "max_tokens": 5.0 while OpenAI and Ollama took it.
  for (const Api& api : apis()) {
    GenerationParams p;
    const bool ollama = std::string(api.name).starts_with("ollama");
    const bool anthropic = std::string(api.name) == "anthropic";  // its base already has max_tokens
    const std::string body = anthropic ? R"({"model":"m","max_tokens":5.0,"messages":[{"role":"user","content":"hi"}]})"
                                       : with(api, ollama ? "num_predict" : "max_tokens", "5.0");
    EXPECT_FALSE(api.parse(parse(body), &p)) << api.name;
    EXPECT_EQ(p.max_tokens, 5) << api.name;
    EXPECT_FALSE(api.parse(parse(with(api, "top_k", "3.0")), &p)) << api.name;
    EXPECT_EQ(p.sampler.top_k, 3) << api.name;
  }
}

TEST(RequestLayer, SeedsTakeTheWholeUnsignedRange) {
  for (const Api& api : apis()) {
    if (std::string(api.name) == "anthropic") continue;  // Anthropic has no seed
    GenerationParams p;
    EXPECT_FALSE(api.parse(parse(with(api, "seed", "18446744073709551615")), &p)) << api.name;
    EXPECT_EQ(p.sampler.seed, UINT64_MAX) << api.name;
    EXPECT_FALSE(api.parse(parse(with(api, "seed", "-1")), &p)) << api.name;
    EXPECT_EQ(p.sampler.seed, UINT64_MAX) << api.name;
  }
}

TEST(RequestLayer, StopStringsFollowOneRule) {
  for (const Api& api : apis()) {
    const bool anthropic = std::string(api.name) == "anthropic";
    const std::string key = anthropic ? "stop_sequences" : "stop";
    GenerationParams p;
    auto e = api.parse(parse(with(api, key, R"(["a",""])")), &p);
    ASSERT_TRUE(e) << api.name;
    EXPECT_NE(e->message.find(key + "[1] must not be empty"), std::string::npos) << api.name << ": " << e->message;
    std::string seventeen = "[\"a\"";
    for (int i = 1; i < 17; ++i) seventeen += ",\"a\"";
    e = api.parse(parse(with(api, key, seventeen + "]")), &p);
    ASSERT_TRUE(e) << api.name;
    EXPECT_NE(e->message.find(key + " has 17 entries but at most 16 are allowed"), std::string::npos)
        << api.name << ": " << e->message;
    e = api.parse(parse(with(api, key, "\"" + std::string(1025, 'x') + "\"")), &p);
    ASSERT_TRUE(e) << api.name;  // Anthropic: not an array; the others: too long
    EXPECT_NE(e->message.find(anthropic ? "must be an array of strings" : "is 1025 bytes long but at most 1024"),
              std::string::npos)
        << api.name << ": " << e->message;
    ASSERT_FALSE(api.parse(parse(with(api, key, R"(["END"])")), &p)) << api.name;
    EXPECT_EQ(p.stop, std::vector<std::string>{"END"}) << api.name;
  }
}

TEST(RequestLayer, RangesKeepEachApisDocumentedSemantics) {
  // temperature: OpenAI [0, 2], Ollama [0, 100] (llama.cpp's range), Anthropic [0, 1].
  const std::pair<const char*, const char*> kTemperatureRange[] = {{"openai chat", "[0, 2]"},
                                                                   {"openai completions", "[0, 2]"},
                                                                   {"ollama chat", "[0, 100]"},
                                                                   {"ollama generate", "[0, 100]"},
                                                                   {"anthropic", "[0, 1]"}};
  for (const Api& api : apis()) {
    GenerationParams p;
    auto e = api.parse(parse(with(api, "temperature", "1000")), &p);
    ASSERT_TRUE(e) << api.name;
    for (const auto& [name, range] : kTemperatureRange) {
      if (std::string(name) == api.name) {
        EXPECT_NE(e->message.find(std::string("temperature is 1000 but must be in ") + range), std::string::npos)
            << api.name << ": " << e->message;
      }
    }
    // top_p 0: Ollama (llama.cpp) reads it as "no filter"; OpenAI and Anthropic refuse it.
    e = api.parse(parse(with(api, "top_p", "0")), &p);
    if (std::string(api.name).starts_with("ollama")) {
      EXPECT_FALSE(e) << api.name;
      EXPECT_EQ(p.sampler.top_p, 1.0f);
    } else {
      ASSERT_TRUE(e) << api.name;
      EXPECT_NE(e->message.find("top_p is 0 but must be in (0, 1]"), std::string::npos) << e->message;
    }
  }
}

TEST(RequestLayer, TypeErrorsHaveOneShape) {
  for (const Api& api : apis()) {
    GenerationParams p;
    auto e = api.parse(parse(with(api, "temperature", R"("hot")")), &p);
    ASSERT_TRUE(e) << api.name;
    EXPECT_NE(e->message.find("temperature must be a number, got a string"), std::string::npos)
        << api.name << ": " << e->message;
    e = api.parse(parse("{" + api.base + R"(,"stream":"yes"})"), &p);
    ASSERT_TRUE(e) << api.name;
    EXPECT_EQ(e->message, "stream must be a boolean, got a string") << api.name;
    EXPECT_EQ(e->param, "stream");
  }
}

TEST(RequestLayer, ServerDefaultsAreValidInEveryApi) {
  // serve --temp 2 (or any flag at either end of its range) must not turn a request that leaves
  // the field out into a 400: Anthropic's temperature is [0, 1], so its default is clamped.
  const std::pair<const char*, const char*> kPath[] = {{"openai chat", "/v1/chat/completions"},
                                                       {"openai completions", "/v1/completions"},
                                                       {"ollama chat", "/api/chat"},
                                                       {"ollama generate", "/api/generate"},
                                                       {"anthropic", "/v1/messages"}};
  SamplingDefaults lo, hi;
  lo.temperature = 0, lo.top_p = 1e-6, lo.min_p = 0, lo.repeat_penalty = 0.01, lo.presence_penalty = -2;
  lo.frequency_penalty = -2, lo.top_k = 0, lo.seed = 0, lo.max_tokens = 1;
  hi.temperature = 2, hi.top_p = 1, hi.min_p = 1, hi.repeat_penalty = 10, hi.presence_penalty = 2;
  hi.frequency_penalty = 2, hi.top_k = int64_t{1} << 24, hi.seed = INT64_MAX, hi.max_tokens = int64_t{1} << 24;
  for (const Api& api : apis()) {
    const char* path = nullptr;
    for (const auto& [name, p] : kPath) {
      if (std::string(name) == api.name) path = p;
    }
    ASSERT_NE(path, nullptr) << api.name;
    for (const SamplingDefaults& d : {lo, hi}) {
      const auto body = apply_sampling_defaults("POST", path, "{" + api.base + "}", d);
      ASSERT_TRUE(body.has_value()) << api.name;
      GenerationParams p;
      const auto e = api.parse(parse(*body), &p);
      EXPECT_FALSE(e) << api.name << ": " << (e ? e->message : "") << " for " << *body;
    }
    GenerationParams p;
    ASSERT_FALSE(api.parse(parse(*apply_sampling_defaults("POST", path, "{" + api.base + "}", hi)), &p));
    EXPECT_EQ(p.sampler.temperature, std::string(api.name) == "anthropic" ? 1.0f : 2.0f) << api.name;
  }
}

}  // namespace
}  // namespace sniper::server
