// SPDX-License-Identifier: MIT
// Spin-then-sleep thread pool. A job is published by bumping generation_; workers that are
// spinning see it at once, sleeping ones are woken through the condition variable.
#include "base/thread_pool.h"

#include <sched.h>
#include <unistd.h>

#include "base/check.h"

// The spin-wait hint: PAUSE on x86-64, YIELD on aarch64 (both let a sibling hardware thread run
// and save power while a worker spins).
#if defined(__x86_64__)
#include <immintrin.h>
#define SNIPER_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define SNIPER_PAUSE() __asm__ __volatile__("yield")
#else
#define SNIPER_PAUSE() ((void)0)
#endif

namespace sniper {

namespace {
// While waiting for a worker that is running its share: spin this long, then yield the core
// between checks (the worker may be waiting for this very core).
constexpr int kWaitSpinsBeforeYield = 2000;
}  // namespace

int hardware_threads() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

ThreadPool::ThreadPool(int n_threads, int spin_iterations)
    : n_threads_(n_threads > 0 ? n_threads : hardware_threads()),
      spin_iterations_(spin_iterations),
      slots_(new Slot[static_cast<size_t>(n_threads_)]) {
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int thread_idx) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    int spins = 0;
    while (gen == seen && spins < spin_iterations_ && parked_.load(std::memory_order_relaxed) != seen) {
      SNIPER_PAUSE();
      ++spins;
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);
      cv_.wait(lock, [&] { return generation_.load() != seen; });
      sleepers_.fetch_sub(1);
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_.load()) return;
    // Claim this job unless the caller already took our share (we were late).
    Slot& slot = slots_[static_cast<size_t>(thread_idx)];
    uint64_t claimed = slot.claimed.load(std::memory_order_acquire);
    if (claimed < gen && slot.claimed.compare_exchange_strong(claimed, gen, std::memory_order_acq_rel)) {
      (*job_)(thread_idx, n_threads_);
      slot.done.store(gen, std::memory_order_release);
    }
  }
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  job_ = &fn;
  const uint64_t gen = generation_.fetch_add(1) + 1;  // seq_cst: pairs with the sleeper's check (Dekker)
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
  fn(0, n_threads_);
  for (int i = 1; i < n_threads_; ++i) {
    Slot& slot = slots_[static_cast<size_t>(i)];
    uint64_t claimed = slot.claimed.load(std::memory_order_acquire);
    if (claimed < gen && slot.claimed.compare_exchange_strong(claimed, gen, std::memory_order_acq_rel)) {
      fn(i, n_threads_);  // the worker has not started: its share runs here
      continue;
    }
    for (int spins = 0; slot.done.load(std::memory_order_acquire) != gen; ++spins) {
      if (spins < kWaitSpinsBeforeYield) {
        SNIPER_PAUSE();
      } else {
        sched_yield();
      }
    }
  }
  job_ = nullptr;
}

void ThreadPool::park() { parked_.store(generation_.load(std::memory_order_relaxed), std::memory_order_relaxed); }

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (n_threads_ == 1 || n <= grain) {
    fn(0, n);
    return;
  }
  std::atomic<int64_t> next{0};
  run([&](int, int) {
    for (;;) {
      int64_t begin = next.fetch_add(grain, std::memory_order_relaxed);
      if (begin >= n) break;
      int64_t end = begin + grain < n ? begin + grain : n;
      fn(begin, end);
    }
  });
}

}  // namespace sniper
