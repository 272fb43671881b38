// SPDX-License-Identifier: MIT
// Splits a command line into the argv of each stage of a pipeline without a shell, for the
// commands the agent may run without asking (shell_tool.h). Accepts only what it can reproduce
// exactly: words separated by spaces and tabs, '...' and "..." quoting, a backslash before one
// character, `|` between stages, and unquoted * ? [ globs, expanded like sh does (sorted, dot
// files only when the pattern starts with '.', left as they are when nothing matches). Refuses,
// with the reason, everything else a shell would interpret: newlines and other control
// characters, comments, $ and backticks anywhere outside single quotes, redirections, ; & && ||,
// subshells and groups, brace and tilde expansion, history, assignments before a command, and
// globs mixed with quoting. Whatever parses here is what /bin/sh would have passed to execve.
// Pure functions (parse_command_line); expand_globs reads directories, a bounded number of
// entries.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace sniper::agent {

// One word as typed: its text after quote removal, and whether it holds an unquoted glob.
struct Word {
  std::string text;
  bool glob = false;
};

// The stages of a pipeline (one stage: a plain command).
struct ParsedLine {
  std::vector<std::vector<Word>> stages;
};

// Bounds on what auto-run accepts (longer lines ask).
inline constexpr size_t kMaxLineBytes = 8192;
inline constexpr size_t kMaxStages = 8;
inline constexpr size_t kMaxArgs = 4096;  // per stage, after glob expansion
inline constexpr size_t kMaxArgBytes = 256u << 10;
inline constexpr size_t kMaxGlobEntries = 20000;  // directory entries the globs of one line may read

// Parses `line`; an Error says which construct a shell would interpret.
[[nodiscard]] Result<ParsedLine> parse_command_line(std::string_view line);

// The argv of each stage: glob words expanded against `cwd` component by component, as sh
// (dash) does: matches sorted bytewise, a leading dot matched only by a dot, no match: the
// pattern itself. Errors: more than kMaxGlobEntries directory entries read (a glob that would
// walk the file system), too many arguments or bytes, an empty path component, a match whose
// name holds a control character.
[[nodiscard]] Result<std::vector<std::vector<std::string>>> expand_globs(const ParsedLine& line,
                                                                         const std::string& cwd);

// `s` quoted for /bin/sh so that it reads back as one word (for messages and round trips).
std::string shell_quote(std::string_view s);

}  // namespace sniper::agent
