// SPDX-License-Identifier: MIT
// Byte-level BPE (tokenizer.ggml.model "gpt2"), as llama.cpp's llm_tokenizer_bpe: pre-tokenize
// into words, map each word's bytes through the GPT-2 byte map, then repeatedly merge the adjacent
// pair with the lowest merge rank (ties: leftmost first) and emit the tokens. SentencePiece-style
// BPE ("gemma4", Vocab::pre.spm_style) skips the byte map: spaces become U+2581, words are merged
// as raw UTF-8 and unknown bytes fall back to "<0xXX>" tokens.
// Merge ranks are keyed by the token-id pair, so a lookup costs two string_view hash probes and one
// integer probe. Invariants: the model only reads the Vocab it was built from; thread-safe for
// const use.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "tokenizer/flat_hash.h"
#include "tokenizer/vocab.h"

namespace sniper {

class GgufFile;

class BpeModel {
 public:
  BpeModel() = default;

  // Reads tokenizer.ggml.merges ("left right" strings; the first occurrence of a pair wins).
  // Errors if the key is missing or not an array of strings.
  [[nodiscard]] static Result<BpeModel> from_gguf(const GgufFile& file, const Vocab& vocab);
  // Builds the model from merge strings directly (used by tests). Never fails.
  static BpeModel from_merges(const std::vector<std::string>& merges, const Vocab& vocab);

  // Appends the tokens of one raw-text fragment (no special tokens in it) to `out`.
  void encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) const;

  // Rank of merging `left` and `right` (byte-mapped token texts), or -1 if they do not merge.
  int32_t rank(const Vocab& vocab, std::string_view left, std::string_view right) const;

  size_t n_merges() const { return n_merges_; }

 private:
  void encode_word(const Vocab& vocab, std::string_view word, std::vector<int32_t>& out) const;

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  PairRankMap pair_rank_;  // (left id, right id) -> rank
  // Merges whose sides are not both tokens, keyed "left right" (rare; kept for exactness).
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> text_rank_;
  size_t n_merges_ = 0;
};

}  // namespace sniper
