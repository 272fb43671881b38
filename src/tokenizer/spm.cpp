// SPDX-License-Identifier: MIT
// SentencePiece BPE merge loop (see spm.h). Symbols are byte ranges of the input linked into a
// list; a merge is only applied if both sides are still the symbols the bigram was made from,
// which their lengths prove (a symbol only grows by absorbing its right neighbour).
#include "tokenizer/spm.h"

#include <cstdio>
#include <queue>
#include <string>

#include "tokenizer/unicode.h"

namespace sniper {

namespace {

struct Symbol {
  int prev;
  int next;
  size_t start;  // byte offset in the text
  size_t n;      // byte length; 0 once merged into its left neighbour
};

struct Bigram {
  int left;
  int right;
  float score;
  size_t size;
};

// Highest score first; on ties the leftmost pair.
struct BigramLess {
  bool operator()(const Bigram& l, const Bigram& r) const {
    return l.score < r.score || (l.score == r.score && l.left > r.left);
  }
};

}  // namespace

SpmModel::SpmModel(const Vocab& vocab) {
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    auto id = vocab.find(hex);
    if (!id) id = vocab.find(std::string(1, char(b)));
    byte_tokens_[size_t(b)] = id ? *id : -1;
  }
}

void SpmModel::encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) const {
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t offset = 0; offset < text.size();) {
    const size_t len = std::min(utf8_sequence_length(uint8_t(text[offset])), text.size() - offset);
    const int index = int(symbols.size());
    symbols.push_back(Symbol{index - 1, offset + len == text.size() ? -1 : index + 1, offset, len});
    offset += len;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue;
  auto try_add_bigram = [&](int left, int right) {
    if (left == -1 || right == -1) return;
    const Symbol& l = symbols[size_t(left)];
    const Symbol& r = symbols[size_t(right)];
    const auto id = vocab.find(text.substr(l.start, l.n + r.n));
    if (!id) return;
    queue.push(Bigram{left, right, vocab.scores[size_t(*id)], l.n + r.n});
  };
  for (int i = 1; i < int(symbols.size()); ++i) try_add_bigram(i - 1, i);

  while (!queue.empty()) {
    const Bigram bigram = queue.top();
    queue.pop();
    Symbol& l = symbols[size_t(bigram.left)];
    Symbol& r = symbols[size_t(bigram.right)];
    if (l.n == 0 || r.n == 0 || l.n + r.n != bigram.size) continue;  // stale
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[size_t(r.next)].prev = bigram.left;
    try_add_bigram(l.prev, bigram.left);
    try_add_bigram(bigram.left, l.next);
  }

  for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[size_t(i)].next) {
    const Symbol& s = symbols[size_t(i)];
    const std::string_view piece = text.substr(s.start, s.n);
    if (const auto id = vocab.find(piece)) {
      out.push_back(*id);
      continue;
    }
    // Merged symbols are always tokens, so only single characters get here: fall back to bytes.
    for (const char c : piece) {
      const int32_t id = byte_tokens_[uint8_t(c)];
      if (id >= 0) {
        out.push_back(id);
      } else if (vocab.unk_id >= 0) {
        out.push_back(vocab.unk_id);
      }
    }
  }
}

}  // namespace sniper
