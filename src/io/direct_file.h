// SPDX-License-Identifier: MIT
// DirectFile: a read-only file opened for streaming weights from SSD. It prefers O_DIRECT, so
// reads bypass the page cache (which cgroups charge to our memory budget). When the file system
// refuses O_DIRECT (open fails with EINVAL) or cannot benefit from it (tmpfs/ramfs are memory-
// backed), it falls back to buffered reads, logs one warning, and callers drop the read range
// from the page cache afterwards (drop_cache(), i.e. posix_fadvise(POSIX_FADV_DONTNEED)).
// It records the file's size, device, inode and mtime at open so a file replaced or truncated
// under a running engine gives a clear error instead of wrong output.
// Invariants: fd() is open for the object's lifetime; in direct mode every read's offset and
// length are multiples of alignment() and its buffer a multiple of buffer_alignment();
// in buffered mode alignment() == buffer_alignment() == 1.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace sniper {

enum class DirectMode {
  kAuto,           // O_DIRECT if the file system supports it, else buffered + one warning
  kForceDirect,    // O_DIRECT or an Error
  kForceBuffered,  // always buffered (tests, or files known to be cached)
};

struct DirectFileOptions {
  DirectMode mode = DirectMode::kAuto;
};

class DirectFile {
 public:
  // Opens `path` read-only. An Error names the path and the OS error, or (kForceDirect) says
  // that the file system refused O_DIRECT.
  [[nodiscard]] static Result<DirectFile> open(const std::string& path, DirectFileOptions options = {});

  DirectFile(DirectFile&& other) noexcept;
  DirectFile& operator=(DirectFile&& other) noexcept;
  DirectFile(const DirectFile&) = delete;
  DirectFile& operator=(const DirectFile&) = delete;
  ~DirectFile();

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // True when reads bypass the page cache (O_DIRECT).
  bool is_direct() const { return direct_; }
  // Required granularity of read offsets and lengths: from statx(STATX_DIOALIGN) when the
  // kernel reports it, else 4096 (always safe); 1 in buffered mode.
  uint32_t alignment() const { return alignment_; }
  // Required alignment of destination buffer addresses (same sources as alignment()).
  uint32_t buffer_alignment() const { return buffer_alignment_; }
  // File size in bytes when opened.
  uint64_t size() const { return size_; }
  // Name of the file system ("ext4", "tmpfs", "fs type 0x1234").
  const std::string& fs_name() const { return fs_name_; }

  // Ok if `path()` still names the same file (device, inode) with the size and mtime seen at
  // open; otherwise an Error saying it was replaced, truncated/resized or modified.
  // Thread-safe.
  [[nodiscard]] Status check_unchanged() const;

  // In buffered mode, asks the kernel to drop [offset, offset + length) from the page cache
  // (posix_fadvise DONTNEED) so streaming does not grow it; a no-op in direct mode.
  // Thread-safe.
  void drop_cache(uint64_t offset, uint64_t length) const;

 private:
  DirectFile() = default;
  void close_fd();

  int fd_ = -1;
  std::string path_;
  bool direct_ = false;
  uint32_t alignment_ = 1;
  uint32_t buffer_alignment_ = 1;
  uint64_t size_ = 0;
  uint64_t dev_ = 0;
  uint64_t inode_ = 0;
  int64_t mtime_ns_ = 0;
  std::string fs_name_;
};

// The name of the file system holding `fd` (for messages).
std::string file_system_name(int fd);

}  // namespace sniper
