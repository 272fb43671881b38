// SPDX-License-Identifier: MIT
#include "sampling/token_constraint.h"

#include <algorithm>
#include <limits>

#include "base/check.h"

namespace sniper {

void TokenVocabulary::index() {
  CHECK(pieces.size() == is_eog.size(), "TokenVocabulary: %zu pieces but %zu eog flags", pieces.size(), is_eog.size());
  std::vector<int32_t> order;
  for (size_t t = 0; t < pieces.size(); ++t) {
    if (!pieces[t].empty() && is_eog[t] == 0) order.push_back(static_cast<int32_t>(t));
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const std::string& pa = pieces[static_cast<size_t>(a)];
    const std::string& pb = pieces[static_cast<size_t>(b)];
    return pa != pb ? pa < pb : a < b;
  });
  trie.assign(1, TrieNode{});
  trie_tokens.clear();
  std::vector<int32_t> last_child(1, -1);
  std::vector<int32_t> path = {0};  // path[d]: the node after d bytes of the previous piece
  const std::string* prev = nullptr;
  for (int32_t t : order) {
    const std::string& piece = pieces[static_cast<size_t>(t)];
    size_t common = 0;
    if (prev != nullptr) {
      while (common < prev->size() && common < piece.size() && (*prev)[common] == piece[common]) ++common;
    }
    path.resize(common + 1);
    for (size_t d = common; d < piece.size(); ++d) {
      const int32_t parent = path.back();
      const auto node = static_cast<int32_t>(trie.size());
      TrieNode n;
      n.byte = static_cast<uint8_t>(piece[d]);
      n.tokens_begin = n.tokens_end = static_cast<int32_t>(trie_tokens.size());
      trie.push_back(n);
      last_child.push_back(-1);
      if (last_child[static_cast<size_t>(parent)] < 0) {
        trie[static_cast<size_t>(parent)].first_child = node;
      } else {
        trie[static_cast<size_t>(last_child[static_cast<size_t>(parent)])].next_sibling = node;
      }
      last_child[static_cast<size_t>(parent)] = node;
      path.push_back(node);
    }
    TrieNode& end = trie[static_cast<size_t>(path.back())];
    if (end.tokens_begin == end.tokens_end)
      end.tokens_begin = end.tokens_end = static_cast<int32_t>(trie_tokens.size());
    trie_tokens.push_back(t);  // equal pieces are adjacent in `order`, so a node's tokens are contiguous
    end.tokens_end = static_cast<int32_t>(trie_tokens.size());
    prev = &piece;
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
  // Depth-first over the trie: a node is reached only when its bytes keep a parse alive.
  const auto& trie = vocab_->trie;
  struct Visit {
    int32_t node;  // next child to try at this depth (-1: none left)
    size_t mark;   // matcher frames before the step into this depth's parent
  };
  std::vector<Visit> stack;
  if (level_.empty()) level_.resize(1);
  level_[0] = matcher_.stacks();
  stack.push_back({trie[0].first_child, matcher_.mark()});
  while (!stack.empty()) {
    Visit& v = stack.back();
    if (v.node < 0) {
      matcher_.rollback(v.mark);  // the frames of the step into this subtree
      stack.pop_back();
      continue;
    }
    const size_t depth = stack.size();  // the child's depth
    const auto& node = trie[static_cast<size_t>(v.node)];
    v.node = node.next_sibling;
    if (level_.size() <= depth) level_.resize(depth + 1);
    const size_t mark = matcher_.mark();
    if (!matcher_.advance(level_[depth - 1], node.byte, &level_[depth])) {
      matcher_.rollback(mark);
      continue;
    }
    for (int32_t i = node.tokens_begin; i < node.tokens_end; ++i) {
      const auto t = static_cast<size_t>(vocab_->trie_tokens[static_cast<size_t>(i)]);
      if (t < n && allowed_[t] == 0) {
        allowed_[t] = 1;
        ++n_allowed;
      }
    }
    if (node.first_child >= 0) {
      // Frames made by this step stay until the subtree is done; the next sibling's step
      // starts from the parent's stacks, whose frames all predate `mark`.
      stack.push_back({node.first_child, mark});
    } else {
      matcher_.rollback(mark);
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
