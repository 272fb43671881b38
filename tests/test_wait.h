// SPDX-License-Identifier: MIT
// How a test waits for something another thread does: on the event itself (Event), or on a
// predicate polled until a deadline (wait_until). Never a bare sleep that hopes the other
// thread got there by then: flaky on a loaded machine (or under a sanitizer), slow on an idle one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace sniper::test {

// A one-shot flag that one thread sets and others wait for.
class Event {
 public:
  void set() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      set_ = true;
    }
    cv_.notify_all();
  }
  // True once set(); false when `timeout` passed first.
  bool wait_for(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return set_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

// Polls `pred` every `step` until it holds (true) or `timeout` passed (false, after one last
// look at the deadline). For state another thread changes without signalling (a counter, a
// server's metrics).
template <class Pred>
bool wait_until(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(10),
                std::chrono::milliseconds step = std::chrono::milliseconds(1)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(step);
  }
  return true;
}

}  // namespace sniper::test
