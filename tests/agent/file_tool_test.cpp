// SPDX-License-Identifier: MIT
// File tool: unified diffs, single-occurrence edits, and confirmation before writing.
#include "agent/file_tool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sniper::agent {
namespace {

std::string tmp_file(const std::string& content) {
  char tmpl[] = "/tmp/sniper-agent-file-XXXXXX";
  int fd = ::mkstemp(tmpl);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  ::close(fd);
  return tmpl;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(UnifiedDiff, SingleChangeWithContext) {
  std::string a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
  std::string b = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n";
  EXPECT_EQ(unified_diff(a, b, "a/f", "b/f"), "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
}

TEST(UnifiedDiff, EqualTextsGiveNothing) { EXPECT_EQ(unified_diff("x\n", "x\n", "a", "b"), ""); }

TEST(UnifiedDiff, NewFileAndNoNewlineAtEnd) {
  EXPECT_EQ(unified_diff("", "hello\nworld\n", "/dev/null", "b/f"),
            "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+hello\n+world\n");
  EXPECT_EQ(unified_diff("a\nb", "a\nb\n", "x", "y"),
            "--- x\n+++ y\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n");
}

TEST(UnifiedDiff, TwoHunksFarApart) {
  std::string a, b;
  for (int i = 1; i <= 30; ++i) {
    a += std::to_string(i) + "\n";
    b += (i == 3 ? std::string("three") : i == 27 ? std::string("twenty-seven") : std::to_string(i)) + "\n";
  }
  std::string d = unified_diff(a, b, "a", "b");
  EXPECT_NE(d.find("@@ -1,6 +1,6 @@"), std::string::npos) << d;
  EXPECT_NE(d.find("@@ -24,7 +24,7 @@"), std::string::npos) << d;
  EXPECT_NE(d.find("-27\n+twenty-seven\n"), std::string::npos);
}

TEST(UnifiedDiff, InsertionAndDeletion) {
  std::string d = unified_diff("a\nb\nc\n", "a\nc\nd\n", "x", "y");
  EXPECT_EQ(d, "--- x\n+++ y\n@@ -1,3 +1,3 @@\n a\n-b\n c\n+d\n");
}

TEST(ApplyEdit, ExactlyOnce) {
  auto r = apply_edit("int x = 1;\nint y = 2;\n", "y = 2", "y = 3");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), "int x = 1;\nint y = 3;\n");
  EXPECT_FALSE(apply_edit("aa", "a", "b").ok());    // ambiguous
  EXPECT_FALSE(apply_edit("abc", "zz", "b").ok());  // absent
  EXPECT_FALSE(apply_edit("abc", "", "b").ok());    // empty
}

TEST(EditFile, DiffShownThenAppliedOnlyWhenConfirmed) {
  std::string path = tmp_file("alpha\nbeta\ngamma\n");
  std::ostringstream out;
  int asked = 0;
  auto declined = edit_file_confirmed(path, "beta", "BETA", out, [&](const std::string&) {
    ++asked;
    return false;
  });
  ASSERT_TRUE(declined.ok()) << declined.error().message;
  EXPECT_FALSE(declined->applied);
  EXPECT_EQ(asked, 1);
  EXPECT_NE(out.str().find("-beta\n+BETA\n"), std::string::npos) << out.str();
  EXPECT_EQ(slurp(path), "alpha\nbeta\ngamma\n");

  std::ostringstream out2;
  auto applied = edit_file_confirmed(path, "beta", "BETA", out2, [](const std::string&) { return true; });
  ASSERT_TRUE(applied.ok());
  EXPECT_TRUE(applied->applied);
  EXPECT_EQ(slurp(path), "alpha\nBETA\ngamma\n");
  EXPECT_FALSE(edit_file_confirmed(path, "missing", "x", out2, [](const std::string&) { return true; }).ok());
  std::remove(path.c_str());
}

TEST(WriteFile, NewFileNeedsConfirmation) {
  std::string path = tmp_file("");
  std::remove(path.c_str());
  std::ostringstream out;
  auto r = write_file_confirmed(path, "new\n", out, [](const std::string&) { return false; });
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->applied);
  EXPECT_NE(::access(path.c_str(), F_OK), 0);
  auto r2 = write_file_confirmed(path, "new\n", out, [](const std::string&) { return true; });
  ASSERT_TRUE(r2.ok());
  EXPECT_TRUE(r2->applied);
  EXPECT_EQ(slurp(path), "new\n");
  EXPECT_NE(out.str().find("--- /dev/null"), std::string::npos);
  std::remove(path.c_str());
}

TEST(ReadFile, CapsAndErrors) {
  std::string path = tmp_file(std::string(100, 'x'));
  EXPECT_TRUE(read_text_file(path, 100).ok());
  EXPECT_FALSE(read_text_file(path, 99).ok());
  EXPECT_FALSE(read_text_file("/nonexistent/file").ok());
  EXPECT_FALSE(read_text_file("/tmp").ok());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace sniper::agent
