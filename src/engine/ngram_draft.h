// SPDX-License-Identifier: MIT
// NgramDraft: prompt lookup decoding. Drafts come from the sequence itself (prompt and output):
// find the most recent earlier occurrence of the last n tokens (n = size_n, then shorter down to
// 1) and propose the tokens that followed it. No model, no memory beyond the context; a point-mass
// draft (q empty). Invariant: a proposal is always a copy of tokens already in the context.
#pragma once

#include "engine/draft_source.h"

namespace sniper {

// Longest n-gram tried by default: 3 catches repeated phrases without matching on every common
// word (a 1-token match still serves when nothing longer repeats).
inline constexpr int64_t kDefaultNgramSize = 3;

class NgramDraft final : public DraftSource {
 public:
  // size_n in [1, 64] (CHECKed; validate user input with SpecConfig::validate()).
  explicit NgramDraft(int64_t size_n);
  [[nodiscard]] Status draft(std::span<const int32_t> context, int64_t n_max, Draft* out) override;
  const char* name() const override { return "ngram"; }

 private:
  int64_t size_n_;
};

}  // namespace sniper
