// SPDX-License-Identifier: MIT
// Helpers for the I/O tests: temp files filled with a position-dependent byte pattern (so any
// byte read from the wrong offset shows up), removed when the helper goes out of scope.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace sniper::io_test {

// The byte stored at file offset i: mixes low and high bits so shifted reads never match.
inline uint8_t pattern_byte(uint64_t i) {
  uint64_t x = i * 0x9E3779B97F4A7C15ULL;
  x ^= x >> 29;
  return static_cast<uint8_t>(x ^ (i >> 12));
}

// A file of `size` pattern bytes in `dir`, deleted on destruction.
class PatternFile {
 public:
  PatternFile(const std::string& dir, uint64_t size, const std::string& tag = "io") : size_(size) {
    static int counter = 0;
    path_ = dir + "/sniper_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + ".bin";
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      ADD_FAILURE() << "cannot create " << path_;
      return;
    }
    std::vector<uint8_t> buf(1 << 20);
    for (uint64_t pos = 0; pos < size; pos += buf.size()) {
      const uint64_t n = std::min<uint64_t>(buf.size(), size - pos);
      for (uint64_t i = 0; i < n; ++i) buf[i] = pattern_byte(pos + i);
      if (::pwrite(fd, buf.data(), n, static_cast<off_t>(pos)) != static_cast<ssize_t>(n)) {
        ADD_FAILURE() << "write to " << path_ << " failed";
      }
    }
    ::close(fd);
  }
  ~PatternFile() { std::remove(path_.c_str()); }
  PatternFile(const PatternFile&) = delete;
  PatternFile& operator=(const PatternFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }

 private:
  std::string path_;
  uint64_t size_;
};

// Directory for test files on a real (disk-backed) file system.
inline std::string disk_temp_dir() { return std::filesystem::temp_directory_path().string(); }

// Index of the first byte of `data` that differs from the pattern at `offset`, or -1.
inline int64_t first_mismatch(const uint8_t* data, uint64_t offset, uint64_t length) {
  for (uint64_t i = 0; i < length; ++i) {
    if (data[i] != pattern_byte(offset + i)) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace sniper::io_test
