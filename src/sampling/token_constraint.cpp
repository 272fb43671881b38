// SPDX-License-Identifier: MIT
#include "sampling/token_constraint.h"

#include <limits>

#include "base/check.h"

namespace sniper {

void TokenVocabulary::index() {
  CHECK(pieces.size() == is_eog.size(), "TokenVocabulary: %zu pieces but %zu eog flags", pieces.size(), is_eog.size());
  for (auto& v : by_first_byte) v.clear();
  for (size_t t = 0; t < pieces.size(); ++t) {
    if (!pieces[t].empty()) by_first_byte[static_cast<uint8_t>(pieces[t][0])].push_back(static_cast<int32_t>(t));
  }
}

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocab)
    : matcher_(std::move(grammar)), vocab_(std::move(vocab)) {
  CHECK(vocab_ != nullptr, "TokenConstraint needs a vocabulary");
}

bool TokenConstraint::allows(int32_t token) {
  if (token < 0 || static_cast<size_t>(token) >= vocab_->pieces.size()) return false;
  const auto t = static_cast<size_t>(token);
  if (vocab_->is_eog[t] != 0) return matcher_.is_complete();
  const std::string& piece = vocab_->pieces[t];
  if (piece.empty()) return false;
  return matcher_.can_accept(piece);
}

int64_t TokenConstraint::mask(float* logits, int32_t n_vocab) {
  const auto n = static_cast<size_t>(n_vocab);
  allowed_.assign(n, 0);
  int64_t n_allowed = 0;
  const ByteSet next = matcher_.next_bytes();
  for (int b = 0; b < 256; ++b) {
    if (!next.has(static_cast<uint8_t>(b))) continue;
    for (int32_t t : vocab_->by_first_byte[static_cast<size_t>(b)]) {
      const auto i = static_cast<size_t>(t);
      if (i >= n || vocab_->is_eog[i] != 0) continue;
      if (matcher_.can_accept(vocab_->pieces[i])) {
        allowed_[i] = 1;
        ++n_allowed;
      }
    }
  }
  if (matcher_.is_complete()) {
    for (size_t i = 0; i < n && i < vocab_->is_eog.size(); ++i) {
      if (vocab_->is_eog[i] != 0) {
        allowed_[i] = 1;
        ++n_allowed;
      }
    }
  }
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < n; ++i) {
    if (allowed_[i] == 0) logits[i] = kNegInf;
  }
  return n_allowed;
}

Status TokenConstraint::accept(int32_t token) {
  if (token < 0 || static_cast<size_t>(token) >= vocab_->pieces.size()) {
    return make_error("token %d is outside the vocabulary", token);
  }
  const auto t = static_cast<size_t>(token);
  if (vocab_->is_eog[t] != 0) {
    if (!matcher_.is_complete()) return make_error("token %d ends generation before the output is complete", token);
    return ok_status();
  }
  if (vocab_->pieces[t].empty() || !matcher_.accept(vocab_->pieces[t])) {
    return make_error("token %d does not continue the grammar", token);
  }
  return ok_status();
}

}  // namespace sniper
