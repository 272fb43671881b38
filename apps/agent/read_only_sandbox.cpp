// SPDX-License-Identifier: MIT
// Landlock + seccomp + capabilities for auto-run commands (see read_only_sandbox.h). The Landlock
// constants and structures are defined here by value (uapi/linux/landlock.h): Debian 12's kernel
// headers stop at ABI 2, and the rights of later ABIs are used when the running kernel has them.
#include "agent/read_only_sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace sniper::agent {

namespace {

// uapi/linux/landlock.h
constexpr uint32_t kCreateRulesetVersion = 1u << 0;
constexpr int kRulePathBeneath = 1;
constexpr uint64_t kFsWriteFile = 1ull << 1;
constexpr uint64_t kFsRemoveDir = 1ull << 4;
constexpr uint64_t kFsRemoveFile = 1ull << 5;
constexpr uint64_t kFsMakeChar = 1ull << 6;
constexpr uint64_t kFsMakeDir = 1ull << 7;
constexpr uint64_t kFsMakeReg = 1ull << 8;
constexpr uint64_t kFsMakeSock = 1ull << 9;
constexpr uint64_t kFsMakeFifo = 1ull << 10;
constexpr uint64_t kFsMakeBlock = 1ull << 11;
constexpr uint64_t kFsMakeSym = 1ull << 12;
constexpr uint64_t kFsRefer = 1ull << 13;     // ABI 2
constexpr uint64_t kFsTruncate = 1ull << 14;  // ABI 3
constexpr uint64_t kFsIoctlDev = 1ull << 15;  // ABI 5
constexpr uint64_t kNetBindTcp = 1ull << 0;   // ABI 4
constexpr uint64_t kNetConnectTcp = 1ull << 1;
constexpr uint64_t kScopeAbstractUnixSocket = 1ull << 0;  // ABI 6
constexpr uint64_t kScopeSignal = 1ull << 1;

struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t kAuditArch = 0;  // no seccomp program for this architecture: unavailable
#endif

struct Probe {
  int abi = 0;
  std::string reason;
};

const Probe& probe() {
  static const Probe kProbe = [] {
    Probe p;
    if (kAuditArch == 0) {
      p.reason = "no seccomp program for this CPU architecture";
      return p;
    }
    const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
    if (abi < 1) {
      const int e = errno;
      p.reason = std::string("the kernel has no Landlock (") + std::strerror(e) +
                 (e == EOPNOTSUPP ? ": built in but not enabled, add landlock to the lsm= boot parameter)" : ")");
      return p;
    }
    p.abi = static_cast<int>(abi);
    return p;
  }();
  return kProbe;
}

// Syscalls that fail with EPERM in the sandbox (file metadata and truncation, which Landlock
// does not cover below ABI 3, and io_uring, which can open sockets).
constexpr long kDenied[] = {
#ifdef SYS_chmod
    SYS_chmod,
#endif
#ifdef SYS_chown
    SYS_chown,
#endif
#ifdef SYS_lchown
    SYS_lchown,
#endif
#ifdef SYS_utime
    SYS_utime,
#endif
#ifdef SYS_utimes
    SYS_utimes,
#endif
#ifdef SYS_futimesat
    SYS_futimesat,
#endif
#ifdef SYS_truncate
    SYS_truncate,
#endif
    SYS_fchmod,    SYS_fchmodat,       SYS_fchown,          SYS_fchownat,         SYS_setxattr,
    SYS_lsetxattr, SYS_fsetxattr,      SYS_removexattr,     SYS_lremovexattr,     SYS_fremovexattr,
    SYS_utimensat, SYS_io_uring_setup, 452 /* fchmodat2 */, 463 /* setxattrat */, 466 /* removexattrat */,
};

void add_stmt(std::vector<sock_filter>& f, uint16_t code, uint32_t k) { f.push_back(BPF_STMT(code, k)); }
void add_jump(std::vector<sock_filter>& f, uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
  f.push_back(BPF_JUMP(code, k, jt, jf));
}

std::vector<sock_filter> build_filter() {
  std::vector<sock_filter> f;
  const uint32_t deny_eperm = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
  const uint32_t deny_eacces = SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA);
  // Another architecture's calling convention (i386 int 0x80 on x86_64): refuse outright.
  add_stmt(f, BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
  add_jump(f, BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0);
  add_stmt(f, BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  add_stmt(f, BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr));
#if defined(__x86_64__)
  // x32 system calls (bit 30) would bypass the numbers below.
  add_jump(f, BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
  add_stmt(f, BPF_RET | BPF_K, deny_eperm);
#endif
  add_jump(f, BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 1);
  add_stmt(f, BPF_RET | BPF_K, deny_eacces);
  for (long nr : kDenied) {
    add_jump(f, BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1);
    add_stmt(f, BPF_RET | BPF_K, deny_eperm);
  }
  // ioctl(fd, TIOCSTI / TIOCLINUX): typing into a terminal.
  add_jump(f, BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 4);
  add_stmt(f, BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args) + sizeof(uint64_t));  // args[1], low half
  add_jump(f, BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 1, 0);
  add_jump(f, BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX, 0, 1);
  add_stmt(f, BPF_RET | BPF_K, deny_eperm);
  add_stmt(f, BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  return f;
}

}  // namespace

namespace {

bool disabled_by_env() {
  const char* v = std::getenv("SNIPER_AGENT_SANDBOX");
  return v != nullptr && std::strcmp(v, "off") == 0;
}

}  // namespace

bool ReadOnlySandbox::available() { return probe().abi >= 1 && !disabled_by_env(); }
int ReadOnlySandbox::landlock_abi() { return probe().abi; }
const std::string& ReadOnlySandbox::unavailable_reason() {
  static const std::string kDisabled = "SNIPER_AGENT_SANDBOX=off";
  static const std::string kNone;
  if (probe().abi < 1) return probe().reason;
  return disabled_by_env() ? kDisabled : kNone;
}

Result<ReadOnlySandbox> ReadOnlySandbox::prepare() {
  if (!available()) return make_error("no read-only sandbox: %s", unavailable_reason().c_str());
  const int abi = landlock_abi();
  RulesetAttr attr{};
  attr.handled_access_fs = kFsWriteFile | kFsRemoveDir | kFsRemoveFile | kFsMakeChar | kFsMakeDir | kFsMakeReg |
                           kFsMakeSock | kFsMakeFifo | kFsMakeBlock | kFsMakeSym;
  if (abi >= 2) attr.handled_access_fs |= kFsRefer;
  if (abi >= 3) attr.handled_access_fs |= kFsTruncate;
  if (abi >= 5) attr.handled_access_fs |= kFsIoctlDev;
  size_t size = offsetof(RulesetAttr, handled_access_net);
  if (abi >= 4) {
    attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
    size = offsetof(RulesetAttr, scoped);
  }
  if (abi >= 6) {
    attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
    size = sizeof(RulesetAttr);
  }
  ReadOnlySandbox s;
  s.ruleset_fd_ = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, size, 0));
  if (s.ruleset_fd_ < 0) return make_error("cannot create the Landlock ruleset: %s", std::strerror(errno));
  ::fcntl(s.ruleset_fd_, F_SETFD, FD_CLOEXEC);
  // /dev/null is the one file a sandboxed command may open for writing.
  const int null_fd = ::open("/dev/null", O_PATH | O_CLOEXEC);
  if (null_fd < 0) return make_error("cannot open /dev/null: %s", std::strerror(errno));
  PathBeneathAttr rule{};
  rule.allowed_access = kFsWriteFile | (abi >= 3 ? kFsTruncate : 0);
  rule.parent_fd = null_fd;
  const long rc = ::syscall(SYS_landlock_add_rule, s.ruleset_fd_, kRulePathBeneath, &rule, 0);
  const int add_errno = errno;
  ::close(null_fd);
  if (rc != 0) return make_error("cannot add the /dev/null Landlock rule: %s", std::strerror(add_errno));
  s.filter_ = build_filter();
  return s;
}

ReadOnlySandbox::ReadOnlySandbox(ReadOnlySandbox&& other) noexcept
    : ruleset_fd_(other.ruleset_fd_), filter_(std::move(other.filter_)) {
  other.ruleset_fd_ = -1;
}

ReadOnlySandbox::~ReadOnlySandbox() {
  if (ruleset_fd_ >= 0) ::close(ruleset_fd_);
}

int ReadOnlySandbox::apply_in_child() const {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  // Every capability (root keeps none): the bounding set first (needs CAP_SETPCAP, so it may
  // fail for an unprivileged user, who has none to drop), then ambient, then the sets.
  for (int cap = 0; cap <= 63; ++cap) (void)::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  (void)::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capset, &header, data) != 0) return errno;
  if (::syscall(SYS_landlock_restrict_self, ruleset_fd_, 0) != 0) return errno;
  if (::syscall(SYS_close_range, 3u, ~0u, 0u) != 0) {
    for (int fd = 3; fd < 65536; ++fd) (void)::close(fd);
  }
  sock_fprog prog{};
  prog.len = static_cast<unsigned short>(filter_.size());
  prog.filter = const_cast<sock_filter*>(filter_.data());
  if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) return errno;
  return 0;
}

}  // namespace sniper::agent
