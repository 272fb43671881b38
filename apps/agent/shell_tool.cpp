// SPDX-License-Identifier: MIT
// Read-only classification and timed, capped execution of shell commands (see shell_tool.h).
#include "agent/shell_tool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <set>

namespace sniper::agent {

namespace {

// Commands that only read (given the per-command flag checks below).
const std::set<std::string>& allowlist() {
  static const std::set<std::string> kCommands = {
      "ls",        "cat",      "head",  "tail",  "wc",       "pwd",    "echo",  "printf", "grep",     "egrep",
      "fgrep",     "rg",       "find",  "git",   "date",     "whoami", "uname", "df",     "du",       "id",
      "which",     "file",     "stat",  "tree",  "printenv", "ps",     "free",  "uptime", "basename", "dirname",
      "realpath",  "readlink", "nproc", "lscpu", "cut",      "tr",     "diff",  "cmp",    "md5sum",   "sha1sum",
      "sha256sum", "seq",      "true",  "false", "hostname", "sort",   "uniq",  "column", "nl",       "jq"};
  return kCommands;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Per-command argument checks for allowlisted commands that have writing or exec flags.
bool args_read_only(const std::vector<std::string>& words) {
  const std::string& cmd = words[0];
  auto any_arg = [&](const std::function<bool(const std::string&)>& pred) {
    for (size_t i = 1; i < words.size(); ++i) {
      if (pred(words[i])) return true;
    }
    return false;
  };
  if (cmd == "find") {
    static const std::set<std::string> kBad = {"-delete", "-exec",    "-execdir", "-ok", "-okdir",
                                               "-fprint", "-fprint0", "-fprintf", "-fls"};
    return !any_arg([](const std::string& a) { return kBad.count(a) > 0; });
  }
  if (cmd == "git") {
    static const std::set<std::string> kSub = {"status",    "log",   "diff",     "show",    "ls-files",
                                               "rev-parse", "blame", "shortlog", "describe"};
    if (words.size() < 2 || !kSub.count(words[1])) return false;
    return !any_arg([](const std::string& a) { return starts_with(a, "--output") || starts_with(a, "--ext-diff"); });
  }
  if (cmd == "date") return !any_arg([](const std::string& a) { return a == "-s" || starts_with(a, "--set"); });
  if (cmd == "sort")
    return !any_arg([](const std::string& a) { return starts_with(a, "-o") || starts_with(a, "--output"); });
  if (cmd == "tree" || cmd == "file") return !any_arg([](const std::string& a) { return a == "-o" || a == "-C"; });
  if (cmd == "rg") return !any_arg([](const std::string& a) { return starts_with(a, "--pre"); });
  if (cmd == "hostname")
    return !any_arg([](const std::string& a) { return !starts_with(a, "-") || a == "-F" || starts_with(a, "--file"); });
  if (cmd == "uniq") {
    int positional = 0;
    for (size_t i = 1; i < words.size(); ++i) positional += !starts_with(words[i], "-");
    return positional <= 1;  // `uniq in out` writes `out`
  }
  return true;
}

bool is_assignment(const std::string& word) {
  size_t eq = word.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  for (size_t i = 0; i < eq; ++i) {
    char c = word[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

}  // namespace

bool is_read_only_command(const std::string& line, const std::vector<std::string>& extra) {
  if (line.find('`') != std::string::npos || line.find("$(") != std::string::npos) return false;
  std::vector<std::vector<std::string>> segments(1);
  std::string word;
  bool in_word = false;
  bool expect_filename = false;  // after `<`
  auto end_word = [&]() {
    if (!in_word) return;
    if (expect_filename) expect_filename = false;
    else segments.back().push_back(word);
    word.clear();
    in_word = false;
  };
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    char next = i + 1 < line.size() ? line[i + 1] : '\0';
    if (c == '\'') {
      size_t close = line.find('\'', i + 1);
      if (close == std::string::npos) return false;
      word += line.substr(i + 1, close - i - 1);
      in_word = true;
      i = close;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size()) ++j;
        word += line[j];
      }
      if (j >= line.size()) return false;
      in_word = true;
      i = j;
    } else if (c == '\\') {
      if (next == '\0') return false;
      word += next;
      in_word = true;
      ++i;
    } else if (c == ' ' || c == '\t') {
      end_word();
    } else if (c == '>' || c == '(' || c == ')' || c == '{' || c == '}') {
      return false;  // output redirection, subshells, groups, process substitution
    } else if (c == '<') {
      if (next == '(' || next == '>') return false;
      end_word();
      if (next == '<') return false;  // here-documents: keep it simple
      expect_filename = true;
    } else if (c == ';' || c == '|' || c == '&' || c == '\n') {
      end_word();
      if (expect_filename) return false;
      if (c == '&' && next != '&') return false;  // background jobs
      if ((c == '&' && next == '&') || (c == '|' && (next == '|' || next == '&'))) ++i;
      segments.emplace_back();
    } else {
      if (c == '#' && !in_word) break;  // comment
      word += c;
      in_word = true;
    }
  }
  end_word();
  if (expect_filename) return false;
  bool any = false;
  for (const auto& words : segments) {
    if (words.empty()) continue;
    any = true;
    const std::string& cmd = words[0];
    if (is_assignment(cmd) || cmd.find('/') != std::string::npos) return false;
    bool listed = allowlist().count(cmd) > 0;
    for (const std::string& e : extra) listed = listed || e == cmd;
    if (!listed || !args_read_only(words)) return false;
  }
  return any;
}

Result<ShellResult> run_shell(const std::string& command, const ShellOptions& options) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return make_error("pipe failed: %s", std::strerror(errno));
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return make_error("fork failed: %s", std::strerror(errno));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::setpgid(0, 0);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    if (::chdir(options.cwd.c_str()) != 0) _exit(126);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ::setpgid(pid, pid);  // also from the parent, so the kill below cannot race the child's setpgid
  ::close(fds[1]);
  ShellResult r;
  auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(options.timeout_s));
  char buf[4096];
  bool eof = false;
  bool killed = false;
  while (!eof) {
    if (options.cancel && options.cancel->load()) {
      r.cancelled = true;
      break;
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      r.timed_out = true;
      break;
    }
    int wait_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
    pollfd p{fds[0], POLLIN, 0};
    int n = ::poll(&p, 1, wait_ms < 50 ? wait_ms : 50);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    ssize_t got = ::read(fds[0], buf, sizeof(buf));
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) {
      eof = true;
      break;
    }
    size_t room = options.output_cap_bytes > r.output.size() ? options.output_cap_bytes - r.output.size() : 0;
    if (static_cast<size_t>(got) > room) r.truncated = true;
    r.output.append(buf, std::min(room, static_cast<size_t>(got)));
  }
  if (!eof) {
    ::kill(-pid, SIGKILL);
    killed = true;
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!killed) ::kill(-pid, SIGKILL);  // leftover background children of the group
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  if (r.truncated) r.output += "\n[output truncated at " + std::to_string(options.output_cap_bytes) + " bytes]\n";
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

Result<ShellDecision> run_shell_confirmed(const std::string& command, const ShellOptions& options,
                                          const std::vector<std::string>& extra_read_only, const ConfirmFn& confirm) {
  ShellDecision d;
  d.read_only = is_read_only_command(command, extra_read_only);
  if (!d.read_only && !(confirm && confirm("Run `" + command + "`?"))) return d;
  SNIPER_ASSIGN_OR_RETURN(d.result, run_shell(command, options));
  d.ran = true;
  return d;
}

std::string extract_command(const std::string& reply) {
  std::string text = reply;
  // Drop a think block.
  size_t think_end = text.find("</think>");
  if (think_end != std::string::npos) text = text.substr(think_end + 8);
  size_t fence = text.find("```");
  std::string cmd;
  if (fence != std::string::npos) {
    size_t body = text.find('\n', fence);
    size_t close = body == std::string::npos ? std::string::npos : text.find("```", body);
    if (body != std::string::npos) {
      std::string block = text.substr(body + 1, close == std::string::npos ? std::string::npos : close - body - 1);
      // Keep the block's lines joined (a multi-line script is shown and confirmed as a whole).
      while (!block.empty() && (block.back() == '\n' || block.back() == ' ')) block.pop_back();
      cmd = block;
    }
  }
  if (cmd.empty()) {
    size_t b = text.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    size_t e = text.find('\n', b);
    cmd = text.substr(b, e == std::string::npos ? std::string::npos : e - b);
  }
  while (!cmd.empty() && (cmd.back() == '\r' || cmd.back() == ' ')) cmd.pop_back();
  if (cmd.size() >= 2 && cmd.front() == '`' && cmd.back() == '`') cmd = cmd.substr(1, cmd.size() - 2);
  if (cmd.rfind("$ ", 0) == 0) cmd = cmd.substr(2);
  return cmd;
}

}  // namespace sniper::agent
