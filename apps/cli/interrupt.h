// SPDX-License-Identifier: MIT
// Ctrl-C for the CLI's interactive work (`run`, `chat`): while the handler is installed, SIGINT
// sets a flag that the generation callbacks poll, so the work stops at the next token or prompt
// chunk and the command goes on (run prints its figures, chat keeps the conversation). With
// `second_ends_process`, a further Ctrl-C while the flag is still set (nothing polled it yet, e.g.
// a long read) ends the process as an uninstalled handler would; chat never does this (its
// conversation outlives a slow token). Invariants: one handler per process; the flag is
// process-wide.
#pragma once

#include <atomic>

namespace sniper::cli {

// The flag SIGINT sets. The command clears it when it has acted on it.
std::atomic<bool>& interrupt_requested();

// Installs the SIGINT handler (no SA_RESTART, so a blocking read returns EINTR) and clears the flag.
void install_interrupt_handler(bool second_ends_process);

}  // namespace sniper::cli
