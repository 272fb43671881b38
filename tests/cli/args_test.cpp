// SPDX-License-Identifier: MIT
// The CLI's flag parser and help layout: llama.cpp spellings land on the canonical flag, unknown
// flags name the nearest known one, unquoted prompt words are told apart from a model argument,
// and the help text is grouped, aligned and wrapped to the width asked for.
#include "cli/args.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/common.h"

namespace sniper::cli {
namespace {

Result<Args> parse(std::vector<std::string> words, const std::vector<FlagSpec>& specs) {
  static std::vector<std::string> storage;
  storage = std::move(words);
  storage.insert(storage.begin(), {"sniper", "run"});
  static std::vector<char*> argv;
  argv.clear();
  for (std::string& w : storage) argv.push_back(w.data());
  return Args::parse("run", static_cast<int>(argv.size()), argv.data(), 2, specs);
}

std::vector<FlagSpec> run_specs() {
  return concat(concat(model_flags(), sampling_flags()),
                {{"--prompt", "-p", "TEXT", "prompt text"},
                 {"--n-predict", "-n", "N", "tokens", nullptr, "--predict"},
                 {"--system", "-sys", "TEXT", "system prompt", nullptr, "--system-prompt"}});
}

TEST(Args, LlamaCppSpellingsReachTheCanonicalFlag) {
  auto a = parse({"-c", "512", "-s", "7", "--predict", "9", "-sys", "be brief", "--temperature=0.5", "-ngl", "99"},
                 run_specs());
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->get_string("--ctx"), "512");
  EXPECT_EQ(a->get_string("--seed"), "7");
  EXPECT_EQ(a->get_string("--n-predict"), "9");
  EXPECT_EQ(a->get_string("--system"), "be brief");
  EXPECT_EQ(a->get_string("--temp"), "0.5");
  EXPECT_TRUE(a->has("--n-gpu-layers"));
  EXPECT_EQ(a->spelling("--ctx"), "-c");
  auto b = parse({"--ctx-size", "1024"}, run_specs());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->get_string("--ctx"), "1024");
  // Errors name the flag as it was typed.
  auto bad = b->get_int("--ctx", 0, 1, 10);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--ctx-size (--ctx) is 1024"), std::string::npos) << bad.error().message;
}

TEST(Args, UnknownFlagNamesTheNearestOne) {
  auto a = parse({"--ctx-szie", "10"}, run_specs());
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("did you mean --ctx-size?"), std::string::npos) << a.error().message;
  auto b = parse({"--tmp", "1"}, run_specs());
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("did you mean --temp?"), std::string::npos) << b.error().message;
  auto c = parse({"--completely-unrelated"}, run_specs());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message.find("did you mean"), std::string::npos) << c.error().message;
}

TEST(Args, NearestSpellingNeedsACloseMatch) {
  EXPECT_EQ(nearest_spelling("--seeed", {"--seed", "--top-k"}), "--seed");
  EXPECT_EQ(nearest_spelling("chta", {"chat", "run"}), "chat");
  EXPECT_EQ(nearest_spelling("-x", {"-m", "-p"}), "");
  EXPECT_EQ(nearest_spelling("--frobnicate", {"--seed", "--top-k"}), "");
}

TEST(Args, UnquotedPromptWordsAskForQuotes) {
  auto a = parse({"-m", "model.gguf", "-p", "Once", "upon", "a", "time"}, run_specs());
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->positional_info().size(), 3u);
  EXPECT_EQ(a->positional_info()[0].follows, "-p Once");
  Status st = a->check_positionals(0, "");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "'upon a time' came after -p Once as separate words: quote the whole prompt, as in -p \"Once upon a "
            "time\"");
  // A word that follows no flag value is an unexpected argument.
  auto b = parse({"model.gguf", "other.gguf"}, run_specs());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->positional_info()[0].follows, "");
  Status st2 = b->check_positionals(1, "one MODEL");
  ASSERT_FALSE(st2.ok());
  EXPECT_NE(st2.error().message.find("unexpected argument 'other.gguf'"), std::string::npos);
  EXPECT_TRUE(b->check_positionals(2, "").ok());
}

TEST(Args, DoubleDashEndsTheFlags) {
  auto a = parse({"--", "-p", "x"}, run_specs());
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->positionals(), (std::vector<std::string>{"-p", "x"}));
  EXPECT_FALSE(a->has("--prompt"));
}

TEST(Args, HelpIsGroupedAlignedAndWrapped) {
  const std::string text = format_usage("run", "MODEL -p PROMPT", run_specs(), "Generates text.", 72);
  EXPECT_EQ(text.rfind("usage: sniper run MODEL -p PROMPT\n", 0), 0u);
  // The command's own flags first, the llama.cpp compatibility group last.
  const size_t options = text.find("\nOptions:\n"), model = text.find("\nModel:\n"),
               sampling = text.find("\nSampling:\n"), compat = text.find(std::string("\n") + kCompatGroup + ":\n");
  ASSERT_NE(options, std::string::npos);
  ASSERT_NE(model, std::string::npos);
  ASSERT_NE(sampling, std::string::npos);
  ASSERT_NE(compat, std::string::npos);
  EXPECT_LT(options, model);
  EXPECT_LT(model, compat);
  EXPECT_LT(sampling, compat);
  EXPECT_NE(text.find("[also --ctx-size]"), std::string::npos);
  // Every line fits the width, and every help column starts at the same place.
  std::istringstream lines(text);
  std::string line;
  size_t help_col = 0;
  while (std::getline(lines, line)) {
    EXPECT_LE(line.size(), 72u) << line;
    if (line.rfind("  -p, --prompt TEXT", 0) == 0) help_col = line.find("prompt text");
  }
  ASSERT_GT(help_col, 0u);
  EXPECT_EQ(text.find("  -s, --seed S") + help_col, text.find("random seed"));
}

TEST(Args, WrapTextKeepsWordsAndIndents) {
  EXPECT_EQ(wrap_text("aaa bbb ccc ddd eee fff", 24, 4, false), "aaa bbb ccc ddd eee\n    fff");
  EXPECT_EQ(wrap_text("first\nsecond", 80, 2, false), "first\n  second");
  EXPECT_EQ(wrap_text("one two", 80, 4, true), "    one two");
}

TEST(Table, ColumnsAlign) {
  const std::string t = format_table({{"NAME", "SIZE"}, {"a/b:Q4_K_M", "1.2 GB"}, {"c", "12.5 GB"}}, {1});
  EXPECT_EQ(t,
            "NAME            SIZE\n"
            "a/b:Q4_K_M    1.2 GB\n"
            "c            12.5 GB\n");
}

}  // namespace
}  // namespace sniper::cli
