// SPDX-License-Identifier: MIT
// Tokenizer: text <-> token ids for a GGUF model, matching llama.cpp's llama_tokenize,
// llama_token_to_piece and llama_detokenize (common_detokenize) for SentencePiece ("llama") and
// byte-level BPE ("gpt2") vocabularies. StreamingDetokenizer turns a stream of ids into text
// pieces that are always valid UTF-8.
// Invariants: a Tokenizer is immutable after from_gguf(), so all const methods are thread-safe;
// it does not reference the GgufFile it was built from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "tokenizer/bpe.h"
#include "tokenizer/spm.h"
#include "tokenizer/vocab.h"

namespace sniper {

class GgufFile;

class Tokenizer {
 public:
  // Builds the tokenizer from the tokenizer.ggml.* metadata. Errors name the key and value (see
  // load_vocab, BpeModel::from_gguf). Thread-safe.
  [[nodiscard]] static Result<Tokenizer> from_gguf(const GgufFile& file);

  Tokenizer(Tokenizer&&) = default;
  Tokenizer& operator=(Tokenizer&&) = default;
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Text -> ids. `add_special`: prepend BOS / append EOS as tokenizer.ggml.add_{bos,eos}_token
  // say. `parse_special`: control and unknown-type token texts in `text` (e.g. "<|im_start|>")
  // become their single ids; user-defined tokens are always matched (llama.cpp's
  // tokenizer_st_partition). Any byte string is accepted; invalid UTF-8 never fails.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // Text of mixed origin: markup whose control-token texts must become control tokens (a chat
  // template's rendering) and text that must not (what users wrote). escape_special_text() puts
  // `mark` (a string that occurs nowhere else, e.g. a Unicode noncharacter) after the first
  // character of every control/unknown token text in `text`, so no special-token match can
  // include it; encode_escaped() parses special tokens in the whole text as encode(..., true)
  // does and then removes `mark` from the plain-text fragments before encoding them. A text
  // without marks encodes exactly as encode(text, add_special, true); escaped parts come out as
  // the plain-text tokens of their original bytes. Control-token texts of one character cannot
  // be escaped (no vocabulary has one). Texts in `keep` (exact token texts) are left as they
  // are: the markers a model writes in its own output (thinking, tool calls), which a template
  // may parse out of an assistant message. Thread-safe.
  std::string escape_special_text(std::string_view text, std::string_view mark,
                                  const std::vector<std::string>& keep = {}) const;
  std::vector<int32_t> encode_escaped(std::string_view text, bool add_special, std::string_view mark) const;
  // The length of the longest control/unknown token text that starts at text[at] (what encode
  // with parse_special could match there, user-defined tokens aside); 0 when none does.
  size_t special_text_at(std::string_view text, size_t at) const;

  // The bytes of one token (may be a partial UTF-8 sequence). Control/unknown tokens render as
  // their text only with `render_special`, else as "". Precondition: 0 <= id < n_vocab().
  std::string token_to_piece(int32_t id, bool render_special) const;

  // Ids -> text as llama.cpp's common_detokenize: pieces concatenated, one leading space removed
  // from the first token when the vocab adds a space prefix (SPM), then the BPE vocab's
  // clean-up-spaces passes. Precondition: every id in [0, n_vocab()).
  std::string decode(const std::vector<int32_t>& ids, bool render_special) const;

  int32_t bos_id() const { return vocab_.bos_id; }  // -1 when the vocab has none
  int32_t eos_id() const { return vocab_.eos_id; }  // -1 when the vocab has none
  int32_t eot_id() const { return vocab_.eot_id; }  // -1 when the vocab has none
  bool add_bos() const { return vocab_.add_bos; }
  bool add_eos() const { return vocab_.add_eos; }
  // End of generation: EOS, EOT, EOM and the tokens llama.cpp recognises by text
  // (<|im_end|>, <|endoftext|>, <|eot_id|>, ...). False for ids out of range.
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const { return vocab_.eog_ids; }
  // True for control-type tokens (BOS, EOS, <|im_start|>, ...). Precondition: id in range.
  bool is_control(int32_t id) const { return vocab_.has_attr(id, kTokenAttrControl); }

  int32_t n_vocab() const { return vocab_.n_vocab(); }
  // Id of the token whose stored text is exactly `text` (e.g. "<|im_start|>", or "▁the" for SPM).
  std::optional<int32_t> find_token(std::string_view text) const { return vocab_.find(text); }
  // The stored text of a token. Precondition: id in range.
  const std::string& token_text(int32_t id) const;
  TokenizerKind kind() const { return vocab_.kind; }
  const std::string& pre_type() const { return vocab_.pre_name; }
  const Vocab& vocab() const { return vocab_; }

 private:
  Tokenizer() = default;

  // encode() of text whose plain-text fragments lose every occurrence of `mark` (none when empty).
  std::vector<int32_t> encode_marked(std::string_view text, bool add_special, bool parse_special,
                                     std::string_view mark) const;
  // A byte trie of the control/unknown token texts (what parse_special adds), for
  // special_text_at(). Node 0 is the root.
  struct SpecialNode {
    std::vector<std::pair<uint8_t, int32_t>> next;  // byte -> node
    bool terminal = false;                          // a token's text ends here
  };
  void index_special_texts();

  Vocab vocab_;
  SpmModel spm_;  // used when kind() == kSpm
  BpeModel bpe_;  // used when kind() == kBpe
  std::vector<SpecialNode> special_trie_;
};

// Incremental detokenizer for generation: push() returns the text that became complete, holding
// back a trailing incomplete UTF-8 sequence (up to 3 bytes) until the next token completes it.
// Bytes that can never form valid UTF-8 are replaced with U+FFFD, so every returned string is valid
// UTF-8. Pieces are token_to_piece() concatenated (no leading-space removal, no clean-up passes).
// The referenced Tokenizer must outlive this object. Thread-compatible.
class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, bool render_special = false)
      : tokenizer_(&tokenizer), render_special_(render_special) {}

  // Appends token `id` (precondition: in range) and returns the newly completed text.
  std::string push(int32_t id);
  // Returns the held-back bytes (an incomplete sequence becomes U+FFFD) and resets the buffer.
  std::string flush();

 private:
  const Tokenizer* tokenizer_;
  bool render_special_;
  std::string pending_;  // bytes not yet returned
};

// Replaces every maximal ill-formed subsequence of `bytes` with U+FFFD (WHATWG / Unicode
// "substitution of maximal subparts"). Exposed for tests.
std::string sanitize_utf8(std::string_view bytes);

}  // namespace sniper
