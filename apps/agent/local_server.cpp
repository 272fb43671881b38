// SPDX-License-Identifier: MIT
// Spawning and stopping the local `sniper serve` child (see local_server.h).
#include "agent/local_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/process_control.h"

namespace sniper::agent {

namespace {

std::string log_tail(const std::string& path) {
  if (path.empty()) return "";
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  return s.size() > 600 ? s.substr(s.size() - 600) : s;
}

}  // namespace

std::optional<std::string> parse_ready_line(const std::string& line) {
  static const std::string kPrefix = "sniper serve: listening on ";
  size_t p = line.find(kPrefix);
  if (p == std::string::npos) return std::nullopt;
  std::string url = line.substr(p + kPrefix.size());
  while (!url.empty() && (url.back() == '\n' || url.back() == '\r' || url.back() == ' ' || url.back() == '/'))
    url.pop_back();
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) return std::nullopt;
  return url;
}

LocalServer::LocalServer(pid_t pid, int out_fd, std::string url) : pid_(pid), out_fd_(out_fd), url_(std::move(url)) {
  drain_ = std::thread([fd = out_fd_] {
    char buf[4096];
    while (true) {
      ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n > 0) continue;
      if (n < 0 && errno == EINTR) continue;
      break;
    }
  });
}

LocalServer::~LocalServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int status = 0;
    bool reaped = false;
    while (std::chrono::steady_clock::now() < deadline) {
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_ || (r < 0 && errno != EINTR)) {
        reaped = true;
        break;
      }
      ::usleep(20000);
    }
    if (!reaped) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
  }
  if (drain_.joinable()) drain_.join();  // EOF once the child is gone
  if (out_fd_ >= 0) ::close(out_fd_);
}

Result<std::unique_ptr<LocalServer>> LocalServer::start(const std::string& exe, const std::vector<std::string>& args,
                                                        double timeout_s, const std::string& log_path) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return make_error("pipe failed: %s", std::strerror(errno));
  int log_fd =
      ::open(log_path.empty() ? "/dev/null" : log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return make_error("cannot open the server log '%s': %s", log_path.c_str(), std::strerror(errno));
  }
  std::vector<std::string> argv_storage;
  argv_storage.push_back(exe);
  for (const std::string& a : args) argv_storage.push_back(a);
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    ::close(log_fd);
    return make_error("fork failed: %s", std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    (void)signal_on_parent_exit(SIGTERM);  // the getppid check below covers a parent already gone
    if (::getppid() != parent) _exit(1);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(fds[1], 1);
    ::dup2(log_fd, 2);
    ::execv(exe.c_str(), argv.data());
    _exit(127);
  }
  ::setpgid(pid, pid);
  ::close(fds[1]);
  ::close(log_fd);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                         std::chrono::duration<double>(timeout_s));
  std::string buffer;
  auto fail = [&](const std::string& why) -> Error {
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(fds[0]);
    std::string tail = log_tail(log_path);
    return make_error("sniper serve %s%s%s", why.c_str(), tail.empty() ? "" : "; log:\n", tail.c_str());
  };
  while (true) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return fail("did not print its ready line in time");
    int wait_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
    pollfd p{fds[0], POLLIN, 0};
    int n = ::poll(&p, 1, wait_ms);
    if (n < 0 && errno != EINTR) return fail("could not be watched");
    if (n <= 0) continue;
    char buf[1024];
    ssize_t got = ::read(fds[0], buf, sizeof(buf));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return fail("exited before it was ready");
    buffer.append(buf, static_cast<size_t>(got));
    size_t nl;
    while ((nl = buffer.find('\n')) != std::string::npos) {
      std::string line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      if (auto url = parse_ready_line(line)) return std::unique_ptr<LocalServer>(new LocalServer(pid, fds[0], *url));
    }
  }
}

}  // namespace sniper::agent
