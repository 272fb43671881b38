// SPDX-License-Identifier: MIT
// Large weight, cache and buffer allocations: anonymous mappings aligned to 2 MiB with
// transparent huge pages requested (madvise(MADV_HUGEPAGE)), so the kernel backs them with 2 MiB
// pages when it can. Decode touches every active weight byte once per token in scattered
// expert-sized pieces; with 4 KiB pages that is one page-table walk per 4 KiB read, with huge
// pages one per 2 MiB. Where THP is off or fragmented the mapping simply stays 4 KiB pages.
// SNIPER_NO_THP=1 in the environment skips the advice (for measurements).
// Invariants: the returned address is aligned to kHugePageBytes when bytes >= kHugePageBytes,
// otherwise to the page size; memory reads as zero until written.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sniper {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Maps `bytes` (> 0) of zeroed memory; nullptr if the mapping fails. Thread-safe.
[[nodiscard]] uint8_t* map_pages(size_t bytes);
// Unmaps what map_pages(bytes) returned (nullptr is ignored). `bytes` must be the same value.
void unmap_pages(uint8_t* data, size_t bytes);

}  // namespace sniper
