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
  // About 0.2 ms of spinning (measured on a Xeon): long enough to bridge the gap between
  // consecutive matmuls of one token, short enough not to burn a core while idle. park() cuts
  // it short when the caller knows it is about to block.
  static constexpr int kDefaultSpinIterations = 20000;

  // n_threads >= 1 counts the caller. 0 means "all cores". An idle worker spins
  // `spin_iterations` pauses (default: about 0.2 ms) before it sleeps.
  explicit ThreadPool(int n_threads, int spin_iterations = kDefaultSpinIterations);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }

  // Runs fn(thread_idx, n_threads) once on every thread; returns when all have finished.
  void run(const std::function<void(int thread_idx, int n_threads)>& fn);

  // Calls fn(begin, end) over [0, n) in chunks of about `grain` items, handed out dynamically
  // so uneven work balances. Returns when all chunks are done.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

  // The caller is about to block (on a disk read, say): workers that are idle stop spinning and
  // sleep until the next run(). On a machine whose I/O path shares the cores (a VM's block
  // layer, its interrupts), a spinning worker only slows the read the caller waits for.
  void park();
  // Workers asleep on the condition variable now (for tests).
  int sleeping_workers() const { return sleepers_.load(); }

 private:
  void worker_loop(int thread_idx);

  int n_threads_;
  int spin_iterations_;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> parked_{UINT64_MAX};  // park()ed after this generation: idle workers sleep
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
