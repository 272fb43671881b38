// SPDX-License-Identifier: MIT
// ByteSource implementations: memory and chunked pread() file reads (see byte_source.h).
#include "gguf/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/check.h"

namespace sniper {

Status ByteSource::read(void* dst, size_t n) {
  if (n > remaining()) {
    return make_error(
        "unexpected end of file: %zu bytes needed at offset %llu but the file (%llu bytes) has only "
        "%llu left",
        n, static_cast<unsigned long long>(pos_), static_cast<unsigned long long>(size_),
        static_cast<unsigned long long>(remaining()));
  }
  if (n == 0) return ok_status();
  SNIPER_TRY(read_at(pos_, dst, n));
  pos_ += n;
  return ok_status();
}

Status MemorySource::read_at(uint64_t offset, void* dst, size_t n) {
  CHECK(offset + n <= size(), "read past the end of the source");
  std::memcpy(dst, data_ + offset, n);
  return ok_status();
}

Result<std::unique_ptr<FileSource>> FileSource::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("cannot open '%s': %s", path.c_str(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return make_error("cannot stat '%s': %s", path.c_str(), std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error("'%s' is not a regular file", path.c_str());
  }
  return std::unique_ptr<FileSource>(new FileSource(fd, static_cast<uint64_t>(st.st_size), path));
}

FileSource::~FileSource() { ::close(fd_); }

Status FileSource::pread_fully(uint64_t offset, void* dst, size_t n) {
  auto* out = static_cast<uint8_t*>(dst);
  size_t done = 0;
  while (done < n) {
    ssize_t got = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      return make_error("reading '%s' at offset %llu: %s", path_.c_str(),
                        static_cast<unsigned long long>(offset + done), std::strerror(errno));
    }
    if (got == 0) {
      return make_error("reading '%s': the file ended at offset %llu, before its size %llu when opened", path_.c_str(),
                        static_cast<unsigned long long>(offset + done), static_cast<unsigned long long>(size()));
    }
    done += static_cast<size_t>(got);
  }
  return ok_status();
}

Status FileSource::read_at(uint64_t offset, void* dst, size_t n) {
  CHECK(offset + n <= size(), "read past the end of the source");
  auto* out = static_cast<uint8_t*>(dst);
  while (n > 0) {
    bool in_chunk = offset >= chunk_offset_ && offset < chunk_offset_ + chunk_.size();
    if (in_chunk) {
      size_t skip = static_cast<size_t>(offset - chunk_offset_);
      size_t take = std::min(n, chunk_.size() - skip);
      std::memcpy(out, chunk_.data() + skip, take);
      out += take;
      offset += take;
      n -= take;
      continue;
    }
    if (n >= kChunkBytes) return pread_fully(offset, out, n);
    size_t fill = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, size() - offset));
    chunk_.resize(fill);
    chunk_offset_ = offset;
    Status s = pread_fully(offset, chunk_.data(), fill);
    if (!s.ok()) {
      chunk_.clear();
      return s;
    }
  }
  return ok_status();
}

}  // namespace sniper
