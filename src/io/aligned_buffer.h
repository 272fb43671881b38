// SPDX-License-Identifier: MIT
// AlignedBuffer: an owned, uninitialised byte buffer whose address and size are multiples of a
// power-of-two alignment, as O_DIRECT reads and registered io_uring buffers need.
// Invariant: data() is aligned to alignment(); size() is a multiple of alignment() (or 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "base/check.h"

namespace sniper {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // Allocates at least `size` bytes (rounded up to `alignment`, a power of two >= 8).
  // Aborts (CHECK) on allocation failure.
  AlignedBuffer(size_t size, size_t alignment) : alignment_(alignment) {
    CHECK(alignment >= 8 && (alignment & (alignment - 1)) == 0, "alignment %zu is not a power of two >= 8", alignment);
    size_ = (size + alignment - 1) / alignment * alignment;
    if (size_ != 0) {
      data_ = static_cast<uint8_t*>(std::aligned_alloc(alignment, size_));
      CHECK(data_ != nullptr, "cannot allocate %zu bytes", size_);
    }
  }
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), alignment_(o.alignment_) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
      std::free(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      alignment_ = o.alignment_;
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { std::free(data_); }

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  size_t alignment() const { return alignment_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t alignment_ = 0;
};

}  // namespace sniper
