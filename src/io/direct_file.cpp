// SPDX-License-Identifier: MIT
// DirectFile: O_DIRECT open with buffered fallback, alignment discovery, change detection.
#include "io/direct_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>

#include "base/log.h"
#include "io/page_cache.h"

namespace sniper {

namespace {

constexpr uint32_t kSafeAlignment = 4096;  // a multiple of every logical block size in use

struct FsType {
  int64_t magic;
  const char* name;
  bool memory_backed;  // O_DIRECT cannot bypass anything: the data lives in RAM
};

// Magic numbers from <linux/magic.h> (spelled out: that header lacks some of them).
constexpr FsType kFsTypes[] = {
    {0xEF53, "ext4", false},     {0x58465342, "xfs", false},  {0x9123683E, "btrfs", false},
    {0xF2F52010, "f2fs", false}, {0x2FC12FC1, "zfs", false},  {0x794C7630, "overlayfs", false},
    {0x6969, "nfs", false},      {0x65735546, "fuse", false}, {0x01021997, "9p", false},
    {0x4D44, "vfat", false},     {0x5346544E, "ntfs", false}, {0x7366746E, "ntfs3", false},
    {0x01021994, "tmpfs", true}, {0x858458F6, "ramfs", true},
};

const FsType* find_fs_type(int fd) {
  struct statfs sfs;
  if (fstatfs(fd, &sfs) != 0) return nullptr;
  for (const FsType& t : kFsTypes) {
    if (static_cast<int64_t>(sfs.f_type) == t.magic) return &t;
  }
  return nullptr;
}

int64_t mtime_ns_of(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// Direct-I/O alignment of the open file from statx. Returns false when the file system says
// it does not support direct I/O on this file; leaves the 4096 defaults when it does not say.
bool query_dio_alignment(int fd, uint32_t* offset_align, uint32_t* mem_align) {
  *offset_align = kSafeAlignment;
  *mem_align = kSafeAlignment;
#ifdef STATX_DIOALIGN
  struct statx sx;
  std::memset(&sx, 0, sizeof(sx));
  if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN) != 0) {
    if (sx.stx_dio_offset_align == 0 || sx.stx_dio_mem_align == 0) return false;
    *offset_align = sx.stx_dio_offset_align;
    *mem_align = sx.stx_dio_mem_align;
  }
#endif
  return true;
}

}  // namespace

std::string file_system_name(int fd) {
  if (const FsType* t = find_fs_type(fd)) return t->name;
  struct statfs sfs;
  if (fstatfs(fd, &sfs) != 0) return "unknown fs";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "fs type 0x%" PRIx64, static_cast<uint64_t>(sfs.f_type));
  return buf;
}

Result<DirectFile> DirectFile::open(const std::string& path, DirectFileOptions options) {
  DirectFile f;
  f.path_ = path;
  // Why we are not using O_DIRECT, for the one warning line; empty when we are.
  std::string fallback_reason;
  if (options.mode != DirectMode::kForceBuffered) {
    f.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (f.fd_ < 0 && errno != EINVAL) {
      return make_error("cannot open '%s' for reading: %s", path.c_str(), std::strerror(errno));
    }
    if (f.fd_ < 0) {
      fallback_reason = "refused";
    } else {
      f.fs_name_ = file_system_name(f.fd_);
      const FsType* t = find_fs_type(f.fd_);
      if (!query_dio_alignment(f.fd_, &f.alignment_, &f.buffer_alignment_)) {
        fallback_reason = "refused";
      } else if (t != nullptr && t->memory_backed && options.mode == DirectMode::kAuto) {
        fallback_reason = "not useful (memory-backed)";
      } else {
        f.direct_ = true;
      }
      if (!f.direct_) f.close_fd();
    }
  }
  if (!f.direct_) {
    f.alignment_ = 1;
    f.buffer_alignment_ = 1;
    f.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (f.fd_ < 0) return make_error("cannot open '%s' for reading: %s", path.c_str(), std::strerror(errno));
    if (f.fs_name_.empty()) f.fs_name_ = file_system_name(f.fd_);
    if (options.mode == DirectMode::kForceDirect) {
      return make_error("O_DIRECT %s on '%s' (%s) but direct I/O was required", fallback_reason.c_str(), path.c_str(),
                        f.fs_name_.c_str());
    }
    if (options.mode == DirectMode::kAuto) {
      LOG_WARN("O_DIRECT %s on %s (%s); using buffered reads with posix_fadvise(DONTNEED)", fallback_reason.c_str(),
               path.c_str(), f.fs_name_.c_str());
    }
  }
  struct stat st;
  if (fstat(f.fd_, &st) != 0) return make_error("cannot stat '%s': %s", path.c_str(), std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return make_error("'%s' is not a regular file", path.c_str());
  f.size_ = static_cast<uint64_t>(st.st_size);
  f.dev_ = static_cast<uint64_t>(st.st_dev);
  f.inode_ = static_cast<uint64_t>(st.st_ino);
  f.mtime_ns_ = mtime_ns_of(st);
  return f;
}

DirectFile::DirectFile(DirectFile&& other) noexcept { *this = std::move(other); }

DirectFile& DirectFile::operator=(DirectFile&& other) noexcept {
  if (this != &other) {
    close_fd();
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    direct_ = other.direct_;
    alignment_ = other.alignment_;
    buffer_alignment_ = other.buffer_alignment_;
    size_ = other.size_;
    dev_ = other.dev_;
    inode_ = other.inode_;
    mtime_ns_ = other.mtime_ns_;
    fs_name_ = std::move(other.fs_name_);
  }
  return *this;
}

DirectFile::~DirectFile() { close_fd(); }

void DirectFile::close_fd() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status DirectFile::check_unchanged() const {
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0) {
    return make_error("model file '%s' was removed or renamed after it was opened (%s)", path_.c_str(),
                      std::strerror(errno));
  }
  if (static_cast<uint64_t>(st.st_dev) != dev_ || static_cast<uint64_t>(st.st_ino) != inode_) {
    return make_error("model file '%s' was replaced after it was opened (inode %" PRIu64 " is now %" PRIu64 ")",
                      path_.c_str(), inode_, static_cast<uint64_t>(st.st_ino));
  }
  if (fstat(fd_, &st) != 0) return make_error("cannot stat '%s': %s", path_.c_str(), std::strerror(errno));
  if (static_cast<uint64_t>(st.st_size) != size_) {
    return make_error("model file '%s' changed size after it was opened: %" PRIu64 " bytes, was %" PRIu64
                      " (truncated or rewritten?)",
                      path_.c_str(), static_cast<uint64_t>(st.st_size), size_);
  }
  if (mtime_ns_of(st) != mtime_ns_) {
    return make_error("model file '%s' was modified after it was opened (mtime changed)", path_.c_str());
  }
  return ok_status();
}

void DirectFile::drop_cache(uint64_t offset, uint64_t length) const {
  if (direct_ || length == 0) return;
  // Advisory: failure only means the page cache keeps the pages.
  drop_page_cache(fd_, offset, length);
}

}  // namespace sniper
