// SPDX-License-Identifier: MIT
// A `sniper serve` child process for `sniper agent -m MODEL`: spawned as
// `<exe> serve -m MODEL --port 0 ...` in its own process group (so Ctrl-C in the agent does not
// reach it), asking the OS to stop it when the agent dies (base/process_control.h); its ready line
// `sniper serve: listening on http://HOST:PORT/` gives the URL. stderr goes to a log file; stdout
// is drained after the ready line. The destructor stops it (SIGTERM, then SIGKILL after 5 s).
// Invariants: a LocalServer object always owns a live-or-reaped child; never two owners.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"

namespace sniper::agent {

// "http://HOST:PORT" from a ready line, nullopt for any other line.
std::optional<std::string> parse_ready_line(const std::string& line);

class LocalServer {
 public:
  // Starts `exe args...` and waits up to timeout_s for the ready line. stderr is appended to
  // log_path ("" = /dev/null). Errors include the end of the log when the child exits early.
  [[nodiscard]] static Result<std::unique_ptr<LocalServer>> start(const std::string& exe,
                                                                  const std::vector<std::string>& args,
                                                                  double timeout_s, const std::string& log_path);
  ~LocalServer();
  LocalServer(const LocalServer&) = delete;
  LocalServer& operator=(const LocalServer&) = delete;

  const std::string& url() const { return url_; }
  pid_t pid() const { return pid_; }

 private:
  LocalServer(pid_t pid, int out_fd, std::string url);
  pid_t pid_;
  int out_fd_;
  std::string url_;
  std::thread drain_;
};

}  // namespace sniper::agent
