// SPDX-License-Identifier: MIT
// IoEngine front end: validates requests, splits them into chunks, hands the chunks to the
// backend and tracks each ticket until every chunk of it has finished. See io_engine.h.
// Invariant: requests_[i] describes ticket first_ticket_ + i; a request is complete when
// chunks_left == 0; retired entries are popped from the front as soon as they are contiguous.
#include "io/io_engine.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <deque>
#include <optional>
#include <vector>

#include "base/check.h"
#include "base/log.h"
#include "io/io_backend.h"

namespace sniper {

using io_internal::Backend;
using io_internal::Chunk;
using io_internal::ChunkResult;

const char* io_backend_name(IoBackend backend) {
  switch (backend) {
    case IoBackend::kAuto: return "auto";
    case IoBackend::kUring: return "io_uring";
    case IoBackend::kPread: return "pread";
  }
  return "?";
}

struct IoEngine::Impl {
  struct RequestState {
    uint64_t chunks_left = 0;
    bool retired = false;
    std::optional<Error> error;  // the first chunk error
  };

  std::vector<const DirectFile*> files;  // part k of a split model is files[k]
  uint32_t alignment = 1;                // the largest alignment() of the files
  uint32_t buffer_alignment = 1;         // the largest buffer_alignment() of the files
  IoOptions options;
  io_internal::ReadContext ctx;
  std::unique_ptr<Backend> backend;
  std::deque<RequestState> requests;
  ReadTicket first_ticket = 1;
  IoStats stats;
  std::vector<ChunkResult> results;  // scratch for backend results
  std::vector<Chunk> chunks;         // scratch for submissions

  RequestState& state(ReadTicket ticket) {
    CHECK(ticket >= first_ticket && ticket - first_ticket < requests.size(), "unknown read ticket %" PRIu64, ticket);
    RequestState& s = requests[ticket - first_ticket];
    CHECK(!s.retired, "read ticket %" PRIu64 " was already waited for", ticket);
    return s;
  }

  void retire(ReadTicket ticket) {
    requests[ticket - first_ticket].retired = true;
    while (!requests.empty() && requests.front().retired) {
      requests.pop_front();
      ++first_ticket;
    }
  }

  Status validate(const ReadRequest& r) const {
    if (part_of(r.offset) >= files.size()) {
      return make_error("read at offset %" PRIu64 " names part %u but the model has %zu file(s)", r.offset,
                        part_of(r.offset), files.size());
    }
    const DirectFile* file = files[part_of(r.offset)];
    const uint64_t at = offset_in_part(r.offset);
    if (at > file->size() || r.length > file->size() - at) {
      return make_error("read of '%s' at offset %" PRIu64 " with length %" PRIu64
                        " runs past the end of the file (%" PRIu64 " bytes)",
                        file->path().c_str(), at, r.length, file->size());
    }
    CHECK(r.dst != nullptr || r.length == 0, "read request without a destination");
    const uintptr_t addr = reinterpret_cast<uintptr_t>(r.dst);
    CHECK(addr % buffer_alignment == 0, "read destination %p is not aligned to %u bytes (O_DIRECT)",
          static_cast<void*>(r.dst), buffer_alignment);
    return ok_status();
  }

  // Appends the chunks of `r` (ticket `ticket`) to `chunks`; returns how many.
  uint64_t split(const ReadRequest& r, ReadTicket ticket) {
    const AlignedSpan span = aligned_span(r.offset, r.length, alignment);
    const uint64_t request_end = r.offset + r.length;
    uint64_t n = 0;
    for (uint64_t pos = 0; pos < span.aligned_length; pos += options.chunk_bytes) {
      Chunk c;
      c.ticket = ticket;
      c.offset = span.aligned_offset + pos;
      c.length = std::min(options.chunk_bytes, span.aligned_length - pos);
      c.need = std::min(c.length, request_end - c.offset);  // c.offset < request_end by construction
      c.dst = r.dst + pos;
      c.request_offset = r.offset;
      c.request_length = r.length;
      chunks.push_back(c);
      ++n;
    }
    return n;
  }

  void apply(std::vector<ChunkResult>& done) {
    for (ChunkResult& r : done) {
      RequestState& s = requests[r.ticket - first_ticket];
      stats.bytes_read += r.device_bytes;
      stats.n_reads += r.n_reads;
      stats.n_retries += r.n_retries;
      stats.n_fixed_reads += r.n_fixed_reads;
      if (r.error && !s.error) {
        s.error = std::move(r.error);
        ++stats.n_failed;
      }
      CHECK(s.chunks_left > 0, "chunk result for a finished request");
      --s.chunks_left;
    }
    done.clear();
    stats.max_in_flight = std::max(stats.max_in_flight, backend->max_in_flight());
  }

  Status submit(std::span<const ReadRequest> batch, std::span<ReadTicket> out) {
    CHECK(out.size() == batch.size(), "submit_batch: %zu tickets for %zu requests", out.size(), batch.size());
    for (const ReadRequest& r : batch) SNIPER_TRY(validate(r));
    chunks.clear();
    for (size_t i = 0; i < batch.size(); ++i) {
      const ReadTicket ticket = first_ticket + requests.size();
      requests.push_back(RequestState{});
      requests.back().chunks_left = split(batch[i], ticket);
      out[i] = ticket;
      ++stats.n_requests;
      stats.bytes_requested += batch[i].length;
    }
    if (!chunks.empty()) backend->enqueue(chunks);
    return ok_status();
  }

  // Blocks until `done()` holds, counting the time as stall.
  template <typename Pred>
  void block_until(Pred done) {
    if (done()) return;
    const auto t0 = std::chrono::steady_clock::now();
    while (!done()) {
      backend->wait_some(results);
      apply(results);
    }
    stats.stall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
};

Result<IoEngine> IoEngine::create(const DirectFile& file, IoOptions options) {
  return create(std::vector<const DirectFile*>{&file}, std::move(options));
}

Result<IoEngine> IoEngine::create(std::vector<const DirectFile*> files, IoOptions options) {
  CHECK(!files.empty() && files.size() <= kMaxParts, "IoEngine::create with %zu files", files.size());
  uint32_t alignment = 1;
  uint32_t buffer_alignment = 1;
  for (const DirectFile* f : files) {
    alignment = std::max(alignment, f->alignment());
    buffer_alignment = std::max(buffer_alignment, f->buffer_alignment());
  }
  if (options.queue_depth < 1 || options.queue_depth > 4096) {
    return make_error("io queue_depth is %u but must be in [1, 4096]", options.queue_depth);
  }
  if (options.n_threads < 1 || options.n_threads > 256) {
    return make_error("io n_threads is %u but must be in [1, 256]", options.n_threads);
  }
  constexpr uint64_t kMinChunk = 4096;
  constexpr uint64_t kMaxChunk = uint64_t{1} << 30;
  if (options.chunk_bytes < kMinChunk || options.chunk_bytes > kMaxChunk || options.chunk_bytes % kMinChunk != 0 ||
      options.chunk_bytes % alignment != 0) {
    return make_error("io chunk_bytes is %" PRIu64
                      " but must be a multiple of 4096 and of the file alignment %u in "
                      "[4096, 2^30]",
                      options.chunk_bytes, alignment);
  }
  auto impl = std::make_unique<Impl>();
  impl->files = files;
  impl->alignment = alignment;
  impl->buffer_alignment = buffer_alignment;
  impl->options = std::move(options);
  impl->ctx.files = std::move(files);
  impl->ctx.fault_injector = &impl->options.fault_injector;
  const IoBackend wanted = impl->options.backend;
  if (wanted != IoBackend::kPread) {
    auto uring = io_internal::make_uring_backend(impl->ctx, impl->options.queue_depth);
    if (uring.ok()) {
      impl->backend = std::move(uring).value();
    } else if (wanted == IoBackend::kUring) {
      return make_error("io_uring was requested but is unavailable: %s", uring.error().message.c_str());
    } else {
      LOG_WARN("io_uring unavailable (%s); using %u pread threads", uring.error().message.c_str(),
               impl->options.n_threads);
    }
  }
  if (!impl->backend) impl->backend = io_internal::make_pread_backend(impl->ctx, impl->options.n_threads);
  return IoEngine(std::move(impl));
}

IoEngine::IoEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
IoEngine::IoEngine(IoEngine&&) noexcept = default;
IoEngine& IoEngine::operator=(IoEngine&&) noexcept = default;
IoEngine::~IoEngine() = default;

IoBackend IoEngine::backend() const { return impl_->backend->kind(); }
const DirectFile& IoEngine::file() const { return *impl_->files[0]; }
uint32_t IoEngine::alignment() const { return impl_->alignment; }
uint32_t IoEngine::buffer_alignment() const { return impl_->buffer_alignment; }

AlignedSpan IoEngine::aligned_span(uint64_t offset, uint64_t length, uint32_t alignment) {
  CHECK(alignment >= 1, "alignment must be >= 1");
  AlignedSpan s;
  if (length == 0) {
    s.aligned_offset = offset;
    return s;
  }
  s.aligned_offset = offset / alignment * alignment;
  s.lead = offset - s.aligned_offset;
  const uint64_t end = offset + length;
  const uint64_t aligned_end = (end + alignment - 1) / alignment * alignment;
  s.aligned_length = aligned_end - s.aligned_offset;
  return s;
}

AlignedSpan IoEngine::span_for(uint64_t offset, uint64_t length) const {
  return aligned_span(offset, length, impl_->alignment);
}

Status IoEngine::register_buffers(std::span<const iovec> buffers) {
  CHECK(n_outstanding() == 0, "register_buffers with %zu requests outstanding", n_outstanding());
  return impl_->backend->register_buffers(buffers);
}

Result<ReadTicket> IoEngine::submit(const ReadRequest& request) {
  ReadTicket ticket = 0;
  SNIPER_TRY(impl_->submit(std::span<const ReadRequest>(&request, 1), std::span<ReadTicket>(&ticket, 1)));
  return ticket;
}

Status IoEngine::submit_batch(std::span<const ReadRequest> requests, std::span<ReadTicket> out) {
  return impl_->submit(requests, out);
}

Status IoEngine::wait(ReadTicket ticket) {
  Impl& m = *impl_;
  m.state(ticket);  // validates the ticket
  m.block_until([&] { return m.requests[ticket - m.first_ticket].chunks_left == 0; });
  std::optional<Error> error = std::move(m.requests[ticket - m.first_ticket].error);
  m.retire(ticket);
  if (error) return std::move(*error);
  return ok_status();
}

bool IoEngine::is_done(ReadTicket ticket) {
  Impl& m = *impl_;
  if (m.state(ticket).chunks_left == 0) return true;
  m.backend->poll(m.results);
  m.apply(m.results);
  return m.requests[ticket - m.first_ticket].chunks_left == 0;
}

Status IoEngine::wait_all() {
  Impl& m = *impl_;
  m.block_until([&] { return m.backend->outstanding() == 0; });
  m.backend->poll(m.results);
  m.apply(m.results);
  std::optional<Error> first;
  for (Impl::RequestState& s : m.requests) {
    CHECK(s.retired || s.chunks_left == 0, "request unfinished after wait_all");
    if (!s.retired && s.error && !first) first = std::move(s.error);
  }
  m.first_ticket += m.requests.size();
  m.requests.clear();
  if (first) return std::move(*first);
  return ok_status();
}

size_t IoEngine::n_outstanding() const {
  size_t n = 0;
  for (const Impl::RequestState& s : impl_->requests) n += s.retired ? 0 : 1;
  return n;
}

const IoStats& IoEngine::stats() const { return impl_->stats; }

void IoEngine::reset_stats() {
  impl_->stats = IoStats{};
  impl_->backend->reset_max_in_flight();
}

}  // namespace sniper
