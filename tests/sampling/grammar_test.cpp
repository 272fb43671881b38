// SPDX-License-Identifier: MIT
// Tests of Grammar and GrammarMatcher: byte sets, alternatives, nullable rules, tail-call
// repetition at constant stack depth, probing without changing state, completion, and
// validate() rejecting left recursion and dangling references.
#include "sampling/grammar.h"

#include <gtest/gtest.h>

#include <string>

namespace sniper {
namespace {

// digits ::= [0-9] digits | [0-9] ; root ::= "[" digits "]" | "x"
std::shared_ptr<const Grammar> digits_grammar() {
  Grammar g;
  const int32_t digits = g.add_rule("digits");
  ByteSet d;
  d.add_range('0', '9');
  g.add_alternative(digits, {Grammar::bytes(d), Grammar::ref(digits)});
  g.add_alternative(digits, {Grammar::bytes(d)});
  const int32_t root = g.add_rule("root");
  g.add_alternative(root, {Grammar::byte('['), Grammar::ref(digits), Grammar::byte(']')});
  g.add_alternative(root, {Grammar::byte('x')});
  g.set_root(root);
  EXPECT_TRUE(g.validate().ok());
  return std::make_shared<const Grammar>(std::move(g));
}

TEST(Grammar, MatchesSentencesAndRejectsOthers) {
  auto g = digits_grammar();
  for (std::string ok : {"x", "[1]", "[0123456789]"}) {
    GrammarMatcher m(g);
    EXPECT_TRUE(m.accept(ok)) << ok;
    EXPECT_TRUE(m.is_complete()) << ok;
    EXPECT_TRUE(m.next_bytes().empty()) << ok;
  }
  for (std::string bad : {"y", "[]", "[1a]", "x1", "[1]]"}) {
    GrammarMatcher m(g);
    EXPECT_FALSE(m.accept(bad)) << bad;
  }
  GrammarMatcher m(g);
  ASSERT_TRUE(m.accept("[12"));
  EXPECT_FALSE(m.is_complete());
  EXPECT_TRUE(m.next_bytes().has(']'));
  EXPECT_TRUE(m.next_bytes().has('7'));
  EXPECT_FALSE(m.next_bytes().has('x'));
}

TEST(Grammar, RejectedBytesLeaveTheStateUnchanged) {
  GrammarMatcher m(digits_grammar());
  ASSERT_TRUE(m.accept("[4"));
  EXPECT_FALSE(m.accept("5x"));  // '5' would match, 'x' not: nothing is consumed
  EXPECT_TRUE(m.can_accept("]"));
  EXPECT_TRUE(m.can_accept("56]"));
  EXPECT_FALSE(m.can_accept("]]"));
  ASSERT_TRUE(m.accept("]"));
  EXPECT_TRUE(m.is_complete());
}

TEST(Grammar, TailRepetitionKeepsTheStackSetSmall) {
  GrammarMatcher m(digits_grammar());
  ASSERT_TRUE(m.accept("["));
  for (int i = 0; i < 5000; ++i) ASSERT_TRUE(m.accept("7"));
  EXPECT_LE(m.n_stacks(), 4u);
  ASSERT_TRUE(m.accept("]"));
  EXPECT_TRUE(m.is_complete());
}

TEST(Grammar, NullableRulesAndEmptySentence) {
  Grammar g;
  const int32_t opt = g.add_rule("opt");
  g.add_alternative(opt, {});
  g.add_alternative(opt, {Grammar::byte('a')});
  const int32_t root = g.add_rule("root");
  g.add_alternative(root, {Grammar::ref(opt), Grammar::ref(opt), Grammar::byte('b')});
  g.set_root(root);
  ASSERT_TRUE(g.validate().ok());
  auto gp = std::make_shared<const Grammar>(std::move(g));
  for (std::string ok : {"b", "ab", "aab"}) {
    GrammarMatcher m(gp);
    EXPECT_TRUE(m.accept(ok) && m.is_complete()) << ok;
  }
  GrammarMatcher m(gp);
  EXPECT_FALSE(m.accept("aaab"));
}

TEST(Grammar, ValidateRejectsLeftRecursionAndEmptyRules) {
  {
    Grammar g;
    const int32_t a = g.add_rule("a");
    const int32_t b = g.add_rule("b");
    g.add_alternative(b, {});
    g.add_alternative(a, {Grammar::ref(b), Grammar::ref(a), Grammar::byte('x')});  // a -> b? a
    g.add_alternative(a, {Grammar::byte('y')});
    g.set_root(a);
    Status st = g.validate();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("'a' is left-recursive"), std::string::npos) << st.error().message;
  }
  {
    Grammar g;
    const int32_t a = g.add_rule("lonely");
    g.set_root(a);
    Status st = g.validate();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("'lonely' has no alternatives"), std::string::npos) << st.error().message;
  }
}

}  // namespace
}  // namespace sniper
