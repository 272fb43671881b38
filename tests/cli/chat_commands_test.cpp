// SPDX-License-Identifier: MIT
// `sniper chat`'s commands, settings and multi-line input, without a model or a terminal.
#include "cli/chat_commands.h"

#include <gtest/gtest.h>

#include "cli/line_editor.h"

namespace sniper::cli {
namespace {

TEST(ChatCommands, WhatIsACommand) {
  auto c = parse_chat_command("  /set   temp 0.7 ");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->name, "set");
  EXPECT_EQ(c->arg, "temp 0.7");
  EXPECT_TRUE(parse_chat_command("/HELP").has_value());
  EXPECT_EQ(parse_chat_command("/HELP")->name, "help");
  EXPECT_TRUE(parse_chat_command("/?").has_value());
  EXPECT_FALSE(parse_chat_command("//not a command").has_value());
  EXPECT_FALSE(parse_chat_command("/usr/bin/ls is what?").has_value());
  EXPECT_FALSE(parse_chat_command("/ spaced").has_value());
  EXPECT_FALSE(parse_chat_command("hello /set").has_value());
  EXPECT_EQ(chat_message_text("//etc is a folder"), "/etc is a folder");
  EXPECT_EQ(chat_message_text("plain"), "plain");
}

TEST(ChatCommands, AliasesAndSuggestions) {
  ASSERT_NE(find_chat_command("exit"), nullptr);
  EXPECT_STREQ(find_chat_command("exit")->name, "quit");
  EXPECT_STREQ(find_chat_command("bye")->name, "quit");
  EXPECT_STREQ(find_chat_command("?")->name, "help");
  EXPECT_EQ(find_chat_command("sett"), nullptr);
  EXPECT_NE(unknown_chat_command_message("sett").find("did you mean /set?"), std::string::npos);
  EXPECT_NE(find_chat_command("image"), nullptr);
  EXPECT_TRUE(find_chat_command("image")->needs_media);
  const std::string help = chat_help_text();
  for (const char* name : {"/help", "/clear", "/system", "/set", "/save", "/load", "/quit", "/image", "/audio"}) {
    EXPECT_NE(help.find(name), std::string::npos) << name;
  }
}

TEST(ChatSettings, SetChangesOneSettingAndValidates) {
  ChatSettings s;
  auto r = apply_chat_setting(&s, "temp 0.7");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, "temp = 0.7");
  EXPECT_FLOAT_EQ(s.sampler.temperature, 0.7f);
  ASSERT_TRUE(apply_chat_setting(&s, "top_k=20").ok());
  EXPECT_EQ(s.sampler.top_k, 20);
  ASSERT_TRUE(apply_chat_setting(&s, "temperature 0").ok());
  EXPECT_EQ(s.sampler.temperature, 0.0f);
  ASSERT_TRUE(apply_chat_setting(&s, "max-tokens 64").ok());
  EXPECT_EQ(s.n_predict, 64);
  ASSERT_TRUE(apply_chat_setting(&s, "think off").ok());
  ASSERT_TRUE(s.think.has_value());
  EXPECT_FALSE(*s.think);
  ASSERT_TRUE(apply_chat_setting(&s, "system You are terse.").ok());
  EXPECT_EQ(s.system, "You are terse.");
  ASSERT_TRUE(apply_chat_setting(&s, "system -").ok());
  EXPECT_EQ(s.system, "");
}

TEST(ChatSettings, BadValuesNameTheRangeAndChangeNothing) {
  ChatSettings s;
  const ChatSettings before = s;
  auto r = apply_chat_setting(&s, "top-p 1.5");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "top-p is 1.5 but must be in [0, 1]");
  EXPECT_EQ(s.sampler.top_p, before.sampler.top_p);
  auto r2 = apply_chat_setting(&s, "temp hot");
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.error().message.find("'hot'"), std::string::npos);
  auto r3 = apply_chat_setting(&s, "tmp 1");
  ASSERT_FALSE(r3.ok());
  EXPECT_NE(r3.error().message.find("did you mean temp?"), std::string::npos) << r3.error().message;
  auto r4 = apply_chat_setting(&s, "n-predict 0");
  ASSERT_FALSE(r4.ok());
  auto r5 = apply_chat_setting(&s, "seed");
  ASSERT_FALSE(r5.ok());
  EXPECT_NE(r5.error().message.find("needs a value"), std::string::npos);
  EXPECT_EQ(s.n_predict, before.n_predict);
  EXPECT_NE(describe_chat_settings(s).find("temp = 0.8"), std::string::npos);
}

// Feeds lines to continue_input until it stops asking for more; returns the input.
std::string join(const std::vector<std::string>& lines, size_t* used) {
  std::string text;
  bool in_block = false;
  for (*used = 0; *used < lines.size();) {
    if (!continue_input(lines[(*used)++], &text, &in_block)) break;
  }
  return text;
}

TEST(LineInput, BackslashAndTripleQuotesContinue) {
  size_t used = 0;
  EXPECT_EQ(join({"one \\", "two \\", "three", "four"}, &used), "one \ntwo \nthree");
  EXPECT_EQ(used, 3u);
  EXPECT_EQ(join({"\"\"\"", "alpha", "", "beta", "\"\"\"", "next"}, &used), "alpha\n\nbeta");
  EXPECT_EQ(used, 5u);
  EXPECT_EQ(join({"\"\"\"first", "last\"\"\""}, &used), "first\nlast");
  EXPECT_EQ(join({"\"\"\"single\"\"\""}, &used), "single");
  EXPECT_EQ(used, 1u);
  EXPECT_EQ(join({"plain"}, &used), "plain");
}

}  // namespace
}  // namespace sniper::cli
