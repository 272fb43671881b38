// SPDX-License-Identifier: MIT
#include "base/huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>

namespace sniper {

namespace {
size_t page_size() {
  static const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return kPage;
}
size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }
// SNIPER_NO_THP=1 keeps 4 KiB pages (to measure what huge pages are worth).
bool huge_pages_wanted() {
  static const bool kWanted = [] {
    const char* v = std::getenv("SNIPER_NO_THP");
    return v == nullptr || v[0] == '\0' || v[0] == '0';
  }();
  return kWanted;
}
}  // namespace

uint8_t* map_pages(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t length = round_up(bytes, page_size());
  if (length < kHugePageBytes) {
    void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
  }
  // Over-map by one huge page and trim both ends so the start is 2 MiB aligned.
  const size_t padded = length + kHugePageBytes;
  void* raw = mmap(nullptr, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = round_up(start, kHugePageBytes);
  const size_t head = aligned - start, tail = padded - head - length;
  if (head > 0) munmap(raw, head);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + length), tail);
  uint8_t* p = reinterpret_cast<uint8_t*>(aligned);
  if (huge_pages_wanted()) (void)madvise(p, length, MADV_HUGEPAGE);  // advice only: failure leaves 4 KiB pages
  return p;
}

void unmap_pages(uint8_t* data, size_t bytes) {
  if (data == nullptr || bytes == 0) return;
  munmap(data, round_up(bytes, page_size()));
}

}  // namespace sniper
