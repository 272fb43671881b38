// SPDX-License-Identifier: MIT
// Vocab: the token table of a GGUF model (tokenizer.ggml.* metadata) with the per-token
// attributes, special token ids and flags llama.cpp derives from it (llama_vocab::impl::load).
// Invariants: texts, scores and attrs all have n_vocab() entries; token texts are unique and
// non-empty; every special id is -1 (absent) or in [0, n_vocab). Immutable after loading, so
// const access is thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "tokenizer/flat_hash.h"
#include "tokenizer/pre_tokenizer.h"

namespace sniper {

class GgufFile;

enum class TokenizerKind {
  kSpm,  // tokenizer.ggml.model "llama": SentencePiece BPE over scores, byte fallback
  kBpe,  // tokenizer.ggml.model "gpt2": byte-level BPE over merges; "gemma4": SentencePiece-style
         // BPE over merges (raw UTF-8, U+2581 for spaces, "<0xXX>" byte fallback; pre.spm_style)
};

// Token attribute bits (llama.cpp's llama_token_attr).
enum TokenAttr : uint32_t {
  kTokenAttrUndefined = 0,
  kTokenAttrUnknown = 1u << 0,
  kTokenAttrUnused = 1u << 1,
  kTokenAttrNormal = 1u << 2,
  kTokenAttrControl = 1u << 3,
  kTokenAttrUserDefined = 1u << 4,
  kTokenAttrByte = 1u << 5,
  kTokenAttrLstrip = 1u << 7,
  kTokenAttrRstrip = 1u << 8,
  // Not a llama.cpp attribute: a control token whose text token_to_piece renders even without
  // render_special (Gemma 4's reasoning and tool-call markers, which the chat parser must see).
  kTokenAttrRenderAlways = 1u << 16,
};

struct Vocab {
  TokenizerKind kind = TokenizerKind::kSpm;
  std::string model;     // tokenizer.ggml.model
  std::string pre_name;  // tokenizer.ggml.pre ("" when absent)
  PreTokenizerConfig pre;

  std::vector<std::string> texts;  // [n_vocab] token text as stored (SPM: '▁' for spaces; BPE: GPT-2 byte map)
  std::vector<float> scores;       // [n_vocab] SPM merge priority (higher merges first)
  std::vector<uint32_t> attrs;     // [n_vocab] TokenAttr bits
  TokenIndex index;                // text -> id over `texts`

  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t eot_id = -1;
  int32_t eom_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;

  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;  // SPM: prepend ' ' to text that starts the input or follows a special token
  bool clean_spaces = false;      // detokenize: llama.cpp's clean_up_tokenization_spaces passes

  // Control, user-defined and unknown tokens, longest text first (ties by id): the order in which
  // encode() carves them out of the input.
  std::vector<int32_t> special_tokens;
  // End-of-generation ids, ascending.
  std::vector<int32_t> eog_ids;

  int32_t n_vocab() const { return int32_t(texts.size()); }
  std::optional<int32_t> find(std::string_view text) const {
    const int32_t id = index.find(text, texts);
    if (id < 0) return std::nullopt;
    return id;
  }
  bool has_attr(int32_t id, uint32_t attr) const { return (attrs[size_t(id)] & attr) != 0; }
};

// Reads the tokenizer.ggml.* keys of `file`. Errors name the key and the offending value:
// missing or mistyped arrays, array lengths below the token count, duplicate tokens, an unknown
// tokenizer.ggml.model or tokenizer.ggml.pre, add_bos/add_eos without the matching id.
// Out-of-range special ids are ignored with a warning, as llama.cpp does. Thread-safe.
[[nodiscard]] Result<Vocab> load_vocab(const GgufFile& file);

}  // namespace sniper
