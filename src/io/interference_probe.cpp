// SPDX-License-Identifier: MIT
// Compute slowed by concurrent disk reads. See interference_probe.h.
#include "io/interference_probe.h"

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

namespace sniper {

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

Result<InterferenceProbeResult> probe_compute_under_reads(const std::function<void()>& compute, const std::string& path,
                                                          size_t read_bytes, int queue_depth, double seconds) {
  if (!(seconds > 0 && seconds <= 60))
    return make_error("interference probe seconds is %g but must be in (0, 60]", seconds);
  InterferenceProbeResult out;
  // Quiet: at least one call, then until `seconds` have passed.
  const double t0 = now_s();
  do {
    compute();
    ++out.quiet_calls;
  } while (now_s() - t0 < seconds);
  out.quiet_s_per_call = (now_s() - t0) / static_cast<double>(out.quiet_calls);

  // Loaded: the reader runs for `seconds`; compute runs until it is done.
  std::atomic<bool> reading{true};
  std::optional<Result<DiskProbeResult>> reads;
  std::thread reader([&] {
    reads.emplace(probe_read_throughput(path, read_bytes, queue_depth, seconds, UINT64_MAX));
    reading.store(false, std::memory_order_release);
  });
  const double t1 = now_s();
  while (reading.load(std::memory_order_acquire)) {
    compute();
    ++out.loaded_calls;
  }
  const double loaded_s = now_s() - t1;
  reader.join();
  if (!reads->ok()) return reads->error();
  out.reads = **reads;
  // A reader that failed at once (or a compute call longer than the whole read) leaves nothing
  // to compare.
  if (out.loaded_calls == 0)
    return make_error("interference probe: one compute call outlasted the %g s of reads", seconds);
  out.loaded_s_per_call = loaded_s / static_cast<double>(out.loaded_calls);
  return out;
}

}  // namespace sniper
