// SPDX-License-Identifier: MIT
// Dropping a file's pages from the OS page cache, so that what a reader has finished with is not
// charged to the process's memory budget (cgroups count the page cache). Advice only: the call
// cannot fail in a way the caller must handle, and the data stay readable. The one place that
// names the OS mechanism (Linux: posix_fadvise POSIX_FADV_DONTNEED), so code outside src/io
// never does.
#pragma once

#include <cstdint>

namespace sniper {

// Asks the OS to drop the cached pages of [offset, offset + length) of the open file `fd`;
// length 0 means to the end of the file. Thread-safe.
void drop_page_cache(int fd, uint64_t offset, uint64_t length);

}  // namespace sniper
