// SPDX-License-Identifier: MIT
// GBNF (llama.cpp's grammar format; issue 40 finding 8): sentences accepted and refused, UTF-8
// classes checked code point by code point against their definition, acceptance compared with
// std::regex on every short string of a small alphabet, and errors that name the line and column.
#include "sampling/gbnf.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>

namespace sniper {
namespace {

std::shared_ptr<const Grammar> grammar(const std::string& text) {
  auto g = parse_gbnf(text);
  EXPECT_TRUE(g.ok()) << text << "\n" << (g.ok() ? "" : g.error().message);
  return g.ok() ? *g : nullptr;
}

bool matches(const std::shared_ptr<const Grammar>& g, const std::string& s) {
  GrammarMatcher m(g);
  return m.accept(s) && m.is_complete();
}

std::string utf8(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

TEST(Gbnf, LiteralsAlternativesAndReferences) {
  auto g = grammar(R"(# answers
root   ::= answer "." | "maybe"
answer ::= "yes" | "no"   # a comment after a rule
)");
  ASSERT_NE(g, nullptr);
  for (const char* ok : {"yes.", "no.", "maybe"}) EXPECT_TRUE(matches(g, ok)) << ok;
  for (const char* bad : {"yes", "maybe.", "", "no.."}) EXPECT_FALSE(matches(g, bad)) << bad;
}

TEST(Gbnf, ClassesRepetitionsGroupsAndEscapes) {
  auto g = grammar(R"(root ::= item ("," ws item)* "\n"
item ::= [a-z_]+ | num | str
num  ::= "-"? [0-9]{1,3} ("." [0-9]{2})?
str  ::= "\"" ( [^"\\] | "\\" ["\\nt] )* "\""
ws   ::= [ \t]{0,2}
)");
  ASSERT_NE(g, nullptr);
  for (const char* ok : {"a\n", "ab_c, -12.50,\t\"x\\\"y\"\n", "123,  9\n", "\"\"\n", "\"\\n\"\n"}) {
    EXPECT_TRUE(matches(g, ok)) << ok;
  }
  for (const char* bad : {"a", "1234\n", "1.5\n", "a,   b\n", "\"\\q\"\n", "\"x\n", "A\n"}) {
    EXPECT_FALSE(matches(g, bad)) << bad;
  }
  // Newlines are free inside a group and after '|'; hex and Unicode escapes.
  auto h = grammar("root ::= (\n  \"a\"\n  | \"\\x62\"\n) \"\\u00e9\" |\n  \"\\U0001F600\"\n");
  ASSERT_NE(h, nullptr);
  EXPECT_TRUE(matches(h, "a\xC3\xA9"));
  EXPECT_TRUE(matches(h, "b\xC3\xA9"));
  EXPECT_TRUE(matches(h, "\xF0\x9F\x98\x80"));
  EXPECT_FALSE(matches(h, "c\xC3\xA9"));
}

// Every code point is matched by a class exactly when it is in the class's ranges.
TEST(Gbnf, UnicodeClassesMatchExactlyTheirCodePoints) {
  struct Case {
    const char* rule;
    bool (*in)(uint32_t);
  } cases[] = {
      {"[a-c\\u00e9-\\u0101\\u4e00-\\u9fff\\U0001F600-\\U0001F64F]",
       [](uint32_t c) {
         return (c >= 'a' && c <= 'c') || (c >= 0xE9 && c <= 0x101) || (c >= 0x4E00 && c <= 0x9FFF) ||
                (c >= 0x1F600 && c <= 0x1F64F);
       }},
      {"[^a\\u0800-\\uffff]", [](uint32_t c) { return c != 'a' && (c < 0x800 || c > 0xFFFF); }},
      {".", [](uint32_t) { return true; }},
      {"[\\x00-\\x7f\\U00010000-\\U0010ffff]", [](uint32_t c) { return c < 0x80 || c >= 0x10000; }},
  };
  std::mt19937 rng(7);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.rule);
    auto g = grammar(std::string("root ::= ") + c.rule + "\n");
    ASSERT_NE(g, nullptr);
    std::vector<uint32_t> points;
    for (uint32_t edge : {0u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xD7FFu, 0xE000u, 0xFFFFu, 0x10000u, 0x10FFFFu, 0xE9u,
                          0x101u, 0x4E00u, 0x9FFFu, 0x1F600u, 0x1F64Fu, 0x3FFFFu, 0x40000u}) {
      for (int d = -2; d <= 2; ++d) points.push_back(edge + static_cast<uint32_t>(d));
    }
    for (int i = 0; i < 20000; ++i) points.push_back(rng() % 0x110000);
    for (uint32_t cp : points) {
      if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) continue;
      EXPECT_EQ(matches(g, utf8(cp)), c.in(cp)) << std::hex << cp;
    }
    // Surrogates and invalid sequences never match, even for '.'.
    EXPECT_FALSE(matches(g, "\xED\xA0\x80"));
    EXPECT_FALSE(matches(g, "\xC0\xAF"));
    EXPECT_FALSE(matches(g, "\xF4\x90\x80\x80"));
  }
}

// The grammar and a std::regex of the same language agree on every string of up to 7 bytes over
// the alphabet {a, b, c, e}.
TEST(Gbnf, AgreesWithRegexOnAllShortStrings) {
  const std::pair<const char*, const char*> cases[] = {
      {"root ::= (\"ab\" | [c]+)? \"e\"{1,3}", "(ab|c+)?e{1,3}"},
      {"root ::= x{2,} | \"b\"\nx ::= \"a\" | \"c\" \"e\"?", "(a|ce?){2,}|b"},
      {"root ::= ([a-c] \"e\")* \"a\"?", "([a-c]e)*a?"},
      {"root ::= \"a\"{0} \"b\"{2} (\"c\" | \"e\"){1,2}?", "bb(c|e){1,2}|bb"},
  };
  const std::string alphabet = "abce";
  for (const auto& [gbnf, re] : cases) {
    SCOPED_TRACE(gbnf);
    auto g = grammar(std::string(gbnf) + "\n");
    ASSERT_NE(g, nullptr);
    const std::regex r(re);
    std::vector<std::string> all = {""};
    for (size_t len = 0; len < 7; ++len) {
      std::vector<std::string> next;
      for (const std::string& s : all) {
        if (s.size() != len) continue;
        for (char ch : alphabet) next.push_back(s + ch);
      }
      all.insert(all.end(), next.begin(), next.end());
    }
    for (const std::string& s : all) EXPECT_EQ(matches(g, s), std::regex_match(s, r)) << "'" << s << "'";
  }
}

TEST(Gbnf, ErrorsNameTheLineAndColumn) {
  const std::pair<const char*, const char*> cases[] = {
      {"root ::= \"a\"\nvalue = \"b\"\n", "grammar line 2, column 7: expected '::=' after the rule name 'value'"},
      {"root ::= \"abc\n", "grammar line 1, column 10: the string literal is not closed"},
      {"root ::= [ab", "grammar line 1, column 10: the character class is not closed"},
      {"root ::= item\n", "grammar line 1, column 10: rule 'item' is used but never defined"},
      {"item ::= \"x\"\n", "the grammar has no 'root' rule"},
      {"root ::= \"a\"\nroot ::= \"b\"\n", "grammar line 2, column 1: rule 'root' is defined twice"},
      {"root ::= (\"a\" | \"b\"\n", "grammar line 2, column 1: expected ')' to close the group opened at column 10"},
      {"root ::= \"a\" )\n", "grammar line 1, column 14: expected the end of rule 'root' (a newline), found ')'"},
      {"root ::= * \"a\"\n", "grammar line 1, column 10: '*' has nothing before it to repeat"},
      {"root ::= \"a\"{2001}\n", "a repetition count is above 2000"},
      {"root ::= \"a\"{3,2}\n", "the repetition's maximum is below its minimum"},
      {"root ::= \"\\q\"\n", "grammar line 1, column 11: unknown escape '\\q'"},
      {"root ::= \"\\ud800\"\n", "not a Unicode scalar value"},
      {"root ::= \"\\x4\"\n", "expected 2 hex digits"},
      {"root ::= <[42]>\n", "token references (<[id]>, <token>, !<...>) are not supported"},
      {"root ::= [^\\x00-\\U0010ffff]\n", "the character class matches nothing"},
      {"root ::= [z-a]\n", "the range's end is below its start"},
      {"root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"\n", "grammar rule 'expr' is left-recursive"},
      {"root ::= \"a\" \xff\n", "grammar line 1, column 14: expected the end of rule 'root'"},
      {"::= \"a\"\n", "grammar line 1, column 1: expected a rule name, found ':'"},
  };
  for (const auto& [text, needle] : cases) {
    auto g = parse_gbnf(text);
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_NE(g.error().message.find(needle), std::string::npos) << text << "\n -> " << g.error().message;
  }
}

TEST(Gbnf, SizeIsBounded) {
  GbnfLimits small;
  small.max_bytes = 64;
  auto g = parse_gbnf("root ::= \"" + std::string(100, 'a') + "\"\n", small);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("the grammar is 112 bytes but at most 64 are allowed"), std::string::npos);
  // Nested repetitions share their rules (x{2000}{2000} is 4,000 symbols), but a long literal
  // repeated inline is refused by the symbol bound, quickly.
  g = parse_gbnf("root ::= ((((\"abcdefgh\"{2000}){2000}){2000}){2000})\n");
  ASSERT_TRUE(g.ok()) << g.error().message;
  g = parse_gbnf("root ::= \"" + std::string(2000, 'x') + "\"{1500}\n");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("symbols"), std::string::npos) << g.error().message;
  // A chain of 2000 rules each starting with the next: refused (the matcher would recurse 2000 deep).
  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 2000; ++i) chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " \"x\"\n";
  chain += "r2000 ::= \"y\"\n";
  g = parse_gbnf(chain);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("nests 2002 rules one inside the other"), std::string::npos) << g.error().message;
  g = parse_gbnf("root ::= " + std::string(100, '(') + "\"a\"" + std::string(100, ')') + "\n");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("groups nest deeper than 64 levels"), std::string::npos) << g.error().message;
}

}  // namespace
}  // namespace sniper
