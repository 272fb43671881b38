// SPDX-License-Identifier: MIT
#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <thread>
#include <vector>

#include "test_wait.h"

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

// Waits up to 10 s for `n` workers of `pool` to be asleep.
bool workers_fall_asleep(const ThreadPool& pool, int n) {
  return test::wait_until([&] { return pool.sleeping_workers() >= n; }) && pool.sleeping_workers() == n;
}

bool workers_wake(const ThreadPool& pool) {
  return test::wait_until([&] { return pool.sleeping_workers() == 0; });
}

TEST(ThreadPool, SurvivesIdleSleepAndWake) {
  ThreadPool pool(2);
  std::atomic<int> count{0};
  for (int rep = 0; rep < 5; ++rep) {
    pool.run([&](int, int) { count.fetch_add(1); });
    // The worker passes its spin phase and sleeps before the next job.
    EXPECT_TRUE(workers_fall_asleep(pool, 1)) << "rep " << rep;
  }
  EXPECT_EQ(count.load(), 10);
}

TEST(ThreadPool, ParkPutsSpinningWorkersToSleepUntilTheNextJob) {
  // Workers that would spin for good (no sleep without park()).
  ThreadPool pool(3, std::numeric_limits<int>::max());
  std::atomic<int> count{0};
  for (int rep = 0; rep < 3; ++rep) {
    pool.run([&](int, int) { count.fetch_add(1); });
    // A parked worker woken for this job may get a core only after run() returned (the caller ran
    // its share): wait for every worker to be up, then check none goes back to sleep.
    EXPECT_TRUE(workers_wake(pool)) << pool.sleeping_workers() << " workers still asleep after a job";
    // That nothing happens can only be watched for a while: 20 ms in which a sleeping worker
    // would show (a spinning one never sleeps, however long the wait).
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(pool.sleeping_workers(), 0) << "without park() the workers keep spinning";
    pool.park();
    EXPECT_TRUE(workers_fall_asleep(pool, 2)) << pool.sleeping_workers() << " of 2 workers asleep after park()";
  }
  // Parked workers wake for the next job and each share still runs exactly once.
  std::vector<std::atomic<int>> hits(3);
  for (int rep = 0; rep < 50; ++rep) {
    pool.run([&](int idx, int) { hits[static_cast<size_t>(idx)].fetch_add(1); });
    if (rep % 5 == 0) pool.park();
  }
  for (auto& h : hits) EXPECT_EQ(h.load(), 50);
  EXPECT_EQ(count.load(), 9);
}

TEST(ThreadPool, ParkBeforeAnyJobIsHarmless) {
  ThreadPool pool(2, std::numeric_limits<int>::max());
  pool.park();
  EXPECT_TRUE(workers_fall_asleep(pool, 1));
  std::atomic<int> count{0};
  pool.run([&](int, int) { count.fetch_add(1); });
  EXPECT_EQ(count.load(), 2);
}

}  // namespace
}  // namespace sniper
