// SPDX-License-Identifier: MIT
// SentencePiece BPE (see spm.h): the shared merge loop (symbol_merge.h) by token score, highest
// first, then each piece's token or its byte fallback.
#include "tokenizer/spm.h"

#include <cstdio>
#include <optional>
#include <string>

#include "tokenizer/symbol_merge.h"

namespace sniper {

namespace {

// Highest score first; on ties the leftmost pair.
struct BigramLess {
  bool operator()(const MergeBigram<float>& l, const MergeBigram<float>& r) const {
    return l.priority < r.priority || (l.priority == r.priority && l.left > r.left);
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
  std::vector<MergeSymbol> symbols = utf8_symbols(text);
  merge_symbols<float>(
      symbols,
      [&](const MergeSymbol& l, const MergeSymbol& r) -> std::optional<float> {
        const auto id = vocab.find(text.substr(l.start, l.n + r.n));
        if (!id) return std::nullopt;
        return vocab.scores[size_t(*id)];
      },
      BigramLess());

  for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[size_t(i)].next) {
    const MergeSymbol& s = symbols[size_t(i)];
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
