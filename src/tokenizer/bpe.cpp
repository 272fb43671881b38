// SPDX-License-Identifier: MIT
// Byte-level BPE (see bpe.h): per word, the shared merge loop (symbol_merge.h) by merge rank,
// lowest first, then each piece's token or its byte fallback.
#include "tokenizer/bpe.h"

#include <optional>

#include "gguf/reader.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/symbol_merge.h"
#include "tokenizer/unicode.h"

namespace sniper {

namespace {

constexpr const char* kKeyMerges = "tokenizer.ggml.merges";

// Lowest rank first; on ties the leftmost pair.
struct BigramGreater {
  bool operator()(const MergeBigram<int32_t>& l, const MergeBigram<int32_t>& r) const {
    return l.priority > r.priority || (l.priority == r.priority && l.left > r.left);
  }
};

}  // namespace

Result<BpeModel> BpeModel::from_gguf(const GgufFile& file, const Vocab& vocab) {
  if (!file.has(kKeyMerges)) {
    return make_error("%s is missing; a '%s' tokenizer needs BPE merges", kKeyMerges, vocab.model.c_str());
  }
  SNIPER_ASSIGN_OR_RETURN(const std::vector<std::string>* merges, file.get_string_array(kKeyMerges));
  return from_merges(*merges, vocab);
}

BpeModel BpeModel::from_merges(const std::vector<std::string>& merges, const Vocab& vocab) {
  BpeModel model;
  model.n_merges_ = merges.size();
  model.pair_rank_.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string_view merge = merges[i];
    const size_t space = merge.find(' ', 1);  // as llama.cpp: a leading space belongs to the left side
    if (space == std::string_view::npos) continue;
    const std::string_view left = merge.substr(0, space);
    const std::string_view right = merge.substr(space + 1);
    const auto left_id = vocab.find(left);
    const auto right_id = vocab.find(right);
    if (left_id && right_id) {
      model.pair_rank_.insert_if_absent(*left_id, *right_id, int32_t(i));
    } else {
      model.text_rank_.emplace(std::string(merge), int32_t(i));
    }
  }
  return model;
}

int32_t BpeModel::rank(const Vocab& vocab, std::string_view left, std::string_view right) const {
  const auto left_id = vocab.find(left);
  const auto right_id = vocab.find(right);
  if (left_id && right_id) {
    return pair_rank_.find(*left_id, *right_id);
  }
  if (text_rank_.empty()) return -1;
  std::string key;
  key.reserve(left.size() + 1 + right.size());
  key.append(left).append(1, ' ').append(right);
  const auto it = text_rank_.find(key);
  return it == text_rank_.end() ? -1 : it->second;
}

void BpeModel::encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) const {
  if (vocab.pre.spm_style) {
    std::string escaped;
    escaped.reserve(text.size());
    for (const char c : text) {
      if (c == ' ') {
        escaped += "\xE2\x96\x81";  // U+2581
      } else {
        escaped.push_back(c);
      }
    }
    for (const std::string& word : pre_tokenize(vocab.pre.kind, escaped)) {
      // As llama.cpp (its PR 21343): a run of newlines that is itself a token is not merged.
      if (word.find_first_not_of('\n') == std::string::npos) {
        if (const auto id = vocab.find(word)) {
          out.push_back(*id);
          continue;
        }
      }
      encode_word(vocab, word, out);
    }
    return;
  }
  std::string mapped;
  for (const std::string& word : pre_tokenize(vocab.pre.kind, text)) {
    mapped.clear();
    for (const char c : word) mapped += gpt2_byte_to_utf8(uint8_t(c));
    encode_word(vocab, mapped, out);
  }
}

void BpeModel::encode_word(const Vocab& vocab, std::string_view word, std::vector<int32_t>& out) const {
  if (vocab.pre.ignore_merges) {
    if (const auto id = vocab.find(word)) {
      out.push_back(*id);
      return;
    }
  }
  std::vector<MergeSymbol> symbols = utf8_symbols(word);
  merge_symbols<int32_t>(
      symbols,
      [&](const MergeSymbol& l, const MergeSymbol& r) -> std::optional<int32_t> {
        const int32_t merge_rank = rank(vocab, word.substr(l.start, l.n), word.substr(r.start, r.n));
        if (merge_rank < 0) return std::nullopt;
        return merge_rank;
      },
      BigramGreater());

  for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[size_t(i)].next) {
    const MergeSymbol& s = symbols[size_t(i)];
    const std::string_view piece = word.substr(s.start, s.n);
    if (const auto id = vocab.find(piece)) {
      out.push_back(*id);
      continue;
    }
    // As llama.cpp: fall back to single-byte tokens of the mapped text ("<0xXX>" tokens of the raw
    // bytes for SentencePiece-style BPE), dropping bytes without one.
    for (const char c : piece) {
      if (vocab.pre.spm_style) {
        static constexpr char kHex[] = "0123456789ABCDEF";
        const auto byte = uint8_t(c);
        const char name[6] = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
        if (const auto id = vocab.find(std::string_view(name, sizeof(name)))) out.push_back(*id);
      } else if (const auto id = vocab.find(std::string_view(&c, 1))) {
        out.push_back(*id);
      }
    }
  }
}

}  // namespace sniper
