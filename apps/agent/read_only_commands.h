// SPDX-License-Identifier: MIT
// The commands the agent runs without asking, and for each the exact options it may be given:
// deny by default. An argv passes only if its command is listed (or named by the user's
// extra_read_only config, which accepts any arguments) and every option is one of that
// command's listed spellings: no abbreviations (GNU's `--o` for `--output`), no `--opt=value`
// unless the option takes a value, no option that writes (sort -o, tree -o, file -C), executes
// (sort --compress-program, rg --pre, rg --hostname-bin, find -exec) or changes the system
// (date -s, hostname NAME); positional arguments are checked where they can write (uniq IN OUT)
// or set (date MMDDhhmm). git runs only its read subcommands with listed options, hardened
// against configuration-driven execution (harden_argv).
// The list is a policy, not a proof: auto-run commands also run in a sandbox that cannot write
// files or use the network (read_only_sandbox.h). Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace sniper::agent {

// Checks one stage's argv (argv[0] is the command name as typed). An Error names the command
// and the argument that is not allowed.
[[nodiscard]] Status check_read_only_argv(const std::vector<std::string>& argv,
                                          const std::vector<std::string>& extra_commands);

// The argv to execute for an argv check_read_only_argv accepted: git gets options and -c
// settings that turn off configuration-driven programs (fsmonitor, external diff, textconv,
// pager, hooks, signature checks, submodule recursion, network transports), rg gets --no-config.
// Other argvs are returned unchanged.
std::vector<std::string> harden_argv(const std::vector<std::string>& argv);

// Environment settings for every auto-run stage: name=value to set, or name alone to unset
// (GIT_CONFIG_NOSYSTEM=1, GIT_OPTIONAL_LOCKS=0, no GIT_EXTERNAL_DIFF, pagers off, ...).
const std::vector<std::string>& hardened_environment();

}  // namespace sniper::agent
