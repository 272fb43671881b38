// SPDX-License-Identifier: MIT
// drop_page_cache on Linux: posix_fadvise(POSIX_FADV_DONTNEED) writes nothing back (the files
// are read-only here) and drops the clean pages of the range.
#include "io/page_cache.h"

#include <fcntl.h>

namespace sniper {

void drop_page_cache(int fd, uint64_t offset, uint64_t length) {
  (void)posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(length), POSIX_FADV_DONTNEED);
}

}  // namespace sniper
