// SPDX-License-Identifier: MIT
// Read-only decisions, and timed, capped execution of shell commands and of sandboxed argv
// pipelines (see shell_tool.h).
#include "agent/shell_tool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "agent/command_line.h"
#include "agent/read_only_commands.h"
#include "agent/read_only_sandbox.h"

extern char** environ;

namespace sniper::agent {

namespace {

using Clock = std::chrono::steady_clock;

// Reads `fd` into r->output (up to the cap) until EOF, the timeout or the cancel flag; kills
// every process group in `groups` unless EOF came first, then reaps `pids`.
void collect(int fd, const std::vector<pid_t>& pids, Clock::time_point t0, const ShellOptions& options,
             ShellResult* r) {
  const auto deadline =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.timeout_s));
  char buf[4096];
  bool eof = false;
  while (!eof) {
    if (options.cancel && options.cancel->load()) {
      r->cancelled = true;
      break;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      r->timed_out = true;
      break;
    }
    const int wait_ms =
        static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, wait_ms < 50 ? wait_ms : 50);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    const ssize_t got = ::read(fd, buf, sizeof(buf));
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) {
      eof = true;
      break;
    }
    const size_t room = options.output_cap_bytes > r->output.size() ? options.output_cap_bytes - r->output.size() : 0;
    if (static_cast<size_t>(got) > room) r->truncated = true;
    r->output.append(buf, std::min(room, static_cast<size_t>(got)));
  }
  if (!eof) {
    // The group, and the process itself in case it has not made its group yet.
    for (pid_t pid : pids) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
  }
  ::close(fd);
  int last_status = 0;
  for (pid_t pid : pids) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    last_status = status;  // a pipeline's status is its last stage's
  }
  for (pid_t pid : pids) ::kill(-pid, SIGKILL);  // leftover background children of each group
  if (WIFEXITED(last_status)) r->exit_code = WEXITSTATUS(last_status);
  else if (WIFSIGNALED(last_status)) r->exit_code = 128 + WTERMSIG(last_status);
  if (r->truncated) r->output += "\n[output truncated at " + std::to_string(options.output_cap_bytes) + " bytes]\n";
  r->elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
}

// The full path of `name` on $PATH (an executable regular file), or "".
std::string find_on_path(const std::string& name) {
  const char* env = std::getenv("PATH");
  const std::string path = (env != nullptr && *env != '\0') ? env : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    const std::string dir = end > start ? path.substr(start, end - start) : ".";
    const std::string candidate = dir + "/" + name;
    struct stat st {};
    if (dir.front() == '/' && ::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return "";
}

// The environment of auto-run stages: ours with hardened_environment() applied.
std::vector<std::string> hardened_env() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  for (const std::string& setting : hardened_environment()) {
    const size_t eq = setting.find('=');
    const std::string name = setting.substr(0, eq);
    env.erase(std::remove_if(env.begin(), env.end(), [&](const std::string& v) { return v.rfind(name + "=", 0) == 0; }),
              env.end());
    if (eq != std::string::npos) env.push_back(setting);
  }
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Reports a failure from a child before exec (only write(2): async-signal-safe) and exits 126.
[[noreturn]] void child_fail(const char* what, int err) {
  char num[16];
  int n = 0;
  for (unsigned v = static_cast<unsigned>(err); n == 0 || v != 0; v /= 10) num[n++] = static_cast<char>('0' + v % 10);
  (void)!::write(2, "sniper agent: ", 14);
  (void)!::write(2, what, std::strlen(what));
  (void)!::write(2, " (errno ", 8);
  while (n > 0) (void)!::write(2, &num[--n], 1);
  (void)!::write(2, ")\n", 2);
  ::_exit(126);
}

}  // namespace

Result<ReadOnlyPlan> plan_read_only(const std::string& line, const std::vector<std::string>& extra,
                                    const std::string& cwd) {
  SNIPER_ASSIGN_OR_RETURN(ParsedLine parsed, parse_command_line(line));
  ReadOnlyPlan plan;
  SNIPER_ASSIGN_OR_RETURN(plan.argv, expand_globs(parsed, cwd));
  for (const std::vector<std::string>& argv : plan.argv) {
    SNIPER_TRY(check_read_only_argv(argv, extra));
    plan.exec.push_back(harden_argv(argv));
  }
  return plan;
}

std::string confirmation_reason(const std::string& line, const std::vector<std::string>& extra,
                                const std::string& cwd) {
  auto plan = plan_read_only(line, extra, cwd);
  if (!plan.ok()) return plan.error().message;
  if (!ReadOnlySandbox::available()) {
    return "no sandbox to run it read-only (" + ReadOnlySandbox::unavailable_reason() + ")";
  }
  return "";
}

bool is_read_only_command(const std::string& line, const std::vector<std::string>& extra, const std::string& cwd) {
  return confirmation_reason(line, extra, cwd).empty();
}

Result<ShellResult> run_shell(const std::string& command, const ShellOptions& options) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return make_error("pipe failed: %s", std::strerror(errno));
  const auto t0 = Clock::now();
  const pid_t pid = ::fork();
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
  collect(fds[0], {pid}, t0, options, &r);
  return r;
}

Result<ShellResult> run_read_only(const ReadOnlyPlan& plan, const ShellOptions& options) {
  if (plan.exec.empty()) return make_error("nothing to run");
  SNIPER_ASSIGN_OR_RETURN(ReadOnlySandbox sandbox, ReadOnlySandbox::prepare());
  // Everything the children need is built here: they only make system calls.
  std::vector<std::string> paths;
  std::vector<std::vector<std::string>> argvs = plan.exec;
  std::vector<std::vector<char*>> c_argvs;
  for (std::vector<std::string>& argv : argvs) {
    std::string path = find_on_path(argv[0]);
    if (path.empty()) return make_error("%s: command not found on PATH", argv[0].c_str());
    paths.push_back(std::move(path));
    c_argvs.push_back(c_strings(argv));
  }
  std::vector<std::string> env = hardened_env();
  std::vector<char*> c_env = c_strings(env);
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0) return make_error("cannot open /dev/null: %s", std::strerror(errno));
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(devnull);
    return make_error("pipe failed: %s", std::strerror(errno));
  }
  const auto t0 = Clock::now();
  std::vector<pid_t> pids;
  int stdin_fd = devnull;
  for (size_t i = 0; i < argvs.size(); ++i) {
    int next[2] = {-1, -1};
    const bool last = i + 1 == argvs.size();
    if (!last && ::pipe2(next, O_CLOEXEC) != 0) break;
    const int stdout_fd = last ? out[1] : next[1];
    const pid_t pid = ::fork();
    if (pid == 0) {
      // Child: only system calls until exec. A new session: its own process group (killed as
      // one) and no controlling terminal.
      ::setsid();
      ::signal(SIGINT, SIG_DFL);
      ::signal(SIGPIPE, SIG_DFL);
      ::dup2(stdin_fd, 0);
      ::dup2(stdout_fd, 1);
      ::dup2(out[1], 2);
      if (::chdir(options.cwd.c_str()) != 0) child_fail("cannot enter the working directory", errno);
      if (const int err = sandbox.apply_in_child(); err != 0) child_fail("cannot enter the read-only sandbox", err);
      ::execve(paths[i].c_str(), c_argvs[i].data(), c_env.data());
      child_fail(paths[i].c_str(), errno);
    }
    if (stdin_fd != devnull) ::close(stdin_fd);
    if (!last) ::close(next[1]);
    if (pid < 0) {
      if (!last) ::close(next[0]);
      break;
    }
    pids.push_back(pid);
    stdin_fd = last ? -1 : next[0];
  }
  ::close(devnull);
  if (stdin_fd >= 0 && stdin_fd != devnull) ::close(stdin_fd);
  ::close(out[1]);
  ShellResult r;
  if (pids.size() != argvs.size()) {
    const int err = errno;
    collect(out[0], pids, t0, options, &r);
    return make_error("cannot start the pipeline: %s", std::strerror(err));
  }
  collect(out[0], pids, t0, options, &r);
  return r;
}

Result<ShellDecision> run_shell_confirmed(const std::string& command, const ShellOptions& options,
                                          const std::vector<std::string>& extra_read_only, const ConfirmFn& confirm) {
  ShellDecision d;
  auto plan = plan_read_only(command, extra_read_only, options.cwd);
  if (plan.ok() && ReadOnlySandbox::available()) {
    d.read_only = true;
    SNIPER_ASSIGN_OR_RETURN(d.result, run_read_only(*plan, options));
    d.ran = true;
    return d;
  }
  d.reason = plan.ok() ? "no sandbox to run it read-only (" + ReadOnlySandbox::unavailable_reason() + ")"
                       : plan.error().message;
  // The question stays short: the agent shows the reason beside the command (agent_tools.cpp).
  if (!(confirm && confirm("Run `" + command + "`?"))) return d;
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
