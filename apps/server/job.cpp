// SPDX-License-Identifier: MIT
#include "server/job.h"

#include "server/request_log.h"

namespace sniper::server {

bool Job::wait(std::chrono::milliseconds timeout, std::string* text) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return done_ || !text_.empty(); });
  text->append(text_);
  text_.clear();
  if (done_) note_result_locked();
  return done_;
}

void Job::note_result_locked() const {
  // The request log of the consumer's thread (the connection that submitted the job).
  if (kind != JobKind::kLoad && result_.error.empty()) {
    note_request_tokens(result_.n_prompt, result_.n_cached, kind == JobKind::kGenerate ? result_.n_generated : 0,
                        result_.finish_reason);
  }
}

const JobResult& Job::wait_done() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
  note_result_locked();
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
