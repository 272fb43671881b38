// SPDX-License-Identifier: MIT
#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace sniper {
namespace {

TEST(ThreadPool, RunCallsEveryThreadOnce) {
  for (int n : {1, 2, 3}) {
    ThreadPool pool(n);
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    for (int rep = 0; rep < 200; ++rep) {
      pool.run([&](int idx, int total) {
        EXPECT_EQ(total, n);
        hits[static_cast<size_t>(idx)].fetch_add(1);
      });
    }
    for (auto& h : hits) EXPECT_EQ(h.load(), 200);
  }
}

TEST(ThreadPool, ParallelForCoversRangeExactlyOnce) {
  ThreadPool pool(2);
  for (int64_t n : {0, 1, 7, 64, 1000, 4097}) {
    for (int64_t grain : {1, 3, 64}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
      pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
        EXPECT_LE(b, e);
        for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)].fetch_add(1);
      });
      for (auto& s : seen) EXPECT_EQ(s.load(), 1);
    }
  }
}

TEST(ThreadPool, OversubscribedPoolRunsEveryShareExactlyOncePerJob) {
  // More threads than cores: some workers are not scheduled when a job starts, and the caller
  // runs their shares. Every job must still see each thread index exactly once, never a share
  // of an earlier or later job, and a share's writes must be visible when run() returns.
  const int n = 4 * hardware_threads() + 1;
  ThreadPool pool(n);
  std::vector<int> per_job(static_cast<size_t>(n));
  for (int job = 1; job <= 3000; ++job) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    pool.run([&](int idx, int) {
      hits[static_cast<size_t>(idx)].fetch_add(1);
      per_job[static_cast<size_t>(idx)] = job;  // plain write: run() must publish it
    });
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "job " << job << " thread " << i;
      ASSERT_EQ(per_job[static_cast<size_t>(i)], job);
    }
  }
}

TEST(ThreadPool, SurvivesIdleSleepAndWake) {
  ThreadPool pool(2);
  std::atomic<int> count{0};
  for (int rep = 0; rep < 5; ++rep) {
    pool.run([&](int, int) { count.fetch_add(1); });
    // Long enough for workers to pass the spin phase and sleep.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(count.load(), 10);
}

}  // namespace
}  // namespace sniper
