// SPDX-License-Identifier: MIT
// A fixed pool of worker threads for data-parallel loops. The calling thread takes part as
// thread 0. Workers spin briefly on a generation counter before sleeping, so back-to-back
// parallel regions (one per matmul) cost a few hundred nanoseconds, not a futex round trip.
// A worker claims each job before running it; when the caller has finished its own share it
// claims, and runs itself, the share of every worker that has not started yet. So a worker that
// the OS has not scheduled (more runnable threads than cores) never holds up a job; the caller
// only waits for workers that are already running their share.
// Thread-compatible: one caller at a time may submit work.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace sniper {

class ThreadPool {
 public:
  // n_threads >= 1 counts the caller. 0 means "all cores".
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }

  // Runs fn(thread_idx, n_threads) once on every thread; returns when all have finished.
  void run(const std::function<void(int thread_idx, int n_threads)>& fn);

  // Calls fn(begin, end) over [0, n) in chunks of about `grain` items, handed out dynamically
  // so uneven work balances. Returns when all chunks are done.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  void worker_loop(int thread_idx);

  int n_threads_;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  // Per thread (index 0 unused): the last job generation claimed, and the last one finished.
  // 64-byte separated so threads do not share cache lines.
  struct alignas(64) Slot {
    std::atomic<uint64_t> claimed{0};
    std::atomic<uint64_t> done{0};
  };
  std::unique_ptr<Slot[]> slots_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int> sleepers_{0};
};

// Number of online cores (at least 1).
int hardware_threads();

}  // namespace sniper
