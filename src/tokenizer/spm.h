// SPDX-License-Identifier: MIT
// SentencePiece BPE (tokenizer.ggml.model "llama"), as llama.cpp's llm_tokenizer_spm: split the
// text into UTF-8 characters, repeatedly merge the adjacent pair whose concatenation is the
// highest-scoring token (ties: leftmost first), then emit each symbol's token, or its bytes as
// <0xXX> byte tokens when it is not in the vocab.
// Invariants: the model only reads the Vocab it was built from; thread-safe for const use.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace sniper {

class SpmModel {
 public:
  SpmModel() = default;
  explicit SpmModel(const Vocab& vocab);

  // Appends the tokens of `text` to `out`. `text` must already have spaces escaped as U+2581
  // (and the space prefix added): this is one raw-text fragment. Bytes with no <0xXX> or
  // single-character token become the unknown token (or are dropped when there is none).
  void encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) const;

 private:
  std::array<int32_t, 256> byte_tokens_{};  // byte -> token id or -1
};

}  // namespace sniper
