// SPDX-License-Identifier: MIT
// The io_uring backend: one ring of queue_depth entries; each in-flight read occupies a slot
// (its index is the SQE's user_data). Chunks beyond the depth wait in queue_ and are issued as
// completions are reaped, which happens inside enqueue/poll/wait_some (no extra thread).
// Reads landing inside a registered buffer use IORING_OP_READ_FIXED.
// Invariants: in_flight_ == depth_ - free_slots_.size() == SQEs prepared whose CQE has not been
// reaped; a slot is either free or holds exactly one unfinished chunk.
#include <liburing.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <deque>

#include "base/check.h"
#include "base/memory_limit.h"
#include "io/io_backend.h"

namespace sniper::io_internal {

namespace {

// io_uring refuses registered buffers larger than 1 GiB each.
constexpr uint64_t kMaxRegisteredBufferBytes = uint64_t{1} << 30;

class UringBackend final : public Backend {
 public:
  UringBackend(const ReadContext& ctx, uint32_t depth) : ctx_(ctx), depth_(depth), slots_(depth) {
    free_slots_.reserve(depth);
    for (uint32_t i = depth; i > 0; --i) free_slots_.push_back(i - 1);
    completions_.reserve(depth);
  }

  // Sets up the ring; an Error (with the reason) when the kernel or sandbox refuses io_uring.
  Status init() {
    const int rc = io_uring_queue_init(depth_, &ring_, 0);
    if (rc < 0) return make_error("io_uring_queue_init(%u) failed: %s", depth_, std::strerror(-rc));
    ring_ok_ = true;
    return ok_status();
  }

  // Drops queued chunks and waits for reads in flight (they write into caller memory).
  ~UringBackend() override {
    if (!ring_ok_) return;
    queue_.clear();
    draining_ = true;
    while (in_flight_ > 0) {
      const int rc = io_uring_submit_and_wait(&ring_, 1);
      CHECK(rc >= 0 || rc == -EINTR || rc == -EAGAIN || rc == -EBUSY, "io_uring_submit_and_wait: %s",
            std::strerror(-rc));
      reap();
    }
    io_uring_queue_exit(&ring_);
  }

  IoBackend kind() const override { return IoBackend::kUring; }

  Status register_buffers(std::span<const iovec> buffers) override {
    CHECK(outstanding() == 0, "register_buffers with %zu reads outstanding", outstanding());
    uint64_t total = 0;
    for (size_t i = 0; i < buffers.size(); ++i) {
      if (buffers[i].iov_len > kMaxRegisteredBufferBytes || buffers[i].iov_len == 0) {
        return make_error("buffer %zu has %zu bytes but io_uring registered buffers must have 1 B to 1 GiB", i,
                          buffers[i].iov_len);
      }
      total += buffers[i].iov_len;
    }
    if (!registered_.empty()) {
      io_uring_unregister_buffers(&ring_);
      registered_.clear();
    }
    if (buffers.empty()) return ok_status();
    const int rc = io_uring_register_buffers(&ring_, buffers.data(), static_cast<unsigned>(buffers.size()));
    if (rc < 0) {
      return make_error(
          "cannot register %zu buffers (%s) with io_uring: %s (RLIMIT_MEMLOCK too low?); "
          "using unregistered reads",
          buffers.size(), format_bytes(total).c_str(), std::strerror(-rc));
    }
    for (size_t i = 0; i < buffers.size(); ++i) {
      const uintptr_t base = reinterpret_cast<uintptr_t>(buffers[i].iov_base);
      registered_.push_back({base, buffers[i].iov_len, static_cast<int>(i)});
    }
    std::sort(registered_.begin(), registered_.end(),
              [](const Registered& a, const Registered& b) { return a.base < b.base; });
    return ok_status();
  }

  void enqueue(std::span<const Chunk> chunks) override {
    queue_.insert(queue_.end(), chunks.begin(), chunks.end());
    pump();
  }

  void poll(std::vector<ChunkResult>& out) override {
    reap();
    pump();
    take_ready(out);
  }

  void wait_some(std::vector<ChunkResult>& out) override {
    CHECK(outstanding() > 0, "wait_some with nothing outstanding");
    reap();
    pump();
    while (ready_.empty()) {
      CHECK(in_flight_ > 0, "no reads in flight but %zu queued", queue_.size());
      const int rc = io_uring_submit_and_wait(&ring_, 1);
      CHECK(rc >= 0 || rc == -EINTR || rc == -EAGAIN || rc == -EBUSY, "io_uring_submit_and_wait: %s",
            std::strerror(-rc));
      need_submit_ = io_uring_sq_ready(&ring_) > 0;
      reap();
      pump();
    }
    take_ready(out);
  }

  size_t outstanding() const override { return queue_.size() + in_flight_ + ready_.size(); }
  uint32_t max_in_flight() const override { return max_in_flight_; }
  void reset_max_in_flight() override { max_in_flight_ = in_flight_; }

 private:
  struct Registered {
    uintptr_t base;
    size_t length;
    int index;
  };

  // Index of the registered buffer holding [dst, dst + length), or -1.
  int find_registered(const uint8_t* dst, uint64_t length) const {
    const uintptr_t p = reinterpret_cast<uintptr_t>(dst);
    auto it = std::upper_bound(registered_.begin(), registered_.end(), p,
                               [](uintptr_t v, const Registered& r) { return v < r.base; });
    if (it == registered_.begin()) return -1;
    --it;
    return p - it->base + length <= it->length ? it->index : -1;
  }

  // Moves queued chunks into free slots, issues them and submits.
  void pump() {
    while (!queue_.empty() && !free_slots_.empty()) {
      const uint32_t slot = free_slots_.back();
      free_slots_.pop_back();
      slots_[slot] = queue_.front();
      queue_.pop_front();
      issue(slot);
    }
    flush();
  }

  // Prepares the next read of slots_[slot]; finishes the chunk instead if the fault injector
  // fails it for good.
  void issue(uint32_t slot) {
    Chunk& c = slots_[slot];
    while (true) {
      int injected = 0;
      const std::optional<ReadOp> op = begin_read(ctx_, c, &injected);
      if (op) {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        CHECK(sqe != nullptr, "io_uring submission queue full with %u in flight", in_flight_);
        const int buf_index = find_registered(op->dst, op->length);
        const unsigned len = static_cast<unsigned>(op->length);
        if (buf_index >= 0) {
          io_uring_prep_read_fixed(sqe, ctx_.file_of(op->file_offset).fd(), op->dst, len,
                                   offset_in_part(op->file_offset), buf_index);
          ++c.n_fixed_reads;
        } else {
          io_uring_prep_read(sqe, ctx_.file_of(op->file_offset).fd(), op->dst, len, offset_in_part(op->file_offset));
        }
        io_uring_sqe_set_data64(sqe, slot);
        ++in_flight_;
        max_in_flight_ = std::max(max_in_flight_, in_flight_);
        need_submit_ = true;
        return;
      }
      if (!complete(slot, -static_cast<int64_t>(injected))) return;
    }
  }

  // Applies a read result to slots_[slot]. Returns true if the chunk needs another read.
  bool complete(uint32_t slot, int64_t res) {
    Chunk& c = slots_[slot];
    Error error;
    const Step step = finish_read(ctx_, c, res, &error);
    if (step == Step::kRetry && !draining_) return true;
    std::optional<Error> err;
    if (step == Step::kFailed) err = std::move(error);
    if (step == Step::kRetry) {
      err = make_error("read of '%s' abandoned: the engine was destroyed", ctx_.files[0]->path().c_str());
    }
    ready_.push_back(make_result(c, std::move(err)));
    free_slots_.push_back(slot);
    return false;
  }

  void flush() {
    if (!need_submit_) return;
    const int rc = io_uring_submit(&ring_);
    // EAGAIN/EBUSY/EINTR: the SQEs stay in the ring and go with the next submit.
    CHECK(rc >= 0 || rc == -EINTR || rc == -EAGAIN || rc == -EBUSY, "io_uring_submit: %s", std::strerror(-rc));
    need_submit_ = io_uring_sq_ready(&ring_) > 0;
  }

  // Collects all available completions, then finishes or re-issues their chunks.
  void reap() {
    completions_.clear();
    unsigned head;
    unsigned n = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      completions_.push_back({static_cast<uint32_t>(io_uring_cqe_get_data64(cqe)), cqe->res});
      ++n;
    }
    io_uring_cq_advance(&ring_, n);
    for (const auto& [slot, res] : completions_) {
      --in_flight_;
      if (complete(slot, res)) issue(slot);
    }
  }

  void take_ready(std::vector<ChunkResult>& out) {
    for (ChunkResult& r : ready_) out.push_back(std::move(r));
    ready_.clear();
  }

  ReadContext ctx_;
  uint32_t depth_;
  io_uring ring_{};
  bool ring_ok_ = false;
  bool draining_ = false;     // destructor: finish chunks instead of retrying
  bool need_submit_ = false;  // SQEs prepared but not yet accepted by the kernel
  std::deque<Chunk> queue_;
  std::vector<Chunk> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<std::pair<uint32_t, int32_t>> completions_;  // reap() scratch: (slot, res)
  std::vector<ChunkResult> ready_;
  std::vector<Registered> registered_;
  uint32_t in_flight_ = 0;
  uint32_t max_in_flight_ = 0;
};

}  // namespace

Result<std::unique_ptr<Backend>> make_uring_backend(const ReadContext& ctx, uint32_t queue_depth) {
  auto backend = std::make_unique<UringBackend>(ctx, queue_depth);
  SNIPER_TRY(backend->init());
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace sniper::io_internal
