// SPDX-License-Identifier: MIT
// The agent's interactive loop on cli::LineEditor (the line editor `sniper chat` uses: libedit on
// a terminal, plain lines otherwise), with slash-command completion, the Ctrl-C rules and /loop
// wake-ups while idle at the prompt (see repl.h).
#include "agent/repl.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>

#include "agent/slash_commands.h"
#include "cli/interrupt.h"
#include "cli/line_editor.h"

namespace sniper::agent {

namespace {

// After a piped line: the /loop iterations that fall due while stdin has nothing more to say.
void drain_loop(Agent& agent) {
  while (agent.loop_active() && std::cin.peek() == EOF && !interrupt_flag().load()) {
    if (agent.loop_due(std::chrono::steady_clock::now())) agent.run_loop_iteration();
    else ::usleep(100000);
  }
}

}  // namespace

std::atomic<bool>& interrupt_flag() { return cli::interrupt_requested(); }

void install_sigint_handler() { cli::install_interrupt_handler(/*second_ends_process=*/false); }

bool confirm_on_terminal(const std::string& question) {
  std::cout << question << " [y/N] " << std::flush;
  std::string answer;
  while (true) {
    if (interrupt_flag().load()) {
      std::cout << "\n";
      return false;
    }
    pollfd p{0, POLLIN, 0};
    int n = ::poll(&p, 1, 200);
    if (n <= 0) continue;
    char ch = 0;
    ssize_t r = ::read(0, &ch, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    if (ch == '\n' || ch == '\r') break;
    answer += ch;
  }
  size_t b = answer.find_first_not_of(" \t");
  return b != std::string::npos && (answer[b] == 'y' || answer[b] == 'Y');
}

int run_repl(Agent& agent, const std::string& banner) {
  install_sigint_handler();
  std::cout << banner << std::flush;
  cli::LineEditorOptions options;
  options.history_path = cli::state_file_path("agent_history");
  for (const std::string& name : complete_slash("")) options.completions.push_back("/" + name);
  options.wake = [&agent] { return agent.loop_due(std::chrono::steady_clock::now()); };
  std::unique_ptr<cli::LineEditor> editor = cli::LineEditor::open(options);

  bool last_was_empty_interrupt = false;
  while (true) {
    interrupt_flag().store(false);
    const cli::ReadResult r = editor->read(agent.prompt());
    if (r.status == cli::ReadStatus::kWake) {
      std::cout << "\n";
      agent.run_loop_iteration();
      continue;
    }
    if (r.status == cli::ReadStatus::kInterrupted) {
      if (r.was_empty && last_was_empty_interrupt) {
        std::cout << "\n";
        break;
      }
      last_was_empty_interrupt = r.was_empty;
      std::cout << "^C" << (r.was_empty ? "  (Ctrl-C again or Ctrl-D to quit)" : "") << "\n" << std::flush;
      continue;
    }
    if (r.status == cli::ReadStatus::kEof) {
      if (editor->interactive()) std::cout << "\n";
      break;  // Ctrl-D / end of input
    }
    last_was_empty_interrupt = false;
    if (r.text.find_first_not_of(" \t\n") == std::string::npos) continue;
    editor->add_history(r.text);
    interrupt_flag().store(false);
    const bool keep_going = agent.handle_line(r.text);
    std::cout.flush();
    if (!keep_going) break;
    if (!editor->interactive()) drain_loop(agent);
  }
  return agent.unanswered() > 0 ? 1 : 0;
}

}  // namespace sniper::agent
