// SPDX-License-Identifier: MIT
// libedit REPL with history, slash completion, Ctrl-C handling and /loop wake-ups (see repl.h).
// The character reader is ours (EL_GETCFN): it polls stdin every 200 ms so a Ctrl-C or a due
// /loop iteration can end el_gets() (returning -1 with EINTR), which then starts a fresh line.
#include "agent/repl.h"

#include <histedit.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>

#include "agent/config.h"
#include "agent/slash_commands.h"

namespace sniper::agent {

namespace {

std::atomic<bool> g_interrupt{false};

void on_sigint(int) { g_interrupt.store(true); }

struct ReplState {
  Agent* agent = nullptr;
  std::string prompt;
  bool loop_wakeup = false;
  bool interrupted_empty = false;  // the last Ctrl-C came at an empty line
};

ReplState* state_of(EditLine* el) {
  void* data = nullptr;
  el_get(el, EL_CLIENTDATA, &data);
  return static_cast<ReplState*>(data);
}

char* prompt_fn(EditLine* el) { return state_of(el)->prompt.data(); }

bool line_empty(EditLine* el) {
  const LineInfo* li = el_line(el);
  return li->lastchar == li->buffer;
}

// Reads one character (UTF-8 decoded) for libedit, waking up for Ctrl-C and /loop.
int getc_fn(EditLine* el, wchar_t* c) {
  ReplState* s = state_of(el);
  unsigned char bytes[4];
  int have = 0, need = 1;
  while (true) {
    if (g_interrupt.load()) {
      s->interrupted_empty = line_empty(el);
      errno = EINTR;
      return -1;
    }
    if (have == 0 && line_empty(el) && s->agent->loop_due(std::chrono::steady_clock::now())) {
      s->loop_wakeup = true;
      errno = EINTR;
      return -1;
    }
    pollfd p{0, POLLIN, 0};
    int n = ::poll(&p, 1, 200);
    if (n < 0 && errno != EINTR) return -1;
    if (n <= 0) continue;
    unsigned char b = 0;
    ssize_t r = ::read(0, &b, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) return 0;
    if (have == 0) {
      need = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 1;
    }
    bytes[have++] = b;
    if (have < need) continue;
    uint32_t cp = need == 1 ? bytes[0] : need == 2 ? bytes[0] & 0x1F : need == 3 ? bytes[0] & 0x0F : bytes[0] & 0x07;
    for (int i = 1; i < need; ++i) cp = (cp << 6) | (bytes[i] & 0x3F);
    *c = static_cast<wchar_t>(cp);
    return 1;
  }
}

// Tab: complete a slash command at the start of the line, listing candidates when ambiguous.
unsigned char complete_fn(EditLine* el, int) {
  const LineInfo* li = el_line(el);
  std::string before(li->buffer, li->cursor);
  if (before.empty() || before[0] != '/' || before.find(' ') != std::string::npos) return CC_REFRESH_BEEP;
  std::string prefix = before.substr(1);
  std::vector<std::string> matches = complete_slash(prefix);
  if (matches.empty()) return CC_REFRESH_BEEP;
  if (matches.size() == 1) {
    std::string rest = matches[0].substr(prefix.size()) + " ";
    el_insertstr(el, rest.c_str());
    return CC_REFRESH;
  }
  std::string common = matches[0];
  for (const std::string& m : matches) {
    size_t k = 0;
    while (k < common.size() && k < m.size() && common[k] == m[k]) ++k;
    common.resize(k);
  }
  if (common.size() > prefix.size()) {
    el_insertstr(el, common.substr(prefix.size()).c_str());
    return CC_REFRESH;
  }
  std::string listing = "\n";
  for (const std::string& m : matches) listing += "/" + m + "  ";
  listing += "\n";
  std::fputs(listing.c_str(), stdout);
  std::fflush(stdout);
  return CC_REDISPLAY;
}

std::string history_path() {
  std::string dir = state_dir();
  if (!make_dirs(dir)) return "";
  return dir + "/agent_history";
}

// Plain line loop when stdin is not a terminal.
int run_plain(Agent& agent) {
  std::string line;
  while (std::getline(std::cin, line)) {
    g_interrupt.store(false);
    if (!agent.handle_line(line)) return 0;
    while (agent.loop_active() && std::cin.peek() == EOF && !g_interrupt.load()) {
      if (agent.loop_due(std::chrono::steady_clock::now())) agent.run_loop_iteration();
      else ::usleep(100000);
    }
    std::cout.flush();
  }
  return agent.unanswered() > 0 ? 1 : 0;
}

}  // namespace

std::atomic<bool>& interrupt_flag() { return g_interrupt; }

void install_sigint_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: poll/read return EINTR
  sigaction(SIGINT, &sa, nullptr);
}

bool confirm_on_terminal(const std::string& question) {
  std::cout << question << " [y/N] " << std::flush;
  std::string answer;
  while (true) {
    if (g_interrupt.load()) {
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
  if (!::isatty(0)) return run_plain(agent);

  ReplState state;
  state.agent = &agent;
  EditLine* el = el_init("sniper", stdin, stdout, stderr);
  History* hist = history_init();
  HistEvent ev;
  history(hist, &ev, H_SETSIZE, 1000);
  history(hist, &ev, H_SETUNIQUE, 1);
  std::string hpath = history_path();
  if (!hpath.empty()) history(hist, &ev, H_LOAD, hpath.c_str());
  el_set(el, EL_CLIENTDATA, &state);
  el_set(el, EL_EDITOR, "emacs");
  el_set(el, EL_PROMPT, prompt_fn);
  el_set(el, EL_HIST, history, hist);
  el_set(el, EL_GETCFN, getc_fn);
  // The wide-char call: libedit's narrow el_set(EL_ADDFN) wcsdup()s name and help and never
  // frees them (a 164-byte leak LeakSanitizer reports at exit); static wide literals live on.
  el_wset(el, EL_ADDFN, L"sniper-complete", L"complete a slash command", complete_fn);
  el_set(el, EL_BIND, "^I", "sniper-complete", nullptr);
  el_source(el, nullptr);  // ~/.editrc

  int exit_code = 0;
  bool last_was_empty_interrupt = false;
  while (true) {
    state.prompt = agent.prompt();
    state.loop_wakeup = false;
    g_interrupt.store(false);
    int count = 0;
    const char* raw = el_gets(el, &count);
    if (!raw) {
      if (state.loop_wakeup) {
        std::cout << "\n";
        agent.run_loop_iteration();
        continue;
      }
      if (g_interrupt.load()) {
        g_interrupt.store(false);
        if (state.interrupted_empty && last_was_empty_interrupt) {
          std::cout << "\n";
          break;
        }
        last_was_empty_interrupt = state.interrupted_empty;
        std::cout << "^C" << (state.interrupted_empty ? "  (Ctrl-C again or Ctrl-D to quit)" : "") << "\n"
                  << std::flush;
        continue;
      }
      std::cout << "\n";
      break;  // Ctrl-D / EOF
    }
    last_was_empty_interrupt = false;
    std::string line(raw);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    history(hist, &ev, H_ENTER, line.c_str());
    if (!hpath.empty()) history(hist, &ev, H_SAVE, hpath.c_str());
    g_interrupt.store(false);
    bool keep_going = agent.handle_line(line);
    std::cout.flush();
    if (!keep_going) break;
  }
  if (!hpath.empty()) history(hist, &ev, H_SAVE, hpath.c_str());
  history_end(hist);
  el_end(el);
  return exit_code != 0 ? exit_code : agent.unanswered() > 0 ? 1 : 0;
}

}  // namespace sniper::agent
