// SPDX-License-Identifier: MIT
// ByteSource: the sequential input the GGUF parser reads from, either a buffer in memory or a
// file read with plain pread() calls through a bounded chunk buffer (never mmap, never the
// whole file), so the parser reads only the header, metadata and tensor table of a 20 GB model.
// Invariant: position() <= size(); read() never reads past size().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"

namespace sniper {

class ByteSource {
 public:
  virtual ~ByteSource() = default;

  // Total bytes in the source (the whole file).
  uint64_t size() const { return size_; }
  uint64_t position() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  // Copies exactly n bytes at position() into dst and advances. An Error if fewer than n bytes
  // remain or the underlying read fails.
  [[nodiscard]] Status read(void* dst, size_t n);

 protected:
  explicit ByteSource(uint64_t size) : size_(size) {}
  // Copies n bytes at absolute offset `offset` (offset + n <= size()) into dst.
  [[nodiscard]] virtual Status read_at(uint64_t offset, void* dst, size_t n) = 0;

 private:
  uint64_t size_;
  uint64_t pos_ = 0;
};

// A source over caller-owned memory; the memory must outlive the source.
class MemorySource final : public ByteSource {
 public:
  MemorySource(const uint8_t* data, size_t size) : ByteSource(size), data_(data) {}

 private:
  Status read_at(uint64_t offset, void* dst, size_t n) override;
  const uint8_t* data_;
};

// A source over an open file. Reads go through a chunk buffer of kChunkBytes; reads at least
// that large bypass it. Not thread-safe.
class FileSource final : public ByteSource {
 public:
  static constexpr size_t kChunkBytes = size_t{1} << 20;

  // Opens `path` read-only; an Error names the path and the OS error.
  [[nodiscard]] static Result<std::unique_ptr<FileSource>> open(const std::string& path);
  ~FileSource() override;
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

 private:
  FileSource(int fd, uint64_t size, std::string path) : ByteSource(size), fd_(fd), path_(std::move(path)) {}
  Status read_at(uint64_t offset, void* dst, size_t n) override;
  Status pread_fully(uint64_t offset, void* dst, size_t n);

  int fd_;
  std::string path_;
  std::vector<uint8_t> chunk_;  // bytes [chunk_offset_, chunk_offset_ + chunk_.size()) of the file
  uint64_t chunk_offset_ = 0;
};

}  // namespace sniper
