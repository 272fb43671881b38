// SPDX-License-Identifier: MIT
// A short read-throughput probe of the disk holding a file: random-offset reads of a fixed size
// at a fixed queue depth through the IoEngine (O_DIRECT where the file system allows it,
// io_uring where available), bounded in time and bytes. `sniper bench` uses it to compute the
// physical limit of streamed decoding (bytes per token / disk GB/s).
// Invariant: never reads more than bytes_max (plus nothing: reads are only issued while the
// budget allows a whole read) and stops issuing reads once seconds_max has passed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/result.h"
#include "io/io_engine.h"

namespace sniper {

struct DiskProbeResult {
  double gb_per_s = 0;         // requested bytes / seconds / 1e9
  double mean_latency_us = 0;  // by Little's law: queue_depth * seconds / n_reads
  uint64_t bytes_read = 0;     // bytes requested and read
  uint64_t n_reads = 0;
  double seconds = 0;
  size_t read_bytes = 0;
  int queue_depth = 0;
  IoBackend backend = IoBackend::kAuto;  // the backend used (kUring or kPread)
  bool direct = false;                   // false: O_DIRECT unavailable, figures may include page-cache hits
};

// Reads `read_bytes`-sized blocks at random 4096-aligned offsets of `path` (fixed seed) with
// `queue_depth` reads in flight until seconds_max has passed or bytes_max bytes were read.
// An Error names the argument out of range (read_bytes a multiple of 4096 in [4 KiB, 256 MiB]
// and <= the file size; queue_depth in [1, 1024]; seconds_max in (0, 600]; bytes_max >=
// read_bytes) or the I/O error. `backend` picks the IoEngine backend (pread uses queue_depth
// threads). Thread-compatible; allocates queue_depth * read_bytes bytes of buffers.
[[nodiscard]] Result<DiskProbeResult> probe_read_throughput(const std::string& path, size_t read_bytes, int queue_depth,
                                                            double seconds_max, uint64_t bytes_max,
                                                            IoBackend backend = IoBackend::kAuto);

}  // namespace sniper
