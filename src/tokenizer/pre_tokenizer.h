// SPDX-License-Identifier: MIT
// BPE pre-tokenizers: split text into the words that byte-level BPE merges within, one splitter
// per regex family that llama.cpp uses (tokenizer.ggml.pre). The regexes are implemented by hand
// over Unicode categories, the way llama.cpp's unicode.cpp does, so the splits match llama.cpp
// (its custom matchers, and its std::regex fallback on category-collapsed text) exactly.
// Invariants: the words concatenate back to the input (invalid UTF-8 bytes come back as U+FFFD);
// no word is empty. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace sniper {

enum class PreTokenizerKind {
  kDefault,      // llama.cpp's fallback: punctuation runs, then GPT-2, then digit runs / triples
  kGpt2,         // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kStarcoder,    // \p{N} single digits, then GPT-2
  kLlama3,       // (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  kQwen2,        // like kLlama3 but \p{N} (one digit per word)
  kDeepseekLlm,  // deepseek-llm's six-stage split
  kQwen35,       // like kQwen2 but letter runs also take combining marks: [\p{L}\p{M}]+, [^\s\p{L}\p{M}\p{N}]+
  kNewlines,     // gemma4: [^\n]+|[\n]+ (runs of newlines and runs of anything else)
};

// What a tokenizer.ggml.pre value means: its splitter and the vocab flags llama.cpp ties to it.
struct PreTokenizerConfig {
  PreTokenizerKind kind = PreTokenizerKind::kDefault;
  bool ignore_merges = false;  // a word that is itself a token is emitted without merging
  bool add_bos = false;        // default of tokenizer.ggml.add_bos_token
  bool clean_spaces = true;    // detokenize removes " ," " ." " 's" ... (clean_up_tokenization_spaces)
  // SentencePiece-style BPE (gemma4): spaces become U+2581 before the split, words are merged as
  // raw UTF-8 (no GPT-2 byte map), bytes without a token fall back to "<0xXX>" tokens, a word made
  // only of newlines is one token when the vocab has it, and add_bos is forced on (llama.cpp
  // overrides tokenizer.ggml.add_bos_token=false for this pre-tokenizer).
  bool spm_style = false;
};

// Maps a tokenizer.ggml.pre value (with llama.cpp's aliases; "" means "default") to its config.
// Unknown names are an Error listing the supported ones.
[[nodiscard]] Result<PreTokenizerConfig> pre_tokenizer_from_name(std::string_view name);

// Splits `text` into words (UTF-8, before the GPT-2 byte mapping).
std::vector<std::string> pre_tokenize(PreTokenizerKind kind, std::string_view text);

}  // namespace sniper
