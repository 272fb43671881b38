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
  // Scalars at the root, duplicate keys (last wins, as nlohmann), comments when asked.
  OJson j;
  ASSERT_EQ(parse_json_bounded("42", &j), "");
  EXPECT_EQ(j, 42);
  ASSERT_EQ(parse_json_bounded(R"({"a":1,"a":2})", &j), "");
  EXPECT_EQ(j["a"], 2);
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

}  // namespace
}  // namespace sniper::server
