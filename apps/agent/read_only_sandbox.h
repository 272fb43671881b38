// SPDX-License-Identifier: MIT
// The sandbox the agent's auto-run commands execute in: the process cannot write, create,
// remove, rename or truncate any file, change any file's metadata, or use the network, whatever
// program it runs (a git fsmonitor hook or a clean filter included). Built from kernel features
// an unprivileged process can use, no helper binary:
// - Landlock (ABI 1+): every filesystem write right is handled and granted nowhere but /dev/null
//   (truncate from ABI 3, device ioctls from ABI 5); TCP bind/connect denied from ABI 4; abstract
//   Unix sockets and signals to processes outside the sandbox denied from ABI 6. Reading and
//   executing stay allowed (a read-only command reads).
// - seccomp: socket() fails (EACCES) for every family (no UDP, raw, netlink or Unix sockets,
//   which Landlock does not cover), as do io_uring (which can open sockets), chmod/chown/xattr/
//   utime calls (file metadata, outside Landlock), truncate, and the TIOCSTI/TIOCLINUX ioctls.
// - no_new_privs, every capability dropped (root included), a new session without a controlling
//   terminal, every inherited descriptor but 0-2 closed.
// When the kernel has no Landlock, or SNIPER_AGENT_SANDBOX=off is set (available() false, with
// the reason), the agent asks before every command instead (shell_tool.h). bubblewrap is not used: Landlock and seccomp
// need no setuid helper or user namespaces, and work inside containers where bwrap often cannot.
#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

#include "base/result.h"

namespace sniper::agent {

class ReadOnlySandbox {
 public:
  // Whether this kernel supports the sandbox (probed once; thread-safe) and SNIPER_AGENT_SANDBOX
  // is not "off" (read each time), and the kernel's Landlock ABI.
  static bool available();
  static int landlock_abi();
  // Why it is unavailable ("" when available).
  static const std::string& unavailable_reason();

  // Prepares the Landlock ruleset and the seccomp program in the parent (allocates; call before
  // fork). Errors: no Landlock, or the kernel refused the ruleset.
  [[nodiscard]] static Result<ReadOnlySandbox> prepare();

  ReadOnlySandbox(ReadOnlySandbox&& other) noexcept;
  ReadOnlySandbox& operator=(ReadOnlySandbox&&) = delete;
  ReadOnlySandbox(const ReadOnlySandbox&) = delete;
  ~ReadOnlySandbox();

  // Applies the sandbox to the calling process; for a child between fork and exec (only
  // async-signal-safe system calls; no allocation). Closes every descriptor above 2. Returns 0,
  // or the errno of the step that failed (the child must then exit without exec).
  int apply_in_child() const;

 private:
  ReadOnlySandbox() = default;
  int ruleset_fd_ = -1;
  std::vector<sock_filter> filter_;
};

}  // namespace sniper::agent
