// SPDX-License-Identifier: MIT
// DraftSource: where speculative decoding's guesses come from. Given the sequence so far (the
// tokens the target has evaluated plus the one it is about to evaluate), a source proposes up to
// n_max next tokens and, when it drew them from a distribution, that distribution per position
// (the acceptance rule needs q; a source that proposes deterministically, like n-gram lookup, is
// a point mass and leaves q empty). Implementations: NgramDraft (engine/ngram_draft.h),
// DraftModel (engine/draft_model.h). Thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/result.h"

namespace sniper {

struct Draft {
  std::vector<int32_t> tokens;  // proposed continuation, at most n_max
  std::vector<float> q;         // [tokens.size(), n_vocab] draft distributions, or empty = point masses
};

class DraftSource {
 public:
  virtual ~DraftSource() = default;
  // Proposes up to n_max tokens to follow `context` (non-empty). Errors: a draft model's forward
  // pass failed (the caller then decodes without drafts or stops, its choice).
  [[nodiscard]] virtual Status draft(std::span<const int32_t> context, int64_t n_max, Draft* out) = 0;
  // "ngram" or "draft-model": for stats and logs.
  virtual const char* name() const = 0;
};

}  // namespace sniper
