// SPDX-License-Identifier: MIT
// The slash commands of `sniper chat` and the settings they change: what a line means (a message
// or a command), the command table (help text, Tab completion, "did you mean"), and /set's
// parsing and validation. Pure functions: no model, no terminal (tests/cli/chat_commands_test.cpp).
// Media input (issue 39) plugs in here: /image and /audio are in the table with
// ChatCommandInfo::needs_media set, and cmd_chat.cpp asks ChatMedia for support before attaching.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "sampling/sampler.h"

namespace sniper::cli {

// What a chat carries between turns: flags set it at start, /set and /system change it.
struct ChatSettings {
  SamplerConfig sampler;
  int64_t n_predict = 1024;   // most tokens per reply; -1 = until end of generation
  std::optional<bool> think;  // enable_thinking for the template; nullopt: the template's default
  std::string system;         // the system prompt; "" = none
};

struct ChatCommand {
  std::string name;  // without the slash, lower case: "set"
  std::string arg;   // the rest of the line, trimmed
};

struct ChatCommandInfo {
  const char* name;  // "set"
  const char* args;  // "[NAME VALUE]"
  const char* help;  // one line
  bool needs_media;  // /image, /audio: only with a model that takes media input (issue 39)
};

// Every command, in help order.
const std::vector<ChatCommandInfo>& chat_commands();

// A line that starts with '/' followed by a letter or '?' is a command ("//text" is the message
// "/text", and "/ text" or a path like "/usr/bin" after text stays a message); nullopt otherwise.
std::optional<ChatCommand> parse_chat_command(const std::string& line);
// The message a non-command line sends: "//x" -> "/x"; other lines as they are.
std::string chat_message_text(const std::string& line);
// The table entry for `name` (aliases included: "?" -> help, "exit"/"bye" -> quit); null if none.
const ChatCommandInfo* find_chat_command(const std::string& name);
// "unknown command /sett; did you mean /set? (/help lists the commands)".
std::string unknown_chat_command_message(const std::string& name);
// The /help text: one line per command, then how multi-line input and Ctrl-C work.
std::string chat_help_text();
// "/help", "/set", ... for Tab completion.
std::vector<std::string> chat_completions();

// /set NAME VALUE: one setting (temp, top-k, top-p, min-p, seed, repeat-penalty, repeat-last-n,
// presence-penalty, frequency-penalty, n-predict, think, system; '_' and '-' alike, llama.cpp
// and Ollama spellings accepted). Returns "temp = 0.7". An Error names the setting, the value and
// the allowed range, and leaves *settings unchanged.
[[nodiscard]] Result<std::string> apply_chat_setting(ChatSettings* settings, const std::string& arg);
// Every setting, one "name = value" per line (what /set without arguments prints).
std::string describe_chat_settings(const ChatSettings& settings);

}  // namespace sniper::cli
