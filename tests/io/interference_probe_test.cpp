// SPDX-License-Identifier: MIT
// Interference probe: both phases run, the reader's figures come back, arguments and reader
// errors are reported. How much the reads slow compute depends on the machine and is not
// asserted; `sniper bench` prints it.
#include "io/interference_probe.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "io/io_test_util.h"

namespace sniper {
namespace {

using io_test::PatternFile;

constexpr uint64_t kMiB = 1024 * 1024;

TEST(InterferenceProbe, TimesComputeAloneAndUnderReads) {
  PatternFile f(io_test::disk_temp_dir(), 8 * kMiB);
  std::atomic<int64_t> calls{0};
  auto work = [&] {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    calls.fetch_add(1);
  };
  auto r = probe_compute_under_reads(work, f.path(), 64 * 1024, 4, 0.1);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_GE(r->quiet_calls, 1);
  EXPECT_GE(r->loaded_calls, 1);
  EXPECT_EQ(calls.load(), r->quiet_calls + r->loaded_calls);
  // Each call sleeps 200 us, so each phase's mean is at least that.
  EXPECT_GE(r->quiet_s_per_call, 200e-6);
  EXPECT_GE(r->loaded_s_per_call, 200e-6);
  EXPECT_GT(r->reads.n_reads, 0u);
  EXPECT_GT(r->reads.gb_per_s, 0.0);
  EXPECT_EQ(r->reads.queue_depth, 4);
  EXPECT_GT(r->compute_speed(), 0.0);
}

TEST(InterferenceProbe, ReportsBadArgumentsAndReaderErrors) {
  auto nothing = [] {};
  auto seconds = probe_compute_under_reads(nothing, "/nonexistent", 4096, 1, 0.0);
  ASSERT_FALSE(seconds.ok());
  EXPECT_NE(seconds.error().message.find("seconds"), std::string::npos) << seconds.error().message;
  auto missing = probe_compute_under_reads(nothing, "/nonexistent/model.gguf", 4096, 1, 0.05);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/model.gguf"), std::string::npos) << missing.error().message;
  PatternFile f(io_test::disk_temp_dir(), kMiB);
  auto depth = probe_compute_under_reads(nothing, f.path(), 4096, 0, 0.05);
  ASSERT_FALSE(depth.ok());
  EXPECT_NE(depth.error().message.find("queue_depth"), std::string::npos) << depth.error().message;
}

}  // namespace
}  // namespace sniper
