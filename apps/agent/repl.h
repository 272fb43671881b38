// SPDX-License-Identifier: MIT
// The interactive loop around Agent, on the line editor `sniper chat` uses (cli::LineEditor:
// libedit with persistent history in $XDG_STATE_HOME/sniper/agent_history or
// ~/.local/state/sniper/agent_history, multi-line input with a trailing backslash or a """
// block), Tab completion of slash commands, a SIGINT handler that sets the cancel flag the
// streaming loop polls (Ctrl-C stops a generation; at the prompt the first Ctrl-C clears the
// line, a second one at an empty prompt quits; Ctrl-D quits), y/N confirmation, and /loop
// wake-ups while idle at the prompt. Without a terminal on stdin and stdout it reads plain lines
// (for scripts and pipes).
// Invariants: one Repl per process (it owns the SIGINT handler while it runs).
#pragma once

#include <atomic>
#include <string>

#include "agent/agent.h"

namespace sniper::agent {

// The process-wide Ctrl-C flag (set by the SIGINT handler, cleared by the REPL before each line).
std::atomic<bool>& interrupt_flag();

// Installs the SIGINT handler (no SA_RESTART, so blocking reads return EINTR).
void install_sigint_handler();

// Asks a y/N question on the terminal (default no). Ctrl-C or EOF answers no.
bool confirm_on_terminal(const std::string& question);

// Runs the loop until /quit, Ctrl-D or a second Ctrl-C at an empty prompt. Returns the exit code:
// 1 when a request got no answer because no backend could be reached, else 0.
int run_repl(Agent& agent, const std::string& banner);

}  // namespace sniper::agent
