// SPDX-License-Identifier: MIT
// The read-only sandbox and the auto-run path end to end (issue 40 finding 3):
// - a sandboxed process cannot create, write, truncate, remove, rename or chmod files, nor open
//   any socket, but can read files and write to /dev/null (checked from a forked child);
// - every case of the issue, given to run_shell_confirmed with confirmation refused, changes
//   nothing on disk (before the fix, `ls #\ntouch FILE`, `sort -uo FILE`, `uniq - FILE` ran
//   without asking and wrote FILE, and `git status`/`git diff` ran the repository's
//   core.fsmonitor and diff.external programs);
// - auto-run git in a repository whose config names programs runs none of them, and even an
//   unhardened git in the sandbox cannot write what those programs try to write;
// - pipelines run without a shell, time out and cancel; with SNIPER_AGENT_SANDBOX=off (or no
//   Landlock) every command asks.
// Tests that need Landlock skip (saying so) on kernels without it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "agent/read_only_sandbox.h"
#include "agent/shell_tool.h"

namespace sniper::agent {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/sniper-sandbox-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::string cmd = "chmod -R u+rwx '" + path_ + "' 2>/dev/null; rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "cleanup of %s failed\n", path_.c_str());
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

bool exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

#define REQUIRE_SANDBOX()                                                                             \
  if (!ReadOnlySandbox::available()) {                                                                \
    GTEST_SKIP() << "no read-only sandbox on this kernel: " << ReadOnlySandbox::unavailable_reason(); \
  }

// Runs `probe` in a forked, sandboxed child; returns its exit status (0: every check held).
int in_sandbox(int (*probe)(const std::string& dir), const std::string& dir) {
  auto sandbox = ReadOnlySandbox::prepare();
  EXPECT_TRUE(sandbox.ok()) << sandbox.error().message;
  if (!sandbox.ok()) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (sandbox->apply_in_child() != 0) ::_exit(100);
    ::_exit(probe(dir));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

TEST(ReadOnlySandbox, DeniesWritesAndNetworkAllowsReads) {
  REQUIRE_SANDBOX();
  TempDir dir;
  std::ofstream(dir.file("existing")) << "data\n";
  ::mkdir(dir.file("subdir").c_str(), 0755);
  const int status = in_sandbox(
      [](const std::string& d) -> int {
        auto path = [&](const char* n) { return d + "/" + n; };
        char buf[8];
        // Reading works.
        const int r = ::open(path("existing").c_str(), O_RDONLY);
        if (r < 0 || ::read(r, buf, 4) != 4) return 1;
        ::close(r);
        // /dev/null takes writes.
        const int null_fd = ::open("/dev/null", O_WRONLY);
        if (null_fd < 0 || ::write(null_fd, "x", 1) != 1) return 2;
        ::close(null_fd);
        // Files cannot be created, written, truncated, removed, renamed, linked or chmodded.
        if (::open(path("new").c_str(), O_WRONLY | O_CREAT, 0644) >= 0) return 3;
        if (::open(path("existing").c_str(), O_WRONLY) >= 0) return 4;
        if (::open(path("existing").c_str(), O_RDONLY | O_TRUNC) >= 0) return 5;
        if (::truncate(path("existing").c_str(), 0) == 0) return 6;
        if (::unlink(path("existing").c_str()) == 0) return 7;
        if (::rename(path("existing").c_str(), path("moved").c_str()) == 0) return 8;
        if (::mkdir(path("dir2").c_str(), 0755) == 0) return 9;
        if (::rmdir(path("subdir").c_str()) == 0) return 10;
        if (::symlink("existing", path("link").c_str()) == 0) return 11;
        if (::link(path("existing").c_str(), path("hard").c_str()) == 0) return 12;
        if (::chmod(path("existing").c_str(), 0777) == 0) return 13;
        if (::mkfifo(path("fifo").c_str(), 0644) == 0) return 14;
        // No socket of any family.
        if (::socket(AF_INET, SOCK_STREAM, 0) >= 0) return 15;
        if (::socket(AF_INET6, SOCK_DGRAM, 0) >= 0) return 16;
        if (::socket(AF_UNIX, SOCK_STREAM, 0) >= 0) return 17;
        if (::socket(AF_NETLINK, SOCK_RAW, 0) >= 0) return 18;
        return 0;
      },
      dir.path());
  EXPECT_EQ(status, 0) << "check " << status << " of the probe failed";
  EXPECT_EQ(slurp(dir.file("existing")), "data\n");
  EXPECT_FALSE(exists(dir.file("new")));
  EXPECT_TRUE(exists(dir.file("subdir")));
}

// Every case of the issue that writes: refused confirmation means nothing happens.
TEST(AutoRun, IssueCasesChangeNothingWhenConfirmationIsRefused) {
  TempDir dir;
  std::ofstream(dir.file("data")) << "b\na\na\n";
  ShellOptions o;
  o.cwd = dir.path();
  o.timeout_s = 10;
  // What a model reply with a fenced block gives extract_command: two lines.
  const std::string fenced = extract_command("```sh\nls #\ntouch FILE\n```");
  EXPECT_EQ(fenced, "ls #\ntouch FILE");
  for (const std::string& cmd :
       {fenced, std::string("sort -uo FILE data"), std::string("sort --o=FILE data"),
        std::string("sort --output=FILE data"), std::string("uniq - FILE"), std::string("uniq data FILE"),
        std::string("sort --compress-program=sh data"), std::string("tree -o FILE"), std::string("file -C -m FILE"),
        std::string("date --se=2001-01-01"), std::string("rg --hostname-bin=P x"), std::string("git log --ext-dif")}) {
    std::string asked;
    auto d = run_shell_confirmed(cmd, o, {}, [&](const std::string& q) {
      asked = q;
      return false;
    });
    ASSERT_TRUE(d.ok()) << cmd << ": " << d.error().message;
    EXPECT_FALSE(d->ran) << cmd;
    EXPECT_FALSE(d->read_only) << cmd;
    EXPECT_FALSE(d->reason.empty()) << cmd;
    EXPECT_NE(asked.find(cmd), std::string::npos) << asked;
    EXPECT_FALSE(exists(dir.file("FILE"))) << cmd << " wrote FILE";
  }
}

// A repository whose configuration names programs that git would run for `status` and `diff`.
void make_hostile_repo(const TempDir& dir) {
  const std::string p = dir.path();
  const std::string script = "cd '" + p +
                             "' && git init -q . && echo a > f && git add f && "
                             "git -c user.email=t@t -c user.name=t commit -qm x && echo b >> f && "
                             "git config core.fsmonitor \"touch " +
                             p +
                             "/PWNED_fsmonitor; false\" && "
                             "git config diff.external \"sh -c 'touch " +
                             p +
                             "/PWNED_external'\" && "
                             "git config core.pager \"touch " +
                             p +
                             "/PWNED_pager; cat\" && "
                             "echo '*.txt diff=evil' > .gitattributes && "
                             "git config diff.evil.textconv \"sh -c 'touch " +
                             p +
                             "/PWNED_textconv'\" && "
                             "echo t > t.txt && git add t.txt .gitattributes && "
                             "git -c user.email=t@t -c user.name=t commit -qm t && echo u >> t.txt";
  ASSERT_EQ(std::system(script.c_str()), 0);
}

std::vector<std::string> pwned(const TempDir& dir) {
  std::vector<std::string> out;
  for (const char* f : {"PWNED_fsmonitor", "PWNED_external", "PWNED_pager", "PWNED_textconv"}) {
    if (exists(dir.file(f))) out.push_back(f);
  }
  return out;
}

TEST(AutoRun, GitConfigCannotRunPrograms) {
  REQUIRE_SANDBOX();
  TempDir dir;
  make_hostile_repo(dir);
  // Plain git in this repository runs what the configuration names (the issue's report).
  ASSERT_EQ(std::system(("cd '" + dir.path() + "' && git status >/dev/null 2>&1 && git diff >/dev/null 2>&1").c_str()),
            0);
  ASSERT_FALSE(pwned(dir).empty()) << "git did not run the configured programs: the test proves nothing";
  for (const std::string& f : pwned(dir)) ::unlink(dir.file(f).c_str());
  ShellOptions o;
  o.cwd = dir.path();
  o.timeout_s = 20;
  for (const char* cmd : {"git status", "git diff", "git log -p", "git show", "git diff HEAD~1 --stat"}) {
    bool asked = false;
    auto d = run_shell_confirmed(cmd, o, {}, [&](const std::string&) {
      asked = true;
      return false;
    });
    ASSERT_TRUE(d.ok()) << cmd << ": " << d.error().message;
    EXPECT_TRUE(d->ran) << cmd;
    EXPECT_FALSE(asked) << cmd;
    EXPECT_EQ(d->result.exit_code, 0) << cmd << ": " << d->result.output;
    EXPECT_TRUE(pwned(dir).empty()) << cmd << " ran " << pwned(dir)[0];
  }
  // Defense in depth: git without the hardening, in the sandbox, runs the programs but they
  // cannot write.
  for (const char* sub : {"status", "diff"}) {
    ReadOnlyPlan raw;
    raw.argv = raw.exec = {{"git", sub}};
    auto r = run_read_only(raw, o);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(pwned(dir).empty()) << "the sandbox let " << pwned(dir)[0] << " be written";
  }
}

TEST(AutoRun, PipelinesRunWithoutAShell) {
  REQUIRE_SANDBOX();
  TempDir dir;
  std::ofstream(dir.file("words")) << "b\na\nc\na\n";
  ShellOptions o;
  o.cwd = dir.path();
  auto d = run_shell_confirmed("sort words | uniq -c | sort -rn | head -n 1", o, {}, nullptr);
  ASSERT_TRUE(d.ok()) << d.error().message;
  ASSERT_TRUE(d->ran) << d->reason;
  EXPECT_TRUE(d->read_only);
  EXPECT_NE(d->result.output.find("2 a"), std::string::npos) << d->result.output;
  // Text that a shell would expand is passed as it is: it is quoted, so it is data.
  auto e = run_shell_confirmed("echo '$(touch x)' \"a;b\" '*'", o, {}, nullptr);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->result.output, "$(touch x) a;b *\n");
  EXPECT_FALSE(exists(dir.file("x")));
  // Exit status of the last stage.
  auto f = run_shell_confirmed("grep -q zzz words", o, {}, nullptr);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->result.exit_code, 1);
  // An extra command cannot write either.
  auto t = run_shell_confirmed("touch made_by_touch", o, {"touch"}, nullptr);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->read_only);
  EXPECT_NE(t->result.exit_code, 0);
  EXPECT_FALSE(exists(dir.file("made_by_touch")));
}

TEST(AutoRun, TimeoutAndCancelKillTheStages) {
  REQUIRE_SANDBOX();
  TempDir dir;
  ShellOptions o;
  o.cwd = dir.path();
  o.timeout_s = 0.5;
  auto d = run_shell_confirmed("sleep 30 | cat", o, {"sleep"}, nullptr);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->result.timed_out);
  EXPECT_LT(d->result.elapsed_s, 5.0);
  std::atomic<bool> cancel{true};
  o.timeout_s = 30;
  o.cancel = &cancel;
  auto c = run_shell_confirmed("sleep 30", o, {"sleep"}, nullptr);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->result.cancelled);
  EXPECT_LT(c->result.elapsed_s, 5.0);
}

TEST(AutoRun, WithoutTheSandboxEverythingAsks) {
  ::setenv("SNIPER_AGENT_SANDBOX", "off", 1);
  TempDir dir;
  ShellOptions o;
  o.cwd = dir.path();
  std::string asked;
  auto d = run_shell_confirmed("echo fine", o, {}, [&](const std::string& q) {
    asked = q;
    return false;
  });
  const std::string reason = confirmation_reason("ls");
  ::unsetenv("SNIPER_AGENT_SANDBOX");
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->ran);
  EXPECT_EQ(asked, "Run `echo fine`?");
  EXPECT_NE(d->reason.find("no sandbox"), std::string::npos) << d->reason;
  EXPECT_NE(reason.find("SNIPER_AGENT_SANDBOX=off"), std::string::npos) << reason;
}

}  // namespace
}  // namespace sniper::agent
