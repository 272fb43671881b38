// SPDX-License-Identifier: MIT
// A fixed pool of worker threads for data-parallel loops. The calling thread takes part as
// thread 0. Workers spin briefly on a generation counter before sleeping, so back-to-back
// parallel regions (one per matmul) cost a few hundred nanoseconds, not a futex round trip.
// Thread-compatible: one caller at a time may submit work.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
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
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int> sleepers_{0};
};

// Number of online cores (at least 1).
int hardware_threads();

}  // namespace sniper
