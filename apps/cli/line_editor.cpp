// SPDX-License-Identifier: MIT
// The libedit editor and the plain reader behind LineEditor (see line_editor.h). The libedit
// character reader is ours (EL_GETCFN): it polls stdin every 100 ms and gives up with EINTR as
// soon as the SIGINT flag is set, so el_gets() returns and the next read starts a fresh line.
#include "line_editor.h"

#include <histedit.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>

#include "interrupt.h"

namespace sniper::cli {

namespace {

bool make_dirs(const std::string& path) {
  std::string partial;
  for (size_t pos = 0; pos != std::string::npos;) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Plain lines from stdin (scripts, pipes).
class PlainReader : public LineEditor {
 public:
  ReadResult read(const std::string&) override {
    ReadResult r;
    std::string line, text;
    bool in_block = false;
    while (true) {
      if (!std::getline(std::cin, line)) {
        if (interrupt_requested().exchange(false)) {
          std::cin.clear();  // a read cut by the signal is no end of input
          r.status = ReadStatus::kInterrupted;
          r.was_empty = text.empty();
        }
        if (!text.empty() && r.status != ReadStatus::kInterrupted) {
          r.status = ReadStatus::kLine;  // the unfinished input still counts
          r.text = text;
        }
        return r;
      }
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!continue_input(line, &text, &in_block)) break;
    }
    r.status = ReadStatus::kLine;
    r.text = text;
    return r;
  }
  void add_history(const std::string&) override {}
  bool interactive() const override { return false; }
};

struct EditState {
  std::string prompt;
  std::vector<std::string> completions;
  std::function<bool()> wake;
  bool wake_allowed = false;       // nothing typed yet in this read (no continued lines either)
  bool woke = false;               // the read ended because wake() was true
  bool interrupted_empty = false;  // the Ctrl-C came at an empty line
};

EditState* state_of(EditLine* el) {
  void* data = nullptr;
  el_get(el, EL_CLIENTDATA, &data);
  return static_cast<EditState*>(data);
}

char* prompt_fn(EditLine* el) { return state_of(el)->prompt.data(); }

bool line_empty(EditLine* el) {
  const LineInfo* li = el_line(el);
  return li->lastchar == li->buffer;
}

// One character (UTF-8 decoded) for libedit; -1 with EINTR on Ctrl-C or a wake-up.
int getc_fn(EditLine* el, wchar_t* c) {
  EditState* s = state_of(el);
  unsigned char bytes[4];
  int have = 0, need = 1;
  while (true) {
    if (interrupt_requested().load()) {
      s->interrupted_empty = line_empty(el);
      errno = EINTR;
      return -1;
    }
    if (have == 0 && s->wake && s->wake_allowed && line_empty(el) && s->wake()) {
      s->woke = true;
      errno = EINTR;
      return -1;
    }
    pollfd p{STDIN_FILENO, POLLIN, 0};
    const int n = ::poll(&p, 1, 100);
    if (n < 0 && errno != EINTR) return -1;
    if (n <= 0) continue;
    unsigned char b = 0;
    const ssize_t r = ::read(STDIN_FILENO, &b, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) return 0;
    if (have == 0) need = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 1;
    bytes[have++] = b;
    if (have < need) continue;
    uint32_t cp = need == 1 ? bytes[0] : need == 2 ? bytes[0] & 0x1F : need == 3 ? bytes[0] & 0x0F : bytes[0] & 0x07;
    for (int i = 1; i < need; ++i) cp = (cp << 6) | (bytes[i] & 0x3F);
    *c = static_cast<wchar_t>(cp);
    return 1;
  }
}

// Tab at the start of a line: completes a command word, lists the candidates when ambiguous.
unsigned char complete_fn(EditLine* el, int) {
  const LineInfo* li = el_line(el);
  const std::string before(li->buffer, li->cursor);
  if (before.empty() || before.find(' ') != std::string::npos) return CC_REFRESH_BEEP;
  std::vector<std::string> matches;
  for (const std::string& w : state_of(el)->completions) {
    if (w.compare(0, before.size(), before) == 0) matches.push_back(w);
  }
  if (matches.empty()) return CC_REFRESH_BEEP;
  if (matches.size() == 1) {
    el_insertstr(el, (matches[0].substr(before.size()) + " ").c_str());
    return CC_REFRESH;
  }
  std::string common = matches[0];
  for (const std::string& m : matches) {
    size_t k = 0;
    while (k < common.size() && k < m.size() && common[k] == m[k]) ++k;
    common.resize(k);
  }
  if (common.size() > before.size()) {
    el_insertstr(el, common.substr(before.size()).c_str());
    return CC_REFRESH;
  }
  std::string listing = "\n";
  for (const std::string& m : matches) listing += m + "  ";
  std::fputs((listing + "\n").c_str(), stdout);
  std::fflush(stdout);
  return CC_REDISPLAY;
}

class EditlineEditor : public LineEditor {
 public:
  explicit EditlineEditor(const LineEditorOptions& options) : options_(options) {
    state_.completions = options.completions;
    state_.wake = options.wake;
    el_ = el_init("sniper", stdin, stdout, stderr);
    hist_ = history_init();
    HistEvent ev;
    history(hist_, &ev, H_SETSIZE, 1000);
    history(hist_, &ev, H_SETUNIQUE, 1);
    if (!options_.history_path.empty()) history(hist_, &ev, H_LOAD, options_.history_path.c_str());
    el_set(el_, EL_CLIENTDATA, &state_);
    el_set(el_, EL_EDITOR, "emacs");
    el_set(el_, EL_PROMPT, prompt_fn);
    el_set(el_, EL_HIST, history, hist_);
    el_set(el_, EL_GETCFN, getc_fn);
    // The wide-char call: the narrow el_set(EL_ADDFN) wcsdup()s name and help and never frees them.
    el_wset(el_, EL_ADDFN, L"sniper-complete", L"complete a command", complete_fn);
    el_set(el_, EL_BIND, "^I", "sniper-complete", nullptr);
    el_source(el_, nullptr);  // ~/.editrc
  }
  ~EditlineEditor() override {
    history_end(hist_);
    el_end(el_);
  }

  ReadResult read(const std::string& prompt) override {
    ReadResult r;
    std::string text;
    bool in_block = false;
    state_.prompt = prompt;
    while (true) {
      state_.wake_allowed = text.empty() && !in_block;
      state_.woke = false;
      int count = 0;
      const char* raw = el_gets(el_, &count);
      if (raw == nullptr) {
        if (state_.woke) {
          r.status = ReadStatus::kWake;
          return r;
        }
        if (interrupt_requested().exchange(false)) {
          r.status = ReadStatus::kInterrupted;
          r.was_empty = state_.interrupted_empty && text.empty();
        }
        return r;  // kEof: Ctrl-D at an empty line
      }
      std::string line(raw);
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      if (!continue_input(line, &text, &in_block)) break;
      state_.prompt = options_.continuation_prompt;
    }
    r.status = ReadStatus::kLine;
    r.text = text;
    return r;
  }

  void add_history(const std::string& entry) override {
    if (entry.find_first_not_of(" \t\n") == std::string::npos) return;
    HistEvent ev;
    history(hist_, &ev, H_ENTER, entry.c_str());
    if (!options_.history_path.empty()) history(hist_, &ev, H_SAVE, options_.history_path.c_str());
  }
  bool interactive() const override { return true; }

 private:
  LineEditorOptions options_;
  EditState state_;
  EditLine* el_ = nullptr;
  History* hist_ = nullptr;
};

}  // namespace

std::unique_ptr<LineEditor> LineEditor::open(const LineEditorOptions& options) {
  if (::isatty(STDIN_FILENO) && ::isatty(STDOUT_FILENO)) return std::make_unique<EditlineEditor>(options);
  return std::make_unique<PlainReader>();
}

std::string state_file_path(const std::string& name) {
  std::string dir;
  const char* xdg = std::getenv("XDG_STATE_HOME");
  const char* home = std::getenv("HOME");
  if (xdg != nullptr && xdg[0] == '/') {
    dir = std::string(xdg) + "/sniper";
  } else if (home != nullptr && home[0] == '/') {
    dir = std::string(home) + "/.local/state/sniper";
  } else {
    return "";
  }
  return make_dirs(dir) ? dir + "/" + name : "";
}

bool continue_input(const std::string& line, std::string* text, bool* in_block) {
  constexpr const char* kQuotes = "\"\"\"";
  auto ends_with_quotes = [](const std::string& s) {
    return s.size() >= 3 && s.compare(s.size() - 3, 3, kQuotes) == 0;
  };
  if (*in_block) {
    if (ends_with_quotes(line)) {
      *text += line.substr(0, line.size() - 3);
      while (!text->empty() && text->back() == '\n') text->pop_back();
      *in_block = false;
      return false;
    }
    *text += line + "\n";
    return true;
  }
  if (line.compare(0, 3, kQuotes) == 0) {
    const std::string rest = line.substr(3);
    if (ends_with_quotes(rest)) {
      *text += rest.substr(0, rest.size() - 3);
      return false;
    }
    *in_block = true;
    if (!rest.empty()) *text += rest + "\n";
    return true;
  }
  if (!line.empty() && line.back() == '\\') {
    *text += line.substr(0, line.size() - 1) + "\n";
    return true;
  }
  *text += line;
  return false;
}

}  // namespace sniper::cli
