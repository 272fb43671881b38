// SPDX-License-Identifier: MIT
// Shell tool: classifies a command line as read-only (safe to run without asking) against an
// allowlist, and runs commands with /bin/sh -c in a working directory with a timeout (the whole
// process group is killed) and an output cap. Conservative by design: anything the classifier
// cannot prove read-only (command substitution, backticks, output redirection, subshells,
// variable assignments, unknown commands, dangerous flags) needs confirmation.
// Invariants: run_shell never leaves a child behind; output never exceeds the cap (+ a marker).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"

namespace sniper::agent {

// True when every command of a pipeline/list is on the read-only allowlist (plus `extra`
// command names) with no writing flags, and the line has no output redirection, command
// substitution, backticks, process substitution, subshells or assignments.
bool is_read_only_command(const std::string& command_line, const std::vector<std::string>& extra = {});

struct ShellResult {
  int exit_code = -1;  // exit status, or 128+signal when killed by a signal
  bool timed_out = false;
  bool cancelled = false;
  bool truncated = false;  // output was longer than the cap
  std::string output;      // stdout and stderr interleaved, at most cap bytes
  double elapsed_s = 0;
};

struct ShellOptions {
  std::string cwd = ".";
  double timeout_s = 20;
  size_t output_cap_bytes = 16384;
  const std::atomic<bool>* cancel = nullptr;  // polled every 50 ms; set -> kill the group
};

// Runs `command` with /bin/sh -c in its own process group, stdin from /dev/null. Errors only for
// failures to start (pipe/fork); a non-zero exit is a normal result.
[[nodiscard]] Result<ShellResult> run_shell(const std::string& command, const ShellOptions& options);

// Asks the user; returns true to go ahead. Injected so the core logic runs without a terminal.
using ConfirmFn = std::function<bool(const std::string& question)>;

struct ShellDecision {
  bool ran = false;
  bool read_only = false;
  ShellResult result;
};

// Runs `command` if it is read-only or `confirm` approves it; otherwise does nothing.
[[nodiscard]] Result<ShellDecision> run_shell_confirmed(const std::string& command, const ShellOptions& options,
                                                        const std::vector<std::string>& extra_read_only,
                                                        const ConfirmFn& confirm);

// Extracts a command from a model reply: the first fenced code block's first non-empty lines,
// or the first line; strips a leading "$ " prompt and surrounding backticks.
std::string extract_command(const std::string& reply);

}  // namespace sniper::agent
