// SPDX-License-Identifier: MIT
// Internal to src/io: the unit of work the IoEngine hands its backends (a Chunk: one contiguous
// piece of a request, at most chunk_bytes), the per-read bookkeeping both backends share
// (fault injection, short-read retry, end-of-file detection, page-cache dropping), and the
// Backend interface the io_uring and pread backends implement.
// Invariants: 0 <= done <= need <= length while a chunk is unfinished; in direct mode offset,
// length and done are multiples of the file's alignment, so every (re)issued read is aligned.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/result.h"
#include "base/split_offset.h"
#include "io/direct_file.h"
#include "io/io_engine.h"

namespace sniper::io_internal {

struct Chunk {
  uint64_t ticket = 0;
  uint64_t offset = 0;  // file offset of dst[0]
  uint64_t length = 0;  // bytes to read; may run past end of file (alignment padding)
  uint64_t need = 0;    // bytes [0, need) must arrive; the rest is padding past the request
  uint64_t done = 0;    // bytes [0, done) have arrived
  uint8_t* dst = nullptr;
  uint64_t request_offset = 0;  // the request this chunk belongs to, for error messages
  uint64_t request_length = 0;
  // Bookkeeping of the read in flight and totals for stats.
  uint64_t clamp = UINT64_MAX;  // fault injection: the current read reports at most this many bytes
  uint64_t device_bytes = 0;
  uint32_t n_reads = 0;
  uint32_t n_retries = 0;
  uint32_t n_fixed_reads = 0;  // reads issued as IORING_OP_READ_FIXED
  uint32_t n_transient = 0;    // EINTR/EAGAIN results so far
};

struct ChunkResult {
  uint64_t ticket = 0;
  uint64_t device_bytes = 0;
  uint32_t n_reads = 0;
  uint32_t n_retries = 0;
  uint32_t n_fixed_reads = 0;
  std::optional<Error> error;
};

// What the next read of a chunk is: [offset + done, offset + length) into dst + done.
struct ReadOp {
  uint64_t file_offset;
  uint64_t length;
  uint8_t* dst;
};

// Shared context of a backend. The files and `fault_injector` outlive the backend.
struct ReadContext {
  // files[k] holds the offsets of part k (base/split_offset.h); one file for an unsplit model.
  std::vector<const DirectFile*> files;
  const FaultInjector* fault_injector = nullptr;  // null or empty: no faults
  // The file an engine offset reads from; read it at offset_in_part(offset).
  const DirectFile& file_of(uint64_t offset) const { return *files[part_of(offset)]; }
};

// Prepares the next read of `c`: counts it and consults the fault injector. Returns the read to
// issue, or std::nullopt with *injected_errno set when the injector fails it (no I/O to do).
std::optional<ReadOp> begin_read(const ReadContext& ctx, Chunk& c, int* injected_errno);

enum class Step { kDone, kRetry, kFailed };
// Applies the outcome of a read of `c` (`res` bytes, or -errno) begun with begin_read.
// kDone: all needed bytes are in. kRetry: issue the next read (short or interrupted read).
// kFailed: *error says why (I/O error, or end of file before the requested bytes).
Step finish_read(const ReadContext& ctx, Chunk& c, int64_t res, Error* error);

ChunkResult make_result(const Chunk& c, std::optional<Error> error);

// Runs a chunk to completion synchronously with pread (the pread backend's worker body).
ChunkResult run_chunk_with_pread(const ReadContext& ctx, Chunk c);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual IoBackend kind() const = 0;
  // See IoEngine::register_buffers. Precondition: outstanding() == 0.
  [[nodiscard]] virtual Status register_buffers(std::span<const iovec> buffers) = 0;
  // Takes the chunks and starts as many as the depth allows.
  virtual void enqueue(std::span<const Chunk> chunks) = 0;
  // Appends results of finished chunks to `out` without blocking, issuing queued chunks.
  virtual void poll(std::vector<ChunkResult>& out) = 0;
  // Like poll, but first blocks until at least one chunk has finished.
  // Precondition: outstanding() > 0.
  virtual void wait_some(std::vector<ChunkResult>& out) = 0;
  // Chunks queued or in flight whose results have not been handed out yet.
  virtual size_t outstanding() const = 0;
  virtual uint32_t max_in_flight() const = 0;
  virtual void reset_max_in_flight() = 0;
};

// Returns an Error when io_uring cannot be set up (e.g. seccomp or io_uring_disabled).
Result<std::unique_ptr<Backend>> make_uring_backend(const ReadContext& ctx, uint32_t queue_depth);
std::unique_ptr<Backend> make_pread_backend(const ReadContext& ctx, uint32_t n_threads);

}  // namespace sniper::io_internal
