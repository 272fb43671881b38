// SPDX-License-Identifier: MIT
#include "server/job.h"

namespace sniper::server {

bool Job::wait(std::chrono::milliseconds timeout, std::string* text) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return done_ || !text_.empty(); });
  text->append(text_);
  text_.clear();
  return done_;
}

const JobResult& Job::wait_done() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
  return result_;
}

void Job::push_text(std::string_view text) {
  if (text.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    text_.append(text);
  }
  cv_.notify_all();
}

void Job::finish(JobResult result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    result_ = std::move(result);
    done_ = true;
  }
  cv_.notify_all();
}

bool Job::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

}  // namespace sniper::server
