// SPDX-License-Identifier: MIT
// The slash command table (names, argument synopsis, help) and prefix resolution: an exact name or
// an unambiguous prefix resolves (/sta -> /stats); an ambiguous prefix lists its candidates. Used
// by the agent (dispatch), the REPL (Tab completion) and --help.
// Invariants: the table is sorted by name and names are unique; pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sniper::agent {

struct SlashCommand {
  const char* name;  // without '/'
  const char* args;  // synopsis, "" when none
  const char* help;
};

// All commands, sorted by name.
const std::vector<SlashCommand>& slash_commands();

struct SlashResolution {
  enum class Kind { kFound, kAmbiguous, kUnknown };
  Kind kind = Kind::kUnknown;
  std::string name;                     // kFound: the full command name
  std::vector<std::string> candidates;  // kAmbiguous: matching names
};

// Resolves a command word (with or without the leading '/').
SlashResolution resolve_slash(std::string_view word);

// Names starting with `prefix` (no '/'), sorted.
std::vector<std::string> complete_slash(std::string_view prefix);

// The help text: one line per command, "  /name args  help".
std::string slash_help();

// Splits "/cmd rest of line" into the command word (without '/') and the trimmed rest.
void split_slash_line(std::string_view line, std::string* word, std::string* rest);

}  // namespace sniper::agent
