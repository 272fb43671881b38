// SPDX-License-Identifier: MIT
// Shell tool: decides whether a command line may run without asking, and runs commands with a
// timeout (the whole process group is killed) and an output cap.
// A command runs without asking only when (1) it parses without a shell into a pipeline of argv
// (command_line.h: no newline, comment, substitution, redirection, list or other shell syntax;
// globs expanded as sh would), (2) every stage's command and every option is on the read-only
// list (read_only_commands.h: deny by default, exact spellings, git hardened), and (3) the
// kernel supports the read-only sandbox (read_only_sandbox.h: no file writes, no network).
// Such a command is execve'd directly, stage by stage, in the sandbox: what was checked is what
// runs. Anything else is shown with the reason and needs confirmation, then runs with /bin/sh -c
// as typed. docs/agent-shell-safety.md explains the design.
// Invariants: no run leaves a child behind; output never exceeds the cap (+ a marker).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"

namespace sniper::agent {

// A command line the agent may run without asking: each stage's argv as checked (globs
// expanded) and as executed (harden_argv).
struct ReadOnlyPlan {
  std::vector<std::vector<std::string>> argv;
  std::vector<std::vector<std::string>> exec;
};

// Parses `command_line` without a shell (globs expanded under `cwd`) and checks every stage
// against the read-only list plus the `extra` command names (which take any arguments). An
// Error says why the command needs confirmation. Does not look at the sandbox.
[[nodiscard]] Result<ReadOnlyPlan> plan_read_only(const std::string& command_line,
                                                  const std::vector<std::string>& extra = {},
                                                  const std::string& cwd = ".");

// Why `command_line` needs confirmation: plan_read_only's error, or that the kernel has no
// sandbox; "" when it may run without asking.
std::string confirmation_reason(const std::string& command_line, const std::vector<std::string>& extra = {},
                                const std::string& cwd = ".");

// confirmation_reason(...).empty().
bool is_read_only_command(const std::string& command_line, const std::vector<std::string>& extra = {},
                          const std::string& cwd = ".");

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

// Runs a plan's stages as a pipeline without a shell: each stage execve'd (its command found on
// PATH) in the read-only sandbox, in its own session, stdin of the first from /dev/null, stdout
// of each into the next, stderr of all and stdout of the last captured. Errors: no sandbox, a
// command not found on PATH, pipe/fork failures; a stage the sandbox refuses exits 126.
[[nodiscard]] Result<ShellResult> run_read_only(const ReadOnlyPlan& plan, const ShellOptions& options);

// Asks the user; returns true to go ahead. Injected so the core logic runs without a terminal.
using ConfirmFn = std::function<bool(const std::string& question)>;

struct ShellDecision {
  bool ran = false;
  bool read_only = false;  // ran without asking, in the sandbox
  std::string reason;      // why it needed confirmation ("" when read_only)
  ShellResult result;
};

// Runs `command` without asking (run_read_only) when it may, else asks `confirm` ("Run `...`?";
// the reason is in ShellDecision::reason) and runs it with run_shell when approved; otherwise
// does nothing.
[[nodiscard]] Result<ShellDecision> run_shell_confirmed(const std::string& command, const ShellOptions& options,
                                                        const std::vector<std::string>& extra_read_only,
                                                        const ConfirmFn& confirm);

// Extracts a command from a model reply: the first fenced code block's first non-empty lines,
// or the first line; strips a leading "$ " prompt and surrounding backticks.
std::string extract_command(const std::string& reply);

}  // namespace sniper::agent
