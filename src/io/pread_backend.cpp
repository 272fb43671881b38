// SPDX-License-Identifier: MIT
// The pread backend: a fixed pool of worker threads, each taking chunks from a shared queue and
// reading them with blocking pread (retrying short reads). The number of threads is the number
// of reads in flight. Finished chunks go to a result list the engine's thread collects.
// Invariant: outstanding_ == queue_.size() + running chunks + done_.size(); all three guarded
// by mu_.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "base/check.h"
#include "io/io_backend.h"

namespace sniper::io_internal {

namespace {

class PreadBackend final : public Backend {
 public:
  PreadBackend(const ReadContext& ctx, uint32_t n_threads) : ctx_(ctx) {
    workers_.reserve(n_threads);
    for (uint32_t i = 0; i < n_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
  }

  // Drops queued chunks and waits for the running ones (they write into caller memory).
  ~PreadBackend() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      queue_.clear();
    }
    work_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  IoBackend kind() const override { return IoBackend::kPread; }

  Status register_buffers(std::span<const iovec>) override { return ok_status(); }

  void enqueue(std::span<const Chunk> chunks) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.insert(queue_.end(), chunks.begin(), chunks.end());
      outstanding_ += chunks.size();
    }
    if (chunks.size() == 1) {
      work_cv_.notify_one();
    } else {
      work_cv_.notify_all();
    }
  }

  void poll(std::vector<ChunkResult>& out) override {
    std::lock_guard<std::mutex> lock(mu_);
    take_done(out);
  }

  void wait_some(std::vector<ChunkResult>& out) override {
    std::unique_lock<std::mutex> lock(mu_);
    CHECK(outstanding_ > 0, "wait_some with nothing outstanding");
    done_cv_.wait(lock, [this] { return !done_.empty(); });
    take_done(out);
  }

  size_t outstanding() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return outstanding_;
  }

  uint32_t max_in_flight() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return max_running_;
  }

  void reset_max_in_flight() override {
    std::lock_guard<std::mutex> lock(mu_);
    max_running_ = running_;
  }

 private:
  void take_done(std::vector<ChunkResult>& out) {
    for (ChunkResult& r : done_) out.push_back(std::move(r));
    outstanding_ -= done_.size();
    done_.clear();
  }

  void worker_loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      Chunk c = queue_.front();
      queue_.pop_front();
      ++running_;
      max_running_ = std::max(max_running_, running_);
      lock.unlock();
      ChunkResult r = run_chunk_with_pread(ctx_, c);
      lock.lock();
      --running_;
      done_.push_back(std::move(r));
      done_cv_.notify_one();
    }
  }

  ReadContext ctx_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<Chunk> queue_;
  std::vector<ChunkResult> done_;
  size_t outstanding_ = 0;
  uint32_t running_ = 0;
  uint32_t max_running_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;  // last: started after the members above exist
};

}  // namespace

std::unique_ptr<Backend> make_pread_backend(const ReadContext& ctx, uint32_t n_threads) {
  return std::make_unique<PreadBackend>(ctx, n_threads);
}

}  // namespace sniper::io_internal
