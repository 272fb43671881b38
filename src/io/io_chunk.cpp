// SPDX-License-Identifier: MIT
// The per-read bookkeeping shared by both backends: fault injection, short-read retry,
// end-of-file detection and page-cache dropping. See io_backend.h.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "io/io_backend.h"

namespace sniper::io_internal {

namespace {
// EINTR/EAGAIN results tolerated per chunk before the read counts as failed.
constexpr uint32_t kMaxTransient = 16;
}  // namespace

std::optional<ReadOp> begin_read(const ReadContext& ctx, Chunk& c, int* injected_errno) {
  ReadOp op{c.offset + c.done, c.length - c.done, c.dst + c.done};
  ++c.n_reads;
  c.clamp = UINT64_MAX;
  *injected_errno = 0;
  if (ctx.fault_injector != nullptr && *ctx.fault_injector) {
    const FaultAction action = (*ctx.fault_injector)(op.file_offset, op.length);
    if (action.error != 0) {
      *injected_errno = action.error;
      return std::nullopt;
    }
    c.clamp = action.max_bytes;
  }
  return op;
}

Step finish_read(const ReadContext& ctx, Chunk& c, int64_t res, Error* error) {
  const DirectFile& file = ctx.file_of(c.offset);
  const uint64_t read_offset = c.offset + c.done;
  if (res < 0) {
    if ((res == -EINTR || res == -EAGAIN) && ++c.n_transient <= kMaxTransient) {
      ++c.n_retries;
      return Step::kRetry;
    }
    *error = make_error("read of '%s' failed at file offset %" PRIu64 " (%" PRIu64 " bytes; request: offset %" PRIu64
                        ", %" PRIu64 " bytes): %s",
                        file.path().c_str(), read_offset, c.length - c.done, c.request_offset, c.request_length,
                        std::strerror(static_cast<int>(-res)));
    return Step::kFailed;
  }
  uint64_t got = std::min(static_cast<uint64_t>(res), c.clamp);
  got = std::min(got, c.length - c.done);
  c.device_bytes += got;
  file.drop_cache(offset_in_part(read_offset), got);
  const uint64_t end = c.done + got;
  if (end >= c.need) {
    c.done = end;
    return Step::kDone;
  }
  // Short read. O_DIRECT reads must restart at an aligned offset, so re-read from the last
  // alignment boundary; a read that makes no progress means end of file.
  const uint64_t alignment = file.alignment();
  const uint64_t next = end / alignment * alignment;
  if (got == 0 || next <= c.done) {
    const uint64_t got_end = c.offset + end;
    const uint64_t request_got =
        got_end > c.request_offset ? std::min(got_end - c.request_offset, c.request_length) : 0;
    *error = make_error("read of '%s' at offset %" PRIu64 ": expected %" PRIu64 " bytes, got %" PRIu64
                        " before end of file (file truncated? size at open was %" PRIu64 " bytes)",
                        file.path().c_str(), c.request_offset, c.request_length, request_got, file.size());
    return Step::kFailed;
  }
  c.done = next;
  ++c.n_retries;
  return Step::kRetry;
}

ChunkResult make_result(const Chunk& c, std::optional<Error> error) {
  ChunkResult r;
  r.ticket = c.ticket;
  r.device_bytes = c.device_bytes;
  r.n_reads = c.n_reads;
  r.n_retries = c.n_retries;
  r.n_fixed_reads = c.n_fixed_reads;
  r.error = std::move(error);
  return r;
}

ChunkResult run_chunk_with_pread(const ReadContext& ctx, Chunk c) {
  while (true) {
    int injected = 0;
    const std::optional<ReadOp> op = begin_read(ctx, c, &injected);
    int64_t res;
    if (!op) {
      res = -injected;
    } else {
      const ssize_t n = ::pread(ctx.file_of(op->file_offset).fd(), op->dst, op->length,
                                static_cast<off_t>(offset_in_part(op->file_offset)));
      res = n >= 0 ? static_cast<int64_t>(n) : -static_cast<int64_t>(errno);
    }
    Error error;
    switch (finish_read(ctx, c, res, &error)) {
      case Step::kDone: return make_result(c, std::nullopt);
      case Step::kFailed: return make_result(c, std::move(error));
      case Step::kRetry: break;
    }
  }
}

}  // namespace sniper::io_internal
