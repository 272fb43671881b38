// SPDX-License-Identifier: MIT
// Disk read-throughput probe. See disk_probe.h.
#include "io/disk_probe.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <random>
#include <vector>

#include "base/log.h"
#include "io/aligned_buffer.h"

namespace sniper {

namespace {

constexpr size_t kProbeAlignment = 4096;

struct Slot {
  AlignedBuffer buffer;
  ReadTicket ticket = 0;
  bool active = false;
};

}  // namespace

Result<DiskProbeResult> probe_read_throughput(const std::string& path, size_t read_bytes, int queue_depth,
                                              double seconds_max, uint64_t bytes_max, IoBackend backend) {
  constexpr size_t kMaxReadBytes = size_t{256} << 20;
  if (read_bytes < kProbeAlignment || read_bytes > kMaxReadBytes || read_bytes % kProbeAlignment != 0) {
    return make_error("probe read_bytes is %zu but must be a multiple of 4096 in [4096, %zu]", read_bytes,
                      kMaxReadBytes);
  }
  if (queue_depth < 1 || queue_depth > 1024) {
    return make_error("probe queue_depth is %d but must be in [1, 1024]", queue_depth);
  }
  if (!(seconds_max > 0 && seconds_max <= 600)) {
    return make_error("probe seconds_max is %g but must be in (0, 600]", seconds_max);
  }
  if (bytes_max < read_bytes) {
    return make_error("probe bytes_max is %" PRIu64 " but must be >= read_bytes (%zu)", bytes_max, read_bytes);
  }
  SNIPER_ASSIGN_OR_RETURN(DirectFile file, DirectFile::open(path));
  if (file.size() < read_bytes) {
    return make_error("probe file '%s' has %" PRIu64 " bytes, fewer than read_bytes (%zu)", path.c_str(), file.size(),
                      read_bytes);
  }
  if (file.alignment() > kProbeAlignment || kProbeAlignment % file.alignment() != 0) {
    return make_error("probe file '%s' needs O_DIRECT alignment %u, which does not divide 4096", path.c_str(),
                      file.alignment());
  }
  // The buffers are declared before the engine so they outlive its reads in flight.
  const size_t buffer_alignment = std::max<size_t>(kProbeAlignment, file.buffer_alignment());
  std::vector<Slot> slots(static_cast<size_t>(queue_depth));
  std::vector<iovec> iovecs;
  for (Slot& s : slots) {
    s.buffer = AlignedBuffer(read_bytes, buffer_alignment);
    iovecs.push_back({s.buffer.data(), s.buffer.size()});
  }
  IoOptions options;
  options.backend = backend;
  options.queue_depth = static_cast<uint32_t>(queue_depth);
  options.n_threads = static_cast<uint32_t>(std::min(queue_depth, 256));
  options.chunk_bytes = read_bytes;  // one device read per request
  SNIPER_ASSIGN_OR_RETURN(IoEngine engine, IoEngine::create(file, std::move(options)));
  if (Status st = engine.register_buffers(iovecs); !st.ok()) LOG_INFO("disk probe: %s", st.error().message.c_str());

  std::mt19937_64 rng(0x5eed5eedULL);
  const uint64_t n_positions = (file.size() - read_bytes) / kProbeAlignment + 1;
  uint64_t bytes_submitted = 0;
  uint64_t bytes_done = 0;
  uint64_t n_done = 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  // Starts a read in `s` if the time and byte budgets allow one more.
  auto refill = [&](Slot& s) -> Status {
    s.active = false;
    if (bytes_submitted + read_bytes > bytes_max || elapsed() >= seconds_max) return ok_status();
    const uint64_t offset = (rng() % n_positions) * kProbeAlignment;
    SNIPER_ASSIGN_OR_RETURN(s.ticket, engine.submit({offset, read_bytes, s.buffer.data()}));
    s.active = true;
    bytes_submitted += read_bytes;
    return ok_status();
  };
  auto finish = [&](Slot& s) -> Status {
    SNIPER_TRY(engine.wait(s.ticket));
    bytes_done += read_bytes;
    ++n_done;
    return refill(s);
  };
  for (Slot& s : slots) SNIPER_TRY(refill(s));
  while (true) {
    // Refill every finished slot; if none has finished, block on the oldest read.
    bool any_active = false;
    bool any_done = false;
    Slot* oldest = nullptr;
    for (Slot& s : slots) {
      if (!s.active) continue;
      any_active = true;
      if (engine.is_done(s.ticket)) {
        any_done = true;
        SNIPER_TRY(finish(s));
      } else if (oldest == nullptr || s.ticket < oldest->ticket) {
        oldest = &s;
      }
    }
    if (!any_active) break;
    if (!any_done && oldest != nullptr) SNIPER_TRY(finish(*oldest));
  }
  const double seconds = elapsed();

  DiskProbeResult r;
  r.bytes_read = bytes_done;
  r.n_reads = n_done;
  r.seconds = seconds;
  r.gb_per_s = seconds > 0 ? static_cast<double>(bytes_done) / seconds / 1e9 : 0;
  r.mean_latency_us = n_done > 0 ? static_cast<double>(queue_depth) * seconds / static_cast<double>(n_done) * 1e6 : 0;
  r.read_bytes = read_bytes;
  r.queue_depth = queue_depth;
  r.backend = engine.backend();
  r.direct = file.is_direct();
  return r;
}

}  // namespace sniper
