// SPDX-License-Identifier: MIT
// parse_json_bounded: the same document as nlohmann's parser within the limits, and a clear
// error naming the limit past them, decided while parsing (100,000-deep nesting must fail
// fast, without recursion and without building the document first).
#include "server/bounded_json.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace sniper::server {
namespace {

using OJson = nlohmann::ordered_json;

std::string nested(size_t depth, char open, const std::string& leaf, char close) {
  return std::string(depth, open) + leaf + std::string(depth, close);
}

std::string nested_objects(size_t depth) {
  std::string s;
  for (size_t i = 0; i < depth; ++i) s += "{\"a\":";
  return s + "1" + std::string(depth, '}');
}

TEST(BoundedJson, SameDocumentAsNlohmannWithinLimits) {
  const std::string text =
      R"({"b":[1,-2,3.5,true,false,null,"x\u00e9",{"z":{}},[]],"a":{"k":"v","n":18446744073709551615},"e":""})";
  OJson bounded;
  ASSERT_EQ(parse_json_bounded(text, &bounded), "");
  EXPECT_EQ(bounded, OJson::parse(text));
  EXPECT_EQ(bounded.dump(), OJson::parse(text).dump());  // key order kept
  nlohmann::json sorted;
  ASSERT_EQ(parse_json_bounded(text, &sorted), "");
  EXPECT_EQ(sorted, nlohmann::json::parse(text));
  // Scalars at the root, comments when asked.
  OJson j;
  ASSERT_EQ(parse_json_bounded("42", &j), "");
  EXPECT_EQ(j, 42);
  EXPECT_NE(parse_json_bounded("{\"a\":1 // c\n}", &j), "");
  ASSERT_EQ(parse_json_bounded("{\"a\":1 // c\n}", &j, JsonLimits{}, /*ignore_comments=*/true), "");
  EXPECT_EQ(j["a"], 1);
}

TEST(BoundedJson, MalformedInputLeavesOutputUntouched) {
  OJson j = "kept";
  for (const char* bad : {"", "{", "[1,", "{\"a\"}", "nul", "[1]x", "\"\xc3\x28\""}) {
    const std::string why = parse_json_bounded(bad, &j);
    EXPECT_NE(why, "") << bad;
    EXPECT_EQ(j, "kept") << bad;
  }
}

TEST(BoundedJson, DepthLimitIsExactAndNamed) {
  JsonLimits limits;
  limits.max_depth = 8;
  OJson j;
  EXPECT_EQ(parse_json_bounded(nested(8, '[', "1", ']'), &j, limits), "");
  EXPECT_EQ(parse_json_bounded(nested_objects(8), &j, limits), "");
  const std::string why = parse_json_bounded(nested(9, '[', "1", ']'), &j, limits);
  EXPECT_NE(why.find("deeper than 8 levels"), std::string::npos) << why;
  EXPECT_NE(why.find("max_depth"), std::string::npos) << why;
  EXPECT_NE(parse_json_bounded(nested_objects(9), &j, limits).find("max_depth"), std::string::npos);
  // Depth counts open containers, not values: a wide document at depth 2 is fine.
  EXPECT_EQ(parse_json_bounded("[[1],[2],[3],{\"a\":1}]", &j, JsonLimits{2}), "");
  EXPECT_NE(parse_json_bounded("[[1],{\"a\":[]}]", &j, JsonLimits{2}), "");
}

TEST(BoundedJson, HundredThousandLevelsFailFastWithoutRecursion) {
  OJson j;
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& text :
       {nested_objects(100000), nested(100000, '[', "1", ']'),
        "{\"prompt\":" + nested(100000, '[', "\"hi\"", ']') + "}", std::string(1000000, '[')}) {
    const std::string why = parse_json_bounded(text, &j);
    EXPECT_NE(why.find("deeper than 64 levels"), std::string::npos) << why;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(BoundedJson, CountLimitsAreExactAndNamed) {
  OJson j;
  JsonLimits limits;
  limits.max_array_elements = 3;
  EXPECT_EQ(parse_json_bounded("[1,2,3]", &j, limits), "");
  EXPECT_NE(parse_json_bounded("[1,2,3,4]", &j, limits).find("max_array_elements"), std::string::npos);
  limits = JsonLimits{};
  limits.max_object_members = 2;
  EXPECT_EQ(parse_json_bounded(R"({"a":1,"b":{"c":1,"d":2}})", &j, limits), "");
  EXPECT_NE(parse_json_bounded(R"({"a":1,"b":2,"c":3})", &j, limits).find("max_object_members"), std::string::npos);
  limits = JsonLimits{};
  limits.max_values = 4;  // the array and its three elements
  EXPECT_EQ(parse_json_bounded("[1,2,3]", &j, limits), "");
  EXPECT_NE(parse_json_bounded("[1,[2],3]", &j, limits).find("max_values"), std::string::npos);
  // The defaults hold a million-element array off.
  std::string big = "[";
  for (int i = 0; i < 1000000; ++i) big += "0,";
  big += "0]";
  EXPECT_NE(parse_json_bounded(big, &j).find("max_"), std::string::npos);
}

// Issue 40 finding 7: 4,095 keys then 250,000 repeats of them took 4.7 s (a linear lookup per
// member, and repeats did not count against max_object_members). A repeated key is refused at
// once, in either JSON type; keys may repeat across objects.
TEST(BoundedJson, DuplicateKeysAreRefused) {
  OJson j;
  EXPECT_NE(parse_json_bounded(R"({"a":1,"b":2,"a":3})", &j).find("repeats the key \"a\""), std::string::npos);
  nlohmann::json sorted;
  EXPECT_NE(parse_json_bounded(R"({"x":{"k":1,"k":1}})", &sorted).find("duplicate keys are refused"),
            std::string::npos);
  ASSERT_EQ(parse_json_bounded(R"({"a":{"a":1,"b":[{"a":2},{"a":3}]},"b":{"a":4}})", &j), "");
  EXPECT_EQ(j["b"]["a"], 4);
  std::string body = "{";
  for (int i = 0; i < 4095; ++i) body += "\"k" + std::to_string(i) + "\":0,";
  for (int i = 0; i < 250000; ++i) body += "\"k" + std::to_string(i % 4095) + "\":0,";
  body += "\"end\":0}";
  const auto t0 = std::chrono::steady_clock::now();
  const std::string why = parse_json_bounded(body, &j);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(why.find("repeats the key \"k0\""), std::string::npos) << why;
  EXPECT_LT(s, 2.0);  // milliseconds here; 4.7 s before (budget for a loaded, sanitized CI machine)
  // Without repeats, 4,096 members is the limit.
  body = "{";
  for (int i = 0; i < 4097; ++i) body += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":0";
  EXPECT_NE(parse_json_bounded(body + "}", &j).find("max_object_members"), std::string::npos);
}

}  // namespace
}  // namespace sniper::server
