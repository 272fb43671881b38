// SPDX-License-Identifier: MIT
// Slash command prefix resolution, completion and help; markdown rendering to ANSI.
#include "agent/slash_commands.h"

#include <gtest/gtest.h>

#include <random>

#include "agent/terminal_render.h"

namespace sniper::agent {
namespace {

TEST(Slash, TableIsSortedAndUnique) {
  const auto& t = slash_commands();
  for (size_t i = 1; i < t.size(); ++i) EXPECT_LT(std::string(t[i - 1].name), std::string(t[i].name));
  for (const char* required : {"agent",  "raw",   "search",  "shell", "stats",   "clear", "quit",   "model",
                               "bench",  "cost",  "good",    "bad",   "improve", "save",  "branch", "restore",
                               "system", "tools", "compact", "loop",  "stop",    "btw",   "auto",   "think"}) {
    EXPECT_EQ(resolve_slash(required).kind, SlashResolution::Kind::kFound) << required;
  }
}

TEST(Slash, PrefixResolution) {
  EXPECT_EQ(resolve_slash("/sta").name, "stats");
  EXPECT_EQ(resolve_slash("/q").name, "quit");
  EXPECT_EQ(resolve_slash("/comp").name, "compact");
  EXPECT_EQ(resolve_slash("/stop").name, "stop");  // exact beats prefix
  EXPECT_EQ(resolve_slash("bt").name, "btw");
  auto amb = resolve_slash("/s");
  EXPECT_EQ(amb.kind, SlashResolution::Kind::kAmbiguous);
  EXPECT_GE(amb.candidates.size(), 5u);
  auto st = resolve_slash("/st");
  EXPECT_EQ(st.kind, SlashResolution::Kind::kAmbiguous);
  EXPECT_EQ(st.candidates, (std::vector<std::string>{"stats", "stop"}));
  EXPECT_EQ(resolve_slash("/xyz").kind, SlashResolution::Kind::kUnknown);
  EXPECT_EQ(resolve_slash("/").kind, SlashResolution::Kind::kAmbiguous);
}

TEST(Slash, CompletionAndHelp) {
  EXPECT_EQ(complete_slash("/re"), (std::vector<std::string>{"read", "restore"}));
  EXPECT_EQ(complete_slash("").size(), slash_commands().size());
  std::string help = slash_help();
  EXPECT_NE(help.find("/loop <interval> <prompt>"), std::string::npos);
  EXPECT_NE(help.find("/btw <question>"), std::string::npos);
}

TEST(Slash, SplitLine) {
  std::string w, r;
  split_slash_line("  /search  weather in paris  ", &w, &r);
  EXPECT_EQ(w, "search");
  EXPECT_EQ(r, "weather in paris");
  split_slash_line("/stats", &w, &r);
  EXPECT_EQ(w, "stats");
  EXPECT_EQ(r, "");
}

const char* kDoc =
    "# Title\n"
    "Some **bold** and `code` here, 2*3 = 6.\n"
    "- item one\n"
    "* item two\n"
    "  - nested\n"
    "```python\n"
    "print(\"**not bold**\")\n"
    "```\n"
    "Done.";

TEST(Markdown, RendersToAnsi) {
  MarkdownRenderer r(true);
  std::string out = r.feed(kDoc) + r.finish();
  EXPECT_EQ(out,
            "\x1b[1mTitle\x1b[0m\n"
            "Some \x1b[1mbold\x1b[22m and \x1b[36mcode\x1b[39m here, 2*3 = 6.\n"
            "\u2022 item one\n"
            "\u2022 item two\n"
            "  \u2022 nested\n"
            "\x1b[2m```python\x1b[0m\n"
            "\x1b[36mprint(\"**not bold**\")\x1b[0m\n"
            "\x1b[2m```\x1b[0m\n"
            "Done.");
}

TEST(Markdown, ChunkingDoesNotChangeOutput) {
  MarkdownRenderer whole(true);
  std::string expected = whole.feed(kDoc) + whole.finish();
  std::mt19937 rng(7);
  std::string doc = kDoc;
  for (int trial = 0; trial < 50; ++trial) {
    MarkdownRenderer r(true);
    std::string out;
    size_t pos = 0;
    while (pos < doc.size()) {
      size_t n = 1 + rng() % 5;
      out += r.feed(doc.substr(pos, n));
      pos += n;
    }
    out += r.finish();
    EXPECT_EQ(out, expected) << "trial " << trial;
  }
}

TEST(Markdown, StreamsEarlyAndPlainModePassesThrough) {
  MarkdownRenderer r(true);
  EXPECT_EQ(r.feed("Hello wor"), "Hello wor");  // mid-line text is shown immediately
  EXPECT_EQ(r.feed("ld *"), "ld ");             // a lone '*' waits for the next character
  EXPECT_EQ(r.feed("x\n"), "*x\n");
  EXPECT_EQ(r.feed("-"), "");      // could be a list item
  EXPECT_EQ(r.feed("- "), "-- ");  // not a list item: the line goes out as-is
  MarkdownRenderer plain(false);
  EXPECT_EQ(plain.feed("# **x**"), "# **x**");
  EXPECT_EQ(plain.finish(), "");
}

}  // namespace
}  // namespace sniper::agent
