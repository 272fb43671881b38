// SPDX-License-Identifier: MIT
// The merge loop that byte-level BPE and SentencePiece share: a text is split into UTF-8
// characters ("symbols": byte ranges linked into a list); adjacent pairs the model can merge wait
// in a heap by the model's priority (BPE: merge rank, SentencePiece: token score); a popped pair is
// applied only if both symbols are still the ones it was made from, which their lengths prove (a
// symbol only grows, by absorbing its right neighbour), and the new pairs on either side are
// queued. What differs between the models is the priority and its order, which the caller passes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

#include "tokenizer/unicode.h"

namespace sniper {

struct MergeSymbol {
  int prev;
  int next;
  size_t start;  // byte offset in the text
  size_t n;      // byte length; 0 once merged into its left neighbour
};

template <class Priority>
struct MergeBigram {
  int left;
  int right;
  Priority priority;
  size_t size;  // l.n + r.n when queued
};

// The UTF-8 characters of `text` as linked symbols (a truncated sequence at the end is one symbol).
inline std::vector<MergeSymbol> utf8_symbols(std::string_view text) {
  std::vector<MergeSymbol> symbols;
  symbols.reserve(text.size());
  for (size_t offset = 0; offset < text.size();) {
    const size_t len = std::min(utf8_sequence_length(static_cast<uint8_t>(text[offset])), text.size() - offset);
    const int index = static_cast<int>(symbols.size());
    symbols.push_back(MergeSymbol{index - 1, offset + len == text.size() ? -1 : index + 1, offset, len});
    offset += len;
  }
  return symbols;
}

// Merges `symbols` in place. `priority_of(l, r)` gives the pair's priority or nullopt when the
// model cannot merge it; `later(a, b)` is the heap order on MergeBigram<Priority> (true when a is
// applied after b; ties go to the leftmost pair in both models).
template <class Priority, class PriorityOf, class Later>
void merge_symbols(std::vector<MergeSymbol>& symbols, PriorityOf priority_of, Later later) {
  using Bigram = MergeBigram<Priority>;
  std::priority_queue<Bigram, std::vector<Bigram>, Later> queue(later);
  auto add = [&](int left, int right) {
    if (left == -1 || right == -1) return;
    const MergeSymbol& l = symbols[static_cast<size_t>(left)];
    const MergeSymbol& r = symbols[static_cast<size_t>(right)];
    const std::optional<Priority> priority = priority_of(l, r);
    if (!priority) return;
    queue.push(Bigram{left, right, *priority, l.n + r.n});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) add(i - 1, i);
  while (!queue.empty()) {
    const Bigram bigram = queue.top();
    queue.pop();
    MergeSymbol& l = symbols[static_cast<size_t>(bigram.left)];
    MergeSymbol& r = symbols[static_cast<size_t>(bigram.right)];
    if (l.n == 0 || r.n == 0 || l.n + r.n != bigram.size) continue;  // stale
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = bigram.left;
    add(l.prev, bigram.left);
    add(bigram.left, l.next);
  }
}

}  // namespace sniper
