// SPDX-License-Identifier: MIT
#include "engine/ngram_draft.h"

#include <algorithm>

#include "base/check.h"

namespace sniper {

NgramDraft::NgramDraft(int64_t size_n) : size_n_(size_n) {
  CHECK(size_n >= 1 && size_n <= 64, "ngram size %ld outside [1, 64]", static_cast<long>(size_n));
}

Status NgramDraft::draft(std::span<const int32_t> context, int64_t n_max, Draft* out) {
  out->tokens.clear();
  out->q.clear();
  const auto len = static_cast<int64_t>(context.size());
  for (int64_t n = std::min(size_n_, len - 1); n >= 1; --n) {
    const int32_t* key = context.data() + (len - n);
    // The most recent earlier occurrence: a match at `start` is followed by context[start + n].
    for (int64_t start = len - n - 1; start >= 0; --start) {
      if (!std::equal(key, key + n, context.data() + start)) continue;
      const int64_t from = start + n;
      const int64_t count = std::min(n_max, len - from);
      out->tokens.assign(context.begin() + from, context.begin() + from + count);
      return ok_status();
    }
  }
  return ok_status();
}

}  // namespace sniper
