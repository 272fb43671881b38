// SPDX-License-Identifier: MIT
// How much reading the disk slows this machine's compute. Streamed decoding hides its reads
// behind compute, and the physical limit `sniper bench` prints assumes that hiding is free. On
// some machines it is not: on a VM the host serves the virtual disk with the cores the guest
// computes on, and the guest's block layer and interrupts take their share too. The probe runs
// one unit of compute (a caller's callback, e.g. one output-head matvec) repeatedly, first alone
// and then while a second thread reads the disk as the disk probe does, and compares the mean
// time per call of the two phases.
// Thread-compatible; `compute` runs on the calling thread (and may use a thread pool).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "base/result.h"
#include "io/disk_probe.h"

namespace sniper {

struct InterferenceProbeResult {
  double quiet_s_per_call = 0;   // mean seconds per compute call, nothing else running
  double loaded_s_per_call = 0;  // the same while the reader ran
  int64_t quiet_calls = 0;
  int64_t loaded_calls = 0;
  DiskProbeResult reads;  // the reader's own figures while the compute ran
  // The share of its quiet speed that compute keeps while the disk is read (1: no interference).
  double compute_speed() const { return loaded_s_per_call > 0 ? quiet_s_per_call / loaded_s_per_call : 0; }
};

// Calls `compute` for `seconds` alone, then for as long as a thread reads `path` with
// `queue_depth` reads of `read_bytes` in flight for `seconds`. Errors: seconds out of (0, 60],
// or the reader's own (bad path, read_bytes or queue_depth out of range, an I/O error).
[[nodiscard]] Result<InterferenceProbeResult> probe_compute_under_reads(const std::function<void()>& compute,
                                                                        const std::string& path, size_t read_bytes,
                                                                        int queue_depth, double seconds);

}  // namespace sniper
