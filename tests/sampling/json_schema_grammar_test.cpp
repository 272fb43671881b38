// SPDX-License-Identifier: MIT
// Tests of JSON schema -> grammar and TokenConstraint: the property that constrained sampling
// from random logits always yields JSON that parses and validates (checked by an independent
// validator written here) for several schemas and seeds, on a vocabulary of single bytes,
// multi-byte tokens, split UTF-8 sequences, a control token and an end token; exact
// acceptance/rejection of hand-written documents; and clear errors for unsupported schemas.
#include "sampling/json_schema_grammar.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <string>

#include "sampling/sampler.h"
#include "sampling/token_constraint.h"

namespace sniper {
namespace {

using Json = nlohmann::ordered_json;

// The subset's semantics, independently of the compiler.
bool valid(const Json& v, const Json& s) {
  if (s.is_boolean()) return s.get<bool>();
  if (s.contains("const")) return v == s["const"];
  if (s.contains("enum")) {
    for (const Json& e : s["enum"]) {
      if (v == e) return true;
    }
    return false;
  }
  if (s.contains("anyOf")) {
    for (const Json& sub : s["anyOf"]) {
      if (valid(v, sub)) return true;
    }
    return false;
  }
  if (s.contains("type")) {
    std::vector<std::string> types;
    if (s["type"].is_string()) {
      types.push_back(s["type"].get<std::string>());
    } else {
      for (const Json& t : s["type"]) types.push_back(t.get<std::string>());
    }
    bool any = false;
    for (const std::string& t : types) {
      any = any || (t == "object" && v.is_object()) || (t == "array" && v.is_array()) ||
            (t == "string" && v.is_string()) || (t == "number" && v.is_number()) ||
            (t == "integer" && v.is_number_integer()) || (t == "boolean" && v.is_boolean()) ||
            (t == "null" && v.is_null());
    }
    if (!any) return false;
  }
  if (v.is_object()) {
    if (s.contains("required")) {
      for (const Json& r : s["required"]) {
        if (!v.contains(r.get<std::string>())) return false;
      }
    }
    const Json props = s.value("properties", Json::object());
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (props.contains(it.key())) {
        if (!valid(it.value(), props[it.key()])) return false;
      } else if (s.contains("additionalProperties") && s["additionalProperties"] == false) {
        return false;
      }
    }
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return false;
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return false;
    if (s.contains("items")) {
      for (const Json& e : v) {
        if (!valid(e, s["items"])) return false;
      }
    }
  }
  if (v.is_string()) {
    size_t chars = 0;
    for (unsigned char c : v.get<std::string>()) chars += (c & 0xC0) != 0x80;
    if (s.contains("minLength") && chars < s["minLength"].get<size_t>()) return false;
    if (s.contains("maxLength") && chars > s["maxLength"].get<size_t>()) return false;
  }
  return true;
}

// Single bytes 0x20-0x7E and \n, JSON-ish multi-byte tokens, UTF-8 split over tokens and whole,
// invalid bytes, an empty control token and an end token (the last id).
std::shared_ptr<const TokenVocabulary> test_vocab() {
  auto v = std::make_shared<TokenVocabulary>();
  for (int c = 0x20; c <= 0x7E; ++c) v->pieces.push_back(std::string(1, static_cast<char>(c)));
  for (const char* p : {"\n",       "{\"",  "\":",      "\": ",         "\", \"",
                        "\"}",      "true", "false",    "null",         "12",
                        "-0.5",     "e+7",  "\\u00e9",  "\\ud800",      "\\n",
                        "\xC3",     "\xA9", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80",
                        "\xC0\x80", "\xFF", "  ",       "\n  ",         "[]",
                        "{}",       "},",   "],",       "name",         "\"age\": 4"}) {
    v->pieces.push_back(p);
  }
  v->pieces.push_back("");  // a control token: never allowed
  v->pieces.push_back("");  // the end token
  v->is_eog.assign(v->pieces.size(), 0);
  v->is_eog.back() = 1;
  v->index();
  return v;
}

// Samples from random logits under the constraint until the end token; returns the text.
std::string generate(const std::shared_ptr<const Grammar>& g, const std::shared_ptr<const TokenVocabulary>& vocab,
                     uint64_t seed, int max_tokens, bool* ended) {
  TokenConstraint c(g, vocab);
  SamplerConfig cfg;
  cfg.temperature = 1.0f;
  cfg.top_k = 0;
  cfg.top_p = 1.0f;
  cfg.min_p = 0.0f;
  cfg.seed = seed;
  Sampler sampler(cfg);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const auto n = static_cast<int32_t>(vocab->pieces.size());
  std::vector<float> logits(static_cast<size_t>(n));
  std::string out;
  *ended = false;
  for (int i = 0; i < max_tokens; ++i) {
    if (c.must_end()) {
      *ended = true;
      break;
    }
    for (float& l : logits) l = normal(rng);
    const int64_t n_allowed = c.mask(logits.data(), n);
    EXPECT_GT(n_allowed, 0);
    // The trie walk agrees with probing every token on its own.
    int64_t n_finite = 0;
    for (int32_t t = 0; t < n; ++t) {
      const bool finite = logits[static_cast<size_t>(t)] != -std::numeric_limits<float>::infinity();
      n_finite += finite;
      EXPECT_EQ(finite, c.allows(t)) << "token " << t << " after " << out;
    }
    EXPECT_EQ(n_finite, n_allowed);
    const int32_t t = sampler.sample(logits.data(), n);
    EXPECT_TRUE(c.allows(t)) << "token " << t;
    EXPECT_TRUE(c.accept(t).ok()) << "token " << t;
    if (vocab->is_eog[static_cast<size_t>(t)] != 0) {
      *ended = true;
      break;
    }
    out += vocab->pieces[static_cast<size_t>(t)];
  }
  return out;
}

const char* kPersonSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer"},
    "score": {"type": "number"},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 3},
    "kind": {"enum": ["a", "b", 1, null, {"k": [true]}]},
    "ok": {"type": "boolean"},
    "nested": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"], "additionalProperties": false},
    "choice": {"anyOf": [{"type": "string", "minLength": 2, "maxLength": 3}, {"type": "integer"}, {"type": "null"}]},
    "fixed": {"const": "v1"},
    "maybe": {"type": ["string", "null"], "maxLength": 2}
  },
  "required": ["name", "age", "nested"],
  "additionalProperties": false
})";

TEST(JsonSchemaGrammar, RandomLogitsAlwaysGiveValidJson) {
  const auto vocab = test_vocab();
  JsonGrammarLimits small;
  small.max_any_depth = 3;
  const std::vector<std::string> schemas = {
      kPersonSchema,
      R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4})",
      R"({"type": "object"})",
      R"({"anyOf": [{"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]}, {"type": "array", "maxItems": 2, "items": {"type": "null"}}]})",
      R"({"type": "string", "minLength": 3, "maxLength": 8})",
      R"({"type": "object", "properties": {}, "additionalProperties": false})",
  };
  int ended_count = 0, total = 0;
  std::set<std::string> distinct;
  for (const std::string& text : schemas) {
    const Json schema = Json::parse(text);
    auto g = json_schema_grammar(schema, small);
    ASSERT_TRUE(g.ok()) << g.error().message;
    for (uint64_t seed = 1; seed <= 25; ++seed) {
      bool ended = false;
      const std::string out = generate(*g, vocab, seed, 4000, &ended);
      ++total;
      if (!ended) continue;  // cut by the token budget: a prefix, reported as "length" upstream
      ++ended_count;
      distinct.insert(out);
      const Json v = Json::parse(out, nullptr, /*allow_exceptions=*/false);
      ASSERT_FALSE(v.is_discarded()) << "schema " << text << " seed " << seed << " produced unparsable " << out;
      EXPECT_TRUE(valid(v, schema)) << "schema " << text << " seed " << seed << " produced invalid " << out;
    }
  }
  // Bounded strings and containers end quickly; allow a few unbounded walks to hit the budget.
  EXPECT_GE(ended_count, total * 9 / 10) << ended_count << " of " << total << " ended";
  EXPECT_GE(distinct.size(), static_cast<size_t>(ended_count) * 8 / 10) << "random walks should differ";
}

TEST(JsonSchemaGrammar, AnyObjectGrammarProducesObjects) {
  const auto vocab = test_vocab();
  JsonGrammarLimits small;
  small.max_any_depth = 2;
  const auto g = json_object_grammar(small);
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    bool ended = false;
    const std::string out = generate(g, vocab, seed, 4000, &ended);
    if (!ended) continue;
    const Json v = Json::parse(out, nullptr, false);
    ASSERT_FALSE(v.is_discarded()) << out;
    EXPECT_TRUE(v.is_object()) << out;
  }
}

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.accept(text) && m.is_complete();
}

TEST(JsonSchemaGrammar, AcceptsExactlyTheValidDocuments) {
  auto g = json_schema_grammar(Json::parse(kPersonSchema));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_TRUE(accepts(*g, R"({"name":"Ann","age":41,"nested":{"x":1.5e3}})"));
  EXPECT_TRUE(accepts(*g,
                      " {\n  \"name\": \"\\u00e9\xE2\x82\xAC\",\n  \"age\": -7,\n  \"tags\": [\"ab\", \"\"],\n  "
                      "\"nested\": {\"x\": 0},\n  \"fixed\": \"v1\"\n}"));
  EXPECT_TRUE(accepts(*g, R"({"name":"","age":0,"kind":{"k":[true]},"nested":{"x":-0.25},"choice":null})"));
  EXPECT_FALSE(accepts(*g, R"({"age":41,"nested":{"x":1}})"));                          // name is required
  EXPECT_FALSE(accepts(*g, R"({"name":"A","age":4.5,"nested":{"x":1}})"));              // integer
  EXPECT_FALSE(accepts(*g, R"({"name":"A","age":4,"nested":{"x":1,"y":2}})"));          // closed object
  EXPECT_FALSE(accepts(*g, R"({"name":"A","age":4,"nested":{"x":1},"extra":1})"));      // closed object
  EXPECT_FALSE(accepts(*g, R"({"name":"0123456789abc","age":4,"nested":{"x":1}})"));    // maxLength 12
  EXPECT_FALSE(accepts(*g, R"({"name":"\ud800","age":4,"nested":{"x":1}})"));           // lone surrogate
  EXPECT_FALSE(accepts(*g, "{\"name\":\"\xC0\x80\",\"age\":4,\"nested\":{\"x\":1}}"));  // overlong UTF-8
  EXPECT_FALSE(accepts(*g, R"({"name":"A","age":01,"nested":{"x":1}})"));               // leading zero
  EXPECT_FALSE(accepts(*g, R"({"name":"A","age":1,"nested":{"x":1}} )"));               // nothing after
  EXPECT_FALSE(accepts(*g, R"({"name":"A","age":1,"nested":{"x":1},"choice":"a"})"));   // minLength 2
}

TEST(JsonSchemaGrammar, TokenConstraintForcesTheEnd) {
  auto g = json_schema_grammar(Json::parse(R"({"const": [1]})"));
  ASSERT_TRUE(g.ok());
  auto vocab = test_vocab();
  TokenConstraint c(*g, vocab);
  const auto eos = static_cast<int32_t>(vocab->pieces.size() - 1);
  EXPECT_FALSE(c.allows(eos));
  EXPECT_FALSE(c.accept(eos).ok());
  for (char ch : std::string("[1]")) {
    ASSERT_TRUE(c.accept(ch - 0x20).ok()) << ch;
  }
  EXPECT_TRUE(c.must_end());
  EXPECT_TRUE(c.allows(eos));
  EXPECT_FALSE(c.allows(' ' - 0x20));
  EXPECT_FALSE(c.allows(eos - 1));  // the control token
}

TEST(JsonSchemaGrammar, UnsupportedSchemasAreClearErrors) {
  auto expect_error = [](const char* schema, const char* needle) {
    auto g = json_schema_grammar(Json::parse(schema));
    ASSERT_FALSE(g.ok()) << schema;
    EXPECT_NE(g.error().message.find(needle), std::string::npos) << g.error().message;
  };
  expect_error(R"({"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}})",
               "$.properties.age: the keyword 'minimum' is not supported");
  expect_error(R"({"type": "date"})", "$.type is 'date'");
  expect_error(R"({"type": "array", "minItems": 3, "maxItems": 2})", "maxItems 2 is below minItems 3");
  expect_error(R"({"type": "array", "maxItems": 100000})", "$.maxItems must be an integer in [0, 1024]");
  expect_error(R"({"enum": []})", "$.enum must be a non-empty array");
  expect_error(R"({"type": "object", "properties": {"a": false}})", "$.properties.a: the schema is false");
  expect_error(R"({"type": "object", "required": ["b"], "additionalProperties": false})",
               "'b' is required but not among");
  expect_error(R"({"oneOf": [{"type": "string"}]})", "the keyword 'oneOf' is not supported");
  expect_error(R"([1])", "$: a schema must be an object or a boolean");
  {
    Json big = Json::parse(R"({"type": "object", "properties": {}})");
    for (int i = 0; i < 100; ++i)
      big["properties"]["p" + std::to_string(i)] = Json::parse(R"({"type": "string", "maxLength": 1024})");
    auto g = json_schema_grammar(big);
    ASSERT_FALSE(g.ok());
    EXPECT_NE(g.error().message.find("the schema is too large"), std::string::npos) << g.error().message;
  }
}

// Issue 40 finding 7: an enum of 40,000 values sharing a prefix took 22 s per request. It compiles
// to a trie, so the matcher keeps one parse alive (not one per value), accepts exactly the values,
// and a larger enum is a clear error.
TEST(JsonSchemaGrammar, LargeEnumWithASharedPrefixIsATrie) {
  Json schema = Json::parse(R"({"type": "string", "enum": []})");
  char buf[64];
  for (int i = 0; i < 40000; ++i) {
    std::snprintf(buf, sizeof(buf), "shared_common_prefix_value_%06d", i);
    schema["enum"].push_back(buf);
  }
  schema["enum"].push_back("shared");  // a value that is a prefix of the others
  schema["enum"].push_back(7);
  auto g = json_schema_grammar(schema);
  ASSERT_TRUE(g.ok()) << g.error().message;
  GrammarMatcher m(*g);
  EXPECT_LE(m.n_stacks(), 8u);  // whitespace and the first byte of '"shared...' and '7'; was 40,002
  ASSERT_TRUE(m.accept("\"shared_common_prefix_value_0"));
  EXPECT_LE(m.n_stacks(), 8u);      // was 40,000
  EXPECT_FALSE(m.can_accept("4"));  // 040000 and up are not values
  ASSERT_TRUE(m.accept("39999\""));
  EXPECT_TRUE(m.is_complete());
  for (const char* ok : {"\"shared\"", "7", " \"shared_common_prefix_value_000000\""}) {
    GrammarMatcher v(*g);
    EXPECT_TRUE(v.accept(ok) && v.is_complete()) << ok;
  }
  for (const char* bad : {"\"shared_\"", "\"shared_common_prefix_value_04\"", "8", "\"\""}) {
    GrammarMatcher v(*g);
    EXPECT_FALSE(v.accept(bad) && v.is_complete()) << bad;
  }
  // 120,000 values (4 MB, > 120 s before): refused at once.
  Json huge = Json::parse(R"({"enum": []})");
  for (int i = 0; i < 120000; ++i) huge["enum"].push_back(i);
  auto e = json_schema_grammar(huge);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("$.enum has 120000 entries but at most 65536 are allowed"), std::string::npos)
      << e.error().message;
  // Values whose bytes pass the grammar's size: refused by size.
  Json long_values = Json::parse(R"({"enum": []})");
  for (int i = 0; i < 300; ++i) long_values["enum"].push_back(std::string(8000, 'a') + std::to_string(i));
  e = json_schema_grammar(long_values);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("the schema is too large"), std::string::npos) << e.error().message;
}

// The matcher's de-duplication: alternatives that reach the same tops (many equal enum values in
// an anyOf) leave one stack each, and the work per byte stays linear (hash set, not a search).
TEST(JsonSchemaGrammar, ManyEqualAlternativesCollapse) {
  Json schema = Json::parse(R"({"anyOf": []})");
  for (int i = 0; i < 20000; ++i) schema["anyOf"].push_back(Json::parse(R"({"const": "same"})"));
  auto g = json_schema_grammar(schema);
  ASSERT_TRUE(g.ok()) << g.error().message;
  GrammarMatcher m(*g);
  ASSERT_TRUE(m.accept("\"sa"));
  EXPECT_EQ(m.n_stacks(), 1u);
  ASSERT_TRUE(m.accept("me\""));
  EXPECT_TRUE(m.is_complete());
}

}  // namespace
}  // namespace sniper
