// SPDX-License-Identifier: MIT
// Disk probe tests: budgets in bytes and time are honoured, arguments are validated. The
// DISABLED_ throughput table is a manual benchmark (run it with
// --gtest_also_run_disabled_tests --gtest_filter='*Throughput*', ideally in a release build):
// it writes a 2 GiB file (SNIPER_IO_BENCH_DIR, else SNIPER_BIN_DIR, else the current directory),
// prints 1 MiB random-read GB/s at depth 1, 8 and 32 for io_uring and pread, and deletes it.
#include "io/disk_probe.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "io/io_test_util.h"

namespace sniper {
namespace {

using io_test::PatternFile;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * 1024;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(DiskProbe, StopsAtTheByteBudget) {
  PatternFile f(io_test::disk_temp_dir(), 8 * kMiB);
  for (IoBackend backend : {IoBackend::kAuto, IoBackend::kPread}) {
    auto r = probe_read_throughput(f.path(), 64 * kKiB, 4, 30.0, 2 * kMiB + 1000, backend);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->bytes_read, 2 * kMiB);  // 32 whole reads; a 33rd would exceed the budget
    EXPECT_EQ(r->n_reads, 32u);
    EXPECT_GT(r->gb_per_s, 0.0);
    EXPECT_GT(r->mean_latency_us, 0.0);
    EXPECT_EQ(r->read_bytes, 64 * kKiB);
    EXPECT_EQ(r->queue_depth, 4);
    EXPECT_NE(r->backend, IoBackend::kAuto);
    if (backend == IoBackend::kPread) {
      EXPECT_EQ(r->backend, IoBackend::kPread);
    }
  }
}

TEST(DiskProbe, StopsAtTheTimeBudget) {
  PatternFile f(io_test::disk_temp_dir(), 4 * kMiB);
  auto r = probe_read_throughput(f.path(), 4096, 2, 0.05, UINT64_MAX);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_GT(r->n_reads, 0u);
  EXPECT_LT(r->seconds, 2.0);
}

TEST(DiskProbe, RejectsArgumentsOutOfRange) {
  PatternFile f(io_test::disk_temp_dir(), 64 * kKiB);
  struct Case {
    size_t read_bytes;
    int depth;
    double seconds;
    uint64_t bytes;
    const char* message;
  };
  const Case cases[] = {
      {1000, 1, 1, kMiB, "read_bytes is 1000"},
      {512 * kMiB, 1, 1, UINT64_MAX, "read_bytes is 536870912"},
      {4096, 0, 1, kMiB, "queue_depth is 0 but must be in [1, 1024]"},
      {4096, 1, 0, kMiB, "seconds_max is 0"},
      {4096, 1, 1, 100, "bytes_max is 100"},
      {128 * kKiB, 1, 1, kMiB, "fewer than read_bytes"},
  };
  for (const Case& c : cases) {
    auto r = probe_read_throughput(f.path(), c.read_bytes, c.depth, c.seconds, c.bytes);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_TRUE(contains(r.error().message, c.message)) << r.error().message;
  }
  auto missing = probe_read_throughput("/nonexistent/file", 4096, 1, 1, kMiB);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.error().message, "/nonexistent/file"));
}

// Writes `size` bytes of incompressible data to `path`, flushes it to the device and drops it
// from the page cache, so later O_DIRECT reads hit the SSD (fallocate would leave unwritten
// extents that read as zeros without touching the device).
bool write_bench_file(const std::string& path, uint64_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  std::vector<uint64_t> buf(4 * kMiB / sizeof(uint64_t));
  std::mt19937_64 rng(42);
  for (uint64_t& v : buf) v = rng();
  bool ok = true;
  for (uint64_t pos = 0; pos < size && ok; pos += 4 * kMiB) {
    buf[0] = pos;  // every block differs
    ok = ::pwrite(fd, buf.data(), 4 * kMiB, static_cast<off_t>(pos)) == static_cast<ssize_t>(4 * kMiB);
  }
  ok = ok && ::fsync(fd) == 0;
  (void)posix_fadvise(fd, 0, static_cast<off_t>(size), POSIX_FADV_DONTNEED);
  ::close(fd);
  return ok;
}

TEST(DiskProbe, DISABLED_ThroughputTable) {
  const char* dir = std::getenv("SNIPER_IO_BENCH_DIR");
  if (dir == nullptr) dir = std::getenv("SNIPER_BIN_DIR");
  const std::string path =
      std::string(dir != nullptr ? dir : ".") + "/sniper_io_bench_" + std::to_string(::getpid()) + ".bin";
  constexpr uint64_t kFileBytes = uint64_t{2} << 30;
  ASSERT_TRUE(write_bench_file(path, kFileBytes)) << "cannot write " << path;
  std::printf("1 MiB random reads over a 2 GiB file (%s), 3 s or 3 GiB per cell\n", path.c_str());
  std::printf("%-9s %5s %9s %12s %8s %6s\n", "backend", "depth", "GB/s", "latency_us", "reads", "direct");
  for (int depth : {1, 8, 32}) {  // backends interleaved: the shared disk's speed drifts
    for (IoBackend backend : {IoBackend::kUring, IoBackend::kPread}) {
      auto r = probe_read_throughput(path, kMiB, depth, 3.0, uint64_t{3} << 30, backend);
      ASSERT_TRUE(r.ok()) << r.error().message;
      std::printf("%-9s %5d %9.3f %12.1f %8llu %6s\n", io_backend_name(r->backend), depth, r->gb_per_s,
                  r->mean_latency_us, static_cast<unsigned long long>(r->n_reads), r->direct ? "yes" : "no");
      std::fflush(stdout);
    }
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace sniper
