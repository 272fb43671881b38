// SPDX-License-Identifier: MIT
// Resident and mmap weight stores. The reader has already validated that every tensor's byte
// range lies inside the file, so views computed from offsets are in bounds.
#include "weights/weight_store.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "base/huge_pages.h"
#include "base/split_offset.h"
#include "base/thread_pool.h"
#include "io/page_cache.h"
#include "quant/iq_repack.h"

#include "base/check.h"

namespace sniper {

namespace {

constexpr size_t kReadChunkBytes = size_t{64} << 20;
// A repacked tensor is read through a buffer of about this many bytes per job (whole rows), so
// loading holds little beyond the repacked copy.
constexpr size_t kRepackChunkBytes = size_t{4} << 20;
// Bytes past each read that its page-cache drop also covers: more than the kernel readahead
// window (read_ahead_kb, 8 MiB on the dev VM) plus the window it may be reading asynchronously.
constexpr uint64_t kReadaheadDropBytes = uint64_t{32} << 20;
constexpr int kMaxLoadThreads = 4;  // each holds up to a chunk plus readahead of page cache

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// One read of a tensor's file bytes [done, done + want) into memory at base + local[tensor] +
// done, or for a repacked tensor (whole rows) through a buffer into its rows in the layout.
struct ReadJob {
  size_t tensor;
  uint64_t done;
  size_t want;
};

// Where tensor i goes in memory: offset in the allocation (UINT64_MAX: not loaded) and the type
// it is stored as (its own, or its repacked layout).
struct Placement {
  uint64_t local = UINT64_MAX;
  GgmlType type = GgmlType::kF32;
  bool repacked = false;
};

// Reads every tensor with a local offset into memory, in chunks of at most kReadChunkBytes
// shared out in file order among several threads: the page faults of the fresh memory (the
// kernel zeroes every page first), the copies out of the page cache and the SSD's queue then
// run side by side instead of one after another. The first failed read stops the others and is
// the error returned.
Status read_tensors(const std::vector<Fd>& fds, const GgufFile& gguf, const std::vector<Placement>& place,
                    uint8_t* base, const LoadProgress& progress) {
  const auto& infos = gguf.tensors();
  std::vector<ReadJob> jobs;
  for (size_t i = 0; i < infos.size(); ++i) {
    if (place[i].local == UINT64_MAX) continue;
    const uint64_t chunk = place[i].repacked
                               ? std::max<uint64_t>(1, kRepackChunkBytes / infos[i].row_bytes()) * infos[i].row_bytes()
                               : kReadChunkBytes;
    for (uint64_t done = 0; done < infos[i].nbytes; done += chunk) {
      jobs.push_back({i, done, static_cast<size_t>(std::min<uint64_t>(infos[i].nbytes - done, chunk))});
    }
  }
  uint64_t total_bytes = 0;
  for (const ReadJob& job : jobs) total_bytes += job.want;
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  std::mutex progress_mu;
  uint64_t done_bytes = 0;  // guarded by progress_mu
  Status error = ok_status();
  const auto read_job = [&](const ReadJob& job, std::vector<uint8_t>& buffer) {
    const auto& t = infos[job.tensor];
    const Placement& pl = place[job.tensor];
    if (pl.repacked && buffer.size() < job.want) buffer.resize(job.want);
    uint8_t* dst = pl.repacked ? buffer.data() : base + pl.local + job.done;
    for (size_t got_total = 0; got_total < job.want;) {
      const uint64_t at = offset_in_part(t.file_offset) + job.done + got_total;
      const int fd = fds[part_of(t.file_offset)].get();
      const ssize_t got = pread(fd, dst + got_total, job.want - got_total, static_cast<off_t>(at));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        const std::lock_guard<std::mutex> lock(error_mu);
        if (!failed.exchange(true)) {
          error = make_error("reading tensor '%s' of '%s' at offset %llu failed: %s", t.name.c_str(),
                             gguf.parts[part_of(t.file_offset)].path.c_str(), static_cast<unsigned long long>(at),
                             got == 0 ? "unexpected end of file (truncated?)" : std::strerror(errno));
        }
        return;
      }
      // The page cache of what we just read is not ours to keep under a memory budget: dropped
      // as we go, so that loading never holds the weights twice (a cgroup counts both). The
      // drop reaches past the read over what readahead may have cached beyond it: when the
      // next bytes belong to streamed tensors nothing else drops them before the end, and a
      // dense model under a 2 GiB cap held 390 MB of such pages.
      drop_page_cache(fd, at, static_cast<uint64_t>(got) + kReadaheadDropBytes);
      got_total += static_cast<size_t>(got);
      if (progress) {
        const std::lock_guard<std::mutex> lock(progress_mu);
        done_bytes += static_cast<uint64_t>(got);
        progress(done_bytes, total_bytes);
      }
    }
    if (pl.repacked) {
      const size_t file_rb = t.row_bytes(), mem_rb = row_bytes(pl.type, t.ne[0]);
      const uint64_t first_row = job.done / file_rb;
      for (size_t r = 0; r < job.want / file_rb; ++r) {
        repack_row(t.type, buffer.data() + r * file_rb, base + pl.local + (first_row + r) * mem_rb, t.ne[0]);
      }
    }
  };
  ThreadPool pool(std::min(hardware_threads(), kMaxLoadThreads));
  // One repack buffer per loader thread, reused by its jobs: a fresh one per job would
  // page-fault and zero 4 MiB each time (as much again as the weights themselves).
  std::vector<std::vector<uint8_t>> buffers(static_cast<size_t>(pool.n_threads()));
  std::atomic<size_t> next{0};
  pool.run([&](int thread_idx, int) {
    for (size_t j = next++; j < jobs.size() && !failed.load(std::memory_order_relaxed); j = next++) {
      read_job(jobs[j], buffers[static_cast<size_t>(thread_idx)]);
    }
  });
  return error;
}

}  // namespace

Result<Residency> parse_residency(std::string_view text) {
  if (text == "resident") return Residency::kResident;
  if (text == "mmap") return Residency::kMmap;
  return make_error("--residency is '%.*s' but must be one of: resident, mmap", static_cast<int>(text.size()),
                    text.data());
}

const char* residency_name(Residency residency) {
  switch (residency) {
    case Residency::kResident: return "resident";
    case Residency::kMmap: return "mmap";
  }
  return "?";
}

Result<std::unique_ptr<WeightStore>> WeightStore::open(const GgufFile& gguf, Residency residency,
                                                       const std::unordered_set<std::string>* streamed,
                                                       const std::unordered_set<std::string>* repacked,
                                                       const LoadProgress& progress) {
  std::unique_ptr<WeightStore> store(new WeightStore());
  store->gguf_ = &gguf;
  store->residency_ = residency;
  std::vector<Fd> fds;
  for (const GgufPart& part : gguf.parts) {
    Fd fd(::open(part.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return make_error("cannot open '%s': %s", part.path.c_str(), std::strerror(errno));
    struct stat st;
    if (fstat(fd.get(), &st) != 0) return make_error("cannot stat '%s': %s", part.path.c_str(), std::strerror(errno));
    if (static_cast<uint64_t>(st.st_size) != part.file_size) {
      return make_error("'%s' changed size since it was parsed (%llu -> %llu bytes)", part.path.c_str(),
                        static_cast<unsigned long long>(part.file_size), static_cast<unsigned long long>(st.st_size));
    }
    fds.push_back(std::move(fd));
  }
  if (fds.empty()) return make_error("'%s' was parsed from memory: no file to read weights from", gguf.path.c_str());
  const auto& infos = gguf.tensors();
  store->tensors_ = std::make_unique<QTensor[]>(infos.size());
  std::vector<const uint8_t*> data(infos.size(), nullptr);  // each tensor's bytes in memory
  std::vector<Placement> place(infos.size());
  for (size_t i = 0; i < infos.size(); ++i) place[i].type = infos[i].type;
  if (residency == Residency::kMmap) {
    for (size_t k = 0; k < gguf.parts.size(); ++k) {
      const GgufPart& part = gguf.parts[k];
      void* p = mmap(nullptr, std::max<uint64_t>(part.file_size, 1), PROT_READ, MAP_SHARED, fds[k].get(), 0);
      if (p == MAP_FAILED) return make_error("cannot mmap '%s': %s", part.path.c_str(), std::strerror(errno));
      store->mappings_.push_back({p, std::max<uint64_t>(part.file_size, 1)});
    }
    for (size_t i = 0; i < infos.size(); ++i) {
      data[i] = static_cast<const uint8_t*>(store->mappings_[part_of(infos[i].file_offset)].first) +
                offset_in_part(infos[i].file_offset);
    }
  } else {
    // Loaded tensors are packed in file order, each 64-byte aligned; a repacked one takes the
    // size of its layout.
    uint64_t bytes = 0;
    for (size_t i = 0; i < infos.size(); ++i) {
      if (streamed != nullptr && streamed->count(infos[i].name)) continue;
      uint64_t nbytes = infos[i].nbytes;
      if (repacked != nullptr && repacked->count(infos[i].name) && repacked_type(infos[i].type) != infos[i].type) {
        place[i].type = repacked_type(infos[i].type);
        place[i].repacked = true;
        nbytes = nbytes / infos[i].row_bytes() * row_bytes(place[i].type, infos[i].ne[0]);
      }
      place[i].local = bytes;
      bytes += (nbytes + 63) / 64 * 64;
    }
    uint8_t* p = map_pages(bytes == 0 ? 64 : bytes);
    if (p == nullptr) {
      return make_error("cannot allocate %llu bytes for the weights of '%s'", static_cast<unsigned long long>(bytes),
                        gguf.path.c_str());
    }
    store->base_ = p;
    store->resident_bytes_ = bytes;
    SNIPER_TRY(read_tensors(fds, gguf, place, store->base_, progress));
    // And whatever else of the file is cached (e.g. from writing it): a memory-capped run, and a
    // baseline run after it, must not be served from pages that nobody paid for.
    for (const Fd& fd : fds) drop_page_cache(fd.get(), 0, 0);
    for (size_t i = 0; i < infos.size(); ++i) {
      if (place[i].local != UINT64_MAX) data[i] = store->base_ + place[i].local;
      if (place[i].repacked) ++store->n_repacked_;
    }
  }
  for (size_t i = 0; i < infos.size(); ++i) {
    QTensor& t = store->tensors_[i];
    t.type = place[i].type;
    t.ne = infos[i].ne;
    t.row_bytes = row_bytes(t.type, t.ne[0]);
    t.data = data[i];
  }
  return store;
}

WeightStore::~WeightStore() {
  if (!mappings_.empty()) {
    for (const auto& [p, bytes] : mappings_) munmap(p, bytes);
  } else if (base_ != nullptr) {
    unmap_pages(base_, resident_bytes_ == 0 ? 64 : resident_bytes_);
  }
}

const QTensor* WeightStore::find_tensor(std::string_view name) const {
  const GgufTensorInfo* info = gguf_->find_tensor(name);
  if (info == nullptr) return nullptr;
  return &tensors_[static_cast<size_t>(info - gguf_->tensors().data())];
}

}  // namespace sniper
