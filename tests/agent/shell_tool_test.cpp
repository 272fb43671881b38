// SPDX-License-Identifier: MIT
// Shell tool: read-only classification (incl. tricky cases), timeout with process-group kill,
// output cap, and refusal of a destructive command when confirmation is denied.
#include "agent/shell_tool.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

namespace sniper::agent {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/sniper-agent-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::string cmd = "rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "cleanup of %s failed\n", path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

bool exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

TEST(ReadOnly, AllowlistedCommands) {
  for (const char* cmd : {"ls",
                          "ls -la /tmp",
                          "cat README.md",
                          "head -n 5 a.txt",
                          "tail -n 20 log",
                          "wc -l *.cpp",
                          "pwd",
                          "echo hello",
                          "grep -rn TODO src",
                          "find . -name '*.h'",
                          "git status",
                          "git log -5",
                          "git diff HEAD~1",
                          "date",
                          "whoami",
                          "uname -a",
                          "df -h",
                          "du -sh .",
                          "ls | grep foo | wc -l",
                          "cat a && echo ok",
                          "ls; pwd",
                          "grep 'a > b' file",
                          "echo \"x; rm -rf y\"",
                          "sort < input.txt",
                          "ls || true"}) {
    EXPECT_TRUE(is_read_only_command(cmd)) << cmd;
  }
}

TEST(ReadOnly, TrickyCasesNeedConfirmation) {
  for (const char* cmd : {"ls; rm -rf x",
                          "cat a > b",
                          "echo hi >> log",
                          "ls 2>/dev/null",
                          "find . -delete",
                          "find . -name x -exec rm {} \\;",
                          "find . -execdir sh -c x \\;",
                          "echo $(rm x)",
                          "echo `rm x`",
                          "echo \"$(rm x)\"",
                          "ls && rm -rf /",
                          "cat a | sh",
                          "cat a | xargs rm",
                          "rm -rf x",
                          "sudo ls",
                          "ls & rm x",
                          "(rm x)",
                          "{ rm x; }",
                          "FOO=1 ls",
                          "/bin/rm x",
                          "git push",
                          "git checkout .",
                          "git -c core.pager=sh log",
                          "git log --output=x",
                          "sort -o out in",
                          "date -s 2020-01-01",
                          "uniq in out",
                          "cat <(rm x)",
                          "tee out",
                          "sed -i s/a/b/ f",
                          "awk 'BEGIN{system(\"rm x\")}'",
                          "echo 'unterminated",
                          "",
                          "cat a >| b",
                          "hostname newname",
                          "ls\nrm x"}) {
    EXPECT_FALSE(is_read_only_command(cmd)) << cmd;
  }
}

TEST(ReadOnly, ExtraCommandsFromConfig) {
  EXPECT_FALSE(is_read_only_command("make -n"));
  EXPECT_TRUE(is_read_only_command("make -n", {"make"}));
}

TEST(RunShell, CapturesOutputAndExitCode) {
  TempDir dir;
  ShellOptions o;
  o.cwd = dir.path();
  auto r = run_shell("echo out; echo err 1>&2; pwd; exit 3", o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_NE(r->output.find("out"), std::string::npos);
  EXPECT_NE(r->output.find("err"), std::string::npos);
  EXPECT_NE(r->output.find(dir.path()), std::string::npos);
  EXPECT_FALSE(r->timed_out);
  EXPECT_FALSE(r->truncated);
}

TEST(RunShell, TimeoutKillsTheProcessGroup) {
  TempDir dir;
  ShellOptions o;
  o.cwd = dir.path();
  o.timeout_s = 0.5;
  auto t0 = std::chrono::steady_clock::now();
  // The background child would create the marker after 2 s if the group were not killed.
  auto r = run_shell("(sleep 2; touch late_marker) & sleep 30", o);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(s, 5.0);
  EXPECT_EQ(r->exit_code, 128 + SIGKILL);
  ::sleep(3);
  EXPECT_FALSE(exists(dir.path() + "/late_marker")) << "a child of the command survived the timeout";
}

TEST(RunShell, OutputCap) {
  TempDir dir;
  ShellOptions o;
  o.cwd = dir.path();
  o.output_cap_bytes = 1000;
  auto r = run_shell("yes abcdefgh | head -c 200000", o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->truncated);
  EXPECT_EQ(r->exit_code, 0);
  size_t marker = r->output.find("[output truncated at 1000 bytes]");
  ASSERT_NE(marker, std::string::npos);
  EXPECT_LE(marker, 1001u);
}

TEST(RunShell, CancelFlagStopsIt) {
  TempDir dir;
  std::atomic<bool> cancel{true};
  ShellOptions o;
  o.cwd = dir.path();
  o.cancel = &cancel;
  auto r = run_shell("sleep 30", o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->cancelled);
  EXPECT_LT(r->elapsed_s, 5.0);
}

TEST(ShellConfirmed, DestructiveCommandRefusedWithoutConfirmation) {
  TempDir dir;
  std::string victim = dir.path() + "/precious.txt";
  std::ofstream(victim) << "keep me\n";
  ShellOptions o;
  o.cwd = dir.path();
  std::string asked;
  auto d = run_shell_confirmed("rm -f precious.txt", o, {}, [&](const std::string& q) {
    asked = q;
    return false;
  });
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->ran);
  EXPECT_FALSE(d->read_only);
  EXPECT_NE(asked.find("rm -f precious.txt"), std::string::npos);
  EXPECT_TRUE(exists(victim));
  // No confirm callback at all also means no.
  auto d2 = run_shell_confirmed("rm -f precious.txt", o, {}, nullptr);
  ASSERT_TRUE(d2.ok());
  EXPECT_FALSE(d2->ran);
  EXPECT_TRUE(exists(victim));
  // Approved: it runs.
  auto d3 = run_shell_confirmed("rm -f precious.txt", o, {}, [](const std::string&) { return true; });
  ASSERT_TRUE(d3.ok());
  EXPECT_TRUE(d3->ran);
  EXPECT_FALSE(exists(victim));
}

TEST(ShellConfirmed, ReadOnlyRunsWithoutAsking) {
  TempDir dir;
  ShellOptions o;
  o.cwd = dir.path();
  bool asked = false;
  auto d = run_shell_confirmed("echo fine", o, {}, [&](const std::string&) {
    asked = true;
    return false;
  });
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->ran);
  EXPECT_FALSE(asked);
  EXPECT_EQ(d->result.output, "fine\n");
}

TEST(ExtractCommand, FromModelReplies) {
  EXPECT_EQ(extract_command("ls -la"), "ls -la");
  EXPECT_EQ(extract_command("`df -h`"), "df -h");
  EXPECT_EQ(extract_command("$ du -sh .\n"), "du -sh .");
  EXPECT_EQ(extract_command("Here you go:\n```bash\nfind . -name '*.log'\n```\nThis lists logs."),
            "find . -name '*.log'");
  EXPECT_EQ(extract_command("<think>\nuser wants files\n</think>\n\nls"), "ls");
  EXPECT_EQ(extract_command("   \n"), "");
}

}  // namespace
}  // namespace sniper::agent
