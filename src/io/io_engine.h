// SPDX-License-Identifier: MIT
// IoEngine: asynchronous reads of byte ranges of one DirectFile into caller memory, the way the
// expert cache and the dense-FFN stream fetch weights from SSD. Two backends:
//   io_uring  (liburing; queue_depth reads in flight; IORING_OP_READ_FIXED into buffers given to
//             register_buffers(), IORING_OP_READ elsewhere), and
//   pread     (a pool of n_threads workers calling pread), used when io_uring is unavailable
//             (io_uring_queue_init fails, e.g. in restricted containers) or when asked for.
// A request is split into chunks of chunk_bytes that are all queued at once; up to the depth
// are in flight, the rest are issued as earlier ones complete (inside submit/is_done/wait).
//
// Alignment: with O_DIRECT a read must cover whole alignment() units of the file, so a request
// for [offset, offset + length) reads the aligned span around it; the caller's dst must have
// room for aligned_span(...).aligned_length bytes and be aligned to file.buffer_alignment(),
// and the requested bytes land at dst + lead. In buffered mode the span is the request itself
// (lead 0). Bytes of the aligned span past the end of the file are left unwritten.
//
// Errors: an I/O error, or end of file before the requested bytes (the file was truncated),
// fails the request; wait() returns an Error naming the path, offset, expected and got bytes.
// Short reads before end of file are retried for the remainder. A request never reports
// success with partial data.
//
// Thread safety: thread-compatible. One thread at a time calls all methods of one engine
// (the pread backend's worker threads are internal). The DirectFile must outlive the engine
// and stay where it is (not be moved from) while the engine exists.
// Destroying the engine waits for reads in flight (they write into caller memory) and drops
// reads not yet issued.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "base/result.h"
#include "io/direct_file.h"

namespace sniper {

enum class IoBackend {
  kAuto,   // io_uring if it can be set up, else pread (with one warning)
  kUring,  // io_uring or an Error from create()
  kPread,  // the pread thread pool
};

const char* io_backend_name(IoBackend backend);

// What the fault injector makes of one read: fail it with an errno, or deliver at most
// max_bytes of it (a short read). The default does nothing.
struct FaultAction {
  int error = 0;                    // nonzero: the read fails with this errno (no I/O is done)
  uint64_t max_bytes = UINT64_MAX;  // the read reports min(actual, max_bytes) bytes
};
// Called once per read the engine issues (every chunk and every retry) with the file range
// about to be read. Tests only. The pread backend calls it from its worker threads, so it must
// be thread-safe.
using FaultInjector = std::function<FaultAction(uint64_t offset, uint64_t length)>;

struct IoOptions {
  IoBackend backend = IoBackend::kAuto;
  uint32_t queue_depth = 32;                 // io_uring reads in flight, in [1, 4096]
  uint32_t n_threads = 4;                    // pread workers (= reads in flight), in [1, 256]
  uint64_t chunk_bytes = uint64_t{1} << 20;  // split size, a multiple of 4096 in [4 KiB, 1 GiB]
  FaultInjector fault_injector;              // tests: simulate EIO and short reads
};

// Read [offset, offset + length) of the file; the bytes land at dst + aligned_span(...).lead.
struct ReadRequest {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint8_t* dst = nullptr;  // capacity >= aligned_length, aligned to the file's buffer_alignment()
};

struct AlignedSpan {
  uint64_t aligned_offset = 0;  // offset rounded down to the alignment
  uint64_t aligned_length = 0;  // covers [offset, offset + length) rounded out to the alignment
  uint64_t lead = 0;            // offset - aligned_offset: where the requested bytes start in dst
};

// Identifies one submitted request until wait() (or wait_all()) retires it. Never 0.
using ReadTicket = uint64_t;

struct IoStats {
  uint64_t n_requests = 0;       // requests submitted
  uint64_t bytes_requested = 0;  // sum of ReadRequest::length
  uint64_t bytes_read = 0;       // bytes delivered by the device (aligned spans and retries included)
  uint64_t n_reads = 0;          // read operations issued (chunks and retries)
  uint64_t n_retries = 0;        // reads reissued after a short or interrupted read
  uint64_t n_fixed_reads = 0;    // reads into registered buffers (IORING_OP_READ_FIXED)
  uint64_t n_failed = 0;         // requests that completed with an error
  double stall_seconds = 0;      // time spent blocked in wait() and wait_all()
  uint32_t max_in_flight = 0;    // most reads in flight at once
};

class IoEngine {
 public:
  // Sets up the backend for `file` (which must outlive the engine and not move). An Error for
  // options out of range (naming the field, value and range) or, with IoBackend::kUring, when
  // io_uring cannot be set up.
  [[nodiscard]] static Result<IoEngine> create(const DirectFile& file, IoOptions options = {});
  // The same over the parts of a split model: a request at offset make_part_offset(k, x)
  // (base/split_offset.h) reads files[k] at x; no request may span two parts. Alignment is the
  // largest of the files'. Precondition: 1 <= files.size() <= kMaxParts.
  [[nodiscard]] static Result<IoEngine> create(std::vector<const DirectFile*> files, IoOptions options = {});

  IoEngine(IoEngine&&) noexcept;
  IoEngine& operator=(IoEngine&&) noexcept;
  ~IoEngine();

  // The backend in use: IoBackend::kUring or IoBackend::kPread.
  IoBackend backend() const;
  // The first (or only) file.
  const DirectFile& file() const;
  // Read granularity and destination alignment the engine applies (the largest over its files).
  uint32_t alignment() const;
  uint32_t buffer_alignment() const;

  // The span to read (and to size dst for) around [offset, offset + length) at `alignment`.
  static AlignedSpan aligned_span(uint64_t offset, uint64_t length, uint32_t alignment);
  // aligned_span at the file's alignment().
  AlignedSpan span_for(uint64_t offset, uint64_t length) const;

  // Registers caller buffers with io_uring so reads landing wholly inside one of them use
  // IORING_OP_READ_FIXED (no per-read page pinning). Replaces an earlier registration;
  // precondition: no reads outstanding. The memory must stay valid until the engine is
  // destroyed or buffers are registered again. A no-op for the pread backend. An Error (e.g.
  // RLIMIT_MEMLOCK too low) leaves the engine working with plain reads.
  [[nodiscard]] Status register_buffers(std::span<const iovec> buffers);

  // Queues one read and starts it. An Error (nothing queued) when [offset, offset + length)
  // lies outside the file as opened. dst misaligned for O_DIRECT is a CHECK failure.
  [[nodiscard]] Result<ReadTicket> submit(const ReadRequest& request);
  // Queues several reads with one submission; out[i] receives request i's ticket.
  // An Error (nothing queued) if any request is invalid. Precondition: out.size() == requests.size().
  [[nodiscard]] Status submit_batch(std::span<const ReadRequest> requests, std::span<ReadTicket> out);

  // Blocks until the request has completed and retires its ticket. Ok only if every requested
  // byte was read. Precondition: `ticket` came from this engine and was not retired yet.
  [[nodiscard]] Status wait(ReadTicket ticket);
  // Makes progress without blocking; true if the request has completed (wait() then returns at
  // once). Same precondition as wait().
  [[nodiscard]] bool is_done(ReadTicket ticket);
  // Blocks until every outstanding request has completed and retires all tickets; returns the
  // first error among them, if any.
  [[nodiscard]] Status wait_all();
  // Requests submitted and not yet retired.
  size_t n_outstanding() const;

  const IoStats& stats() const;
  void reset_stats();

 private:
  struct Impl;
  explicit IoEngine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sniper
