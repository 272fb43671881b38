// SPDX-License-Identifier: MIT
// Job: one unit of work for the scheduler (generate text, evaluate a prompt and capture its KV
// state, restore a saved state into a slot, or embed a prompt) and the channel its output travels back on.
// The HTTP thread that submitted the job reads text and the final result; the scheduler thread
// writes them. cancel() may be called from any thread: the scheduler stops the job before its
// next forward pass and frees the slot. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/embedding.h"
#include "engine/generator.h"
#include "engine/media_prompt.h"
#include "engine/session_state.h"

namespace sniper::server {

enum class JobKind { kGenerate, kSave, kLoad, kEmbed };

// A prompt with media (server/media_input.h): the encoded chunks and the prompt whose media
// pieces point at them. Immutable once built; shared by the job and the route.
struct JobMedia {
  std::vector<MediaChunk> chunks;
  MediaPrompt prompt;  // cells equal Job::prompt
};

struct JobResult {
  std::string finish_reason;  // "stop", "length" or "cancelled" (kGenerate); "" otherwise
  std::string stop_string;    // finish_reason "stop" by a stop string: which one ("" for end of generation)
  std::string error;          // non-empty: the job failed (nothing else is valid)
  int error_status = 500;     // HTTP status for the error
  int64_t n_prompt = 0;       // prompt tokens
  int64_t n_cached = 0;       // of those, reused from the slot's KV cache (not evaluated)
  int64_t n_generated = 0;
  double prompt_ms = 0;                 // prompt evaluation
  double decode_ms = 0;                 // decode forward passes
  double ttft_ms = -1;                  // from the start of the job to the first text; < 0 if none
  bool speculative = false;             // decoded with drafts (engine/speculative.h)
  int64_t n_drafted = 0;                // speculative: draft tokens verified
  int64_t n_accepted = 0;               // speculative: of those, kept
  std::shared_ptr<SessionState> state;  // kSave: the captured state
  std::vector<float> embedding;         // kEmbed: the prompt's pooled, L2-normalised embedding
  int slot = -1;
};

class Job {
 public:
  JobKind kind = JobKind::kGenerate;
  std::vector<int32_t> prompt;                      // kGenerate, kSave (cells: kMediaToken at media)
  std::shared_ptr<const JobMedia> media;            // kGenerate: the prompt's media; null for text
  GeneratorOptions generator;                       // kGenerate (n_predict already capped by the context)
  std::shared_ptr<const SessionState> load;         // kLoad
  Pooling pooling = Pooling::kLast;                 // kEmbed (engine/embedding.h)
  std::chrono::steady_clock::time_point submitted;  // set by Scheduler::submit (queue time, TTFT)

  // --- consumer (HTTP thread) ---
  // Waits until text arrives, the job is done, or `timeout` passes. Moves the new text into
  // *text and returns true when the job is done (result() is then valid and no more text comes).
  // wait() and wait_done() note the finished job's token counts in the calling thread's request
  // log (request_log.h).
  bool wait(std::chrono::milliseconds timeout, std::string* text);
  // Blocks until done and returns the result.
  const JobResult& wait_done();
  const JobResult& result() const { return result_; }
  void cancel() { cancelled_.store(true); }

  // --- producer (scheduler thread) ---
  bool cancelled() const { return cancelled_.load(); }
  void push_text(std::string_view text);
  void finish(JobResult result);
  bool done() const;

 private:
  void note_result_locked() const;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string text_;  // produced and not yet taken
  bool done_ = false;
  JobResult result_;  // written once under mu_ before done_ is set
  std::atomic<bool> cancelled_{false};
};

}  // namespace sniper::server
