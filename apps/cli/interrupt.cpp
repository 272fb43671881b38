// SPDX-License-Identifier: MIT
#include "interrupt.h"

#include <signal.h>

namespace sniper::cli {

namespace {

std::atomic<bool> g_interrupt{false};
std::atomic<bool> g_second_ends{false};

void on_sigint(int) {
  if (g_interrupt.exchange(true) && g_second_ends.load()) {
    // Nothing acted on the first Ctrl-C: end the process as the default action would.
    signal(SIGINT, SIG_DFL);
    raise(SIGINT);
  }
}

}  // namespace

std::atomic<bool>& interrupt_requested() { return g_interrupt; }

void install_interrupt_handler(bool second_ends_process) {
  g_interrupt.store(false);
  g_second_ends.store(second_ends_process);
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
}

}  // namespace sniper::cli
