// SPDX-License-Identifier: MIT
#include "io/direct_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include "base/log.h"
#include "io/io_test_util.h"

namespace sniper {
namespace {

using io_test::PatternFile;

bool is_tmpfs(const std::string& dir) {
  struct statfs sfs;
  return ::statfs(dir.c_str(), &sfs) == 0 && sfs.f_type == 0x01021994;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(DirectFile, OpensDiskFileAndRecordsSize) {
  PatternFile f(io_test::disk_temp_dir(), 3 * 4096 + 17);
  auto file = DirectFile::open(f.path());
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->size(), f.size());
  EXPECT_EQ(file->path(), f.path());
  EXPECT_FALSE(file->fs_name().empty());
  EXPECT_GE(file->fd(), 0);
  if (file->is_direct()) {
    const uint32_t a = file->alignment();
    EXPECT_TRUE(a >= 512 && a <= 4096 && (a & (a - 1)) == 0) << a;
    EXPECT_GE(file->buffer_alignment(), 1u);
    EXPECT_EQ(file->buffer_alignment() & (file->buffer_alignment() - 1), 0u);
  } else {
    EXPECT_EQ(file->alignment(), 1u);
  }
  EXPECT_TRUE(file->check_unchanged().ok());
}

TEST(DirectFile, ForcedBufferedHasNoAlignmentAndNoNotice) {
  set_log_level(LogLevel::kWarn);
  PatternFile f(io_test::disk_temp_dir(), 10000);
  testing::internal::CaptureStderr();
  auto file = DirectFile::open(f.path(), {DirectMode::kForceBuffered});
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_FALSE(file->is_direct());
  EXPECT_EQ(file->alignment(), 1u);
  EXPECT_EQ(file->buffer_alignment(), 1u);
  EXPECT_EQ(err, "");
  file->drop_cache(0, 10000);  // must be harmless
}

TEST(DirectFile, MemoryBackedFileSystemFallsBackWithOneNotice) {
  const std::string dir = "/dev/shm";
  if (!std::filesystem::is_directory(dir) || !is_tmpfs(dir)) GTEST_SKIP() << "no tmpfs at /dev/shm";
  set_log_level(LogLevel::kWarn);
  PatternFile f(dir, 8192 + 5);
  testing::internal::CaptureStderr();
  auto file = DirectFile::open(f.path());
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_FALSE(file->is_direct());
  EXPECT_EQ(file->alignment(), 1u);
  EXPECT_EQ(file->fs_name(), "tmpfs");
  EXPECT_TRUE(contains(err, "O_DIRECT")) << err;
  EXPECT_TRUE(contains(err, f.path() + " (tmpfs); using buffered reads with posix_fadvise(DONTNEED)")) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST(DirectFile, ForcedDirectOnDiskIsDirect) {
  PatternFile f(io_test::disk_temp_dir(), 4096);
  auto file = DirectFile::open(f.path(), {DirectMode::kForceDirect});
  if (!file.ok()) {
    // Only acceptable when the temp file system really refuses O_DIRECT; the error says so.
    EXPECT_TRUE(contains(file.error().message, "O_DIRECT")) << file.error().message;
    GTEST_SKIP() << file.error().message;
  }
  EXPECT_TRUE(file->is_direct());
}

TEST(DirectFile, OpenErrorsNameThePath) {
  auto missing = DirectFile::open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.error().message, "/nonexistent/dir/model.gguf")) << missing.error().message;

  auto dir = DirectFile::open(io_test::disk_temp_dir(), {DirectMode::kForceBuffered});
  ASSERT_FALSE(dir.ok());
  EXPECT_TRUE(contains(dir.error().message, "not a regular file")) << dir.error().message;
}

TEST(DirectFile, CheckUnchangedDetectsTruncation) {
  PatternFile f(io_test::disk_temp_dir(), 65536);
  auto file = DirectFile::open(f.path());
  ASSERT_TRUE(file.ok());
  ASSERT_EQ(::truncate(f.path().c_str(), 4096), 0);
  const Status st = file->check_unchanged();
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.error().message, "changed size")) << st.error().message;
  EXPECT_TRUE(contains(st.error().message, "truncated")) << st.error().message;
}

TEST(DirectFile, CheckUnchangedDetectsReplacementAndRemoval) {
  PatternFile f(io_test::disk_temp_dir(), 8192);
  PatternFile g(io_test::disk_temp_dir(), 8192);
  auto file = DirectFile::open(f.path());
  ASSERT_TRUE(file.ok());
  // Same size and content, but a different file now sits at the path.
  ASSERT_EQ(std::rename(g.path().c_str(), f.path().c_str()), 0);
  Status st = file->check_unchanged();
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.error().message, "replaced")) << st.error().message;

  ASSERT_EQ(std::remove(f.path().c_str()), 0);
  st = file->check_unchanged();
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.error().message, "removed")) << st.error().message;
}

TEST(DirectFile, CheckUnchangedDetectsModification) {
  PatternFile f(io_test::disk_temp_dir(), 8192);
  auto file = DirectFile::open(f.path());
  ASSERT_TRUE(file.ok());
  const struct timespec times[2] = {{0, UTIME_OMIT}, {12345, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, f.path().c_str(), times, 0), 0);
  const Status st = file->check_unchanged();
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.error().message, "modified")) << st.error().message;
}

TEST(DirectFile, MoveKeepsTheDescriptor) {
  PatternFile f(io_test::disk_temp_dir(), 4096);
  auto file = DirectFile::open(f.path());
  ASSERT_TRUE(file.ok());
  const int fd = file->fd();
  DirectFile moved = std::move(file).value();
  EXPECT_EQ(moved.fd(), fd);
  EXPECT_EQ(moved.size(), 4096u);
  EXPECT_TRUE(moved.check_unchanged().ok());
}

}  // namespace
}  // namespace sniper
