// SPDX-License-Identifier: MIT
// Tokenizer front end: special-token partitioning (llama.cpp's tokenizer_st_partition), dispatch
// of raw-text fragments to the SPM or BPE model, token_to_piece and detokenize with llama.cpp's
// space handling.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <cstdio>

#include "base/check.h"
#include "gguf/reader.h"
#include "tokenizer/unicode.h"

namespace sniper {

namespace {

// A piece of the input: either a raw-text byte range or an already-recognised special token.
struct Fragment {
  int32_t token;  // -1 for raw text
  size_t offset;
  size_t length;
};

bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Splits `text` at every occurrence of a special token's text, longest tokens first. Control and
// unknown tokens only take part when `parse_special`; user-defined tokens always do.
std::vector<Fragment> partition_special(const Vocab& vocab, std::string_view text, bool parse_special) {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back(Fragment{-1, 0, text.size()});
  std::vector<Fragment> next;
  for (const int32_t id : vocab.special_tokens) {
    const uint32_t attr = vocab.attrs[size_t(id)];
    if (!parse_special && (attr & (kTokenAttrControl | kTokenAttrUnknown))) continue;
    const std::string& special = vocab.texts[size_t(id)];
    next.clear();
    for (const Fragment& f : fragments) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t base = f.offset;
      size_t length = f.length;
      while (length > 0) {
        const size_t match = text.substr(0, base + length).find(special, base);
        if (match == std::string_view::npos) {
          next.push_back(Fragment{-1, base, length});
          break;
        }
        size_t left_length = match - base;
        if (attr & kTokenAttrLstrip) {
          while (left_length > 0 && is_ascii_space(text[base + left_length - 1])) --left_length;
        }
        if (left_length > 0) next.push_back(Fragment{-1, base, left_length});
        next.push_back(Fragment{id, 0, 0});
        size_t right_offset = match + special.size();
        size_t right_length = base + length - right_offset;
        if (attr & kTokenAttrRstrip) {
          while (right_length > 0 && is_ascii_space(text[right_offset])) {
            ++right_offset;
            --right_length;
          }
        }
        base = right_offset;
        length = right_length;
      }
    }
    fragments.swap(next);
  }
  return fragments;
}

// llama.cpp's llama_decode_text: reverse the GPT-2 byte map of a BPE token text.
std::string decode_byte_level(const std::string& text) {
  std::string out;
  for (const uint32_t cp : utf8_to_codepoints(text)) {
    const int byte = gpt2_codepoint_to_byte(cp);
    if (byte >= 0) {
      out.push_back(char(byte));
      continue;
    }
    std::string utf8;
    append_utf8(utf8, cp);
    out += "[UNK_BYTE_0x";
    for (const char c : utf8) {
      char hex[3];
      std::snprintf(hex, sizeof(hex), "%02x", unsigned(uint8_t(c)));
      out += hex;
    }
    out += text + "]";
  }
  return out;
}

// Parses the XX of a "<0xXX>" byte token (as llama.cpp's token_to_byte; 0 when malformed).
char byte_token_value(const std::string& text) {
  unsigned value = 0;
  if (text.size() >= 5) std::sscanf(text.c_str() + 3, "%2x", &value);
  return char(value);
}

// llama.cpp's clean_up_tokenization_spaces passes of llama_detokenize.
std::string clean_up_spaces(std::string s) {
  if (s.empty()) return s;
  std::string out;
  out.reserve(s.size());
  // " ?" " !" " ." " ," -> "?" "!" "." ","
  out.push_back(s[0]);
  for (size_t i = 1; i < s.size(); ++i) {
    const char x = s[i];
    if (s[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) out.pop_back();
    out.push_back(x);
  }
  // " ' " -> "'"
  s.swap(out);
  out.clear();
  out.push_back(s[0]);
  for (size_t i = 1; i < s.size(); ++i) {
    const char x = s[i];
    if (x == '\'' && i + 1 < s.size() && s[i - 1] == ' ' && s[i + 1] == ' ') {
      out.pop_back();
      s[++i] = '\0';  // the next space is dropped (and no longer counts as a space)
    }
    out.push_back(x);
  }
  // " 's" " 'm" " 're" " 've" -> without the space
  s.swap(out);
  out.clear();
  out.push_back(s[0]);
  for (size_t i = 1; i < s.size(); ++i) {
    const char x = s[i];
    if (s[i - 1] == ' ' && x == '\'' && i + 1 < s.size()) {
      const char x1 = s[i + 1];
      if (x1 == 's' || x1 == 'm') {
        out.pop_back();
      } else if (x1 != 't' && x1 != 'd' && i + 2 < s.size()) {
        const char x2 = s[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) out.pop_back();
      }
    }
    out.push_back(x);
  }
  return out;
}

}  // namespace

Result<Tokenizer> Tokenizer::from_gguf(const GgufFile& file) {
  Tokenizer tok;
  SNIPER_ASSIGN_OR_RETURN(tok.vocab_, load_vocab(file));
  if (tok.vocab_.kind == TokenizerKind::kSpm) {
    tok.spm_ = SpmModel(tok.vocab_);
  } else {
    SNIPER_ASSIGN_OR_RETURN(tok.bpe_, BpeModel::from_gguf(file, tok.vocab_));
  }
  tok.index_special_texts();
  return tok;
}

void Tokenizer::index_special_texts() {
  special_trie_.assign(1, SpecialNode{});
  for (const int32_t id : vocab_.special_tokens) {
    if (!(vocab_.attrs[size_t(id)] & (kTokenAttrControl | kTokenAttrUnknown))) continue;
    int32_t node = 0;
    for (const char c : vocab_.texts[size_t(id)]) {
      const auto b = static_cast<uint8_t>(c);
      auto& next = special_trie_[size_t(node)].next;
      auto it = std::find_if(next.begin(), next.end(), [b](const auto& e) { return e.first == b; });
      if (it == next.end()) {
        next.emplace_back(b, static_cast<int32_t>(special_trie_.size()));
        node = static_cast<int32_t>(special_trie_.size());
        special_trie_.push_back(SpecialNode{});
      } else {
        node = it->second;
      }
    }
    special_trie_[size_t(node)].terminal = true;
  }
}

size_t Tokenizer::special_text_at(std::string_view text, size_t at) const {
  if (special_trie_.empty()) return 0;
  int32_t node = 0;
  size_t longest = 0;
  for (size_t i = at; i < text.size(); ++i) {
    const auto b = static_cast<uint8_t>(text[i]);
    const auto& next = special_trie_[size_t(node)].next;
    auto it = std::find_if(next.begin(), next.end(), [b](const auto& e) { return e.first == b; });
    if (it == next.end()) break;
    node = it->second;
    if (special_trie_[size_t(node)].terminal) longest = i + 1 - at;
  }
  return longest;
}

std::string Tokenizer::escape_special_text(std::string_view text, std::string_view mark,
                                           const std::vector<std::string>& keep) const {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    // Whole UTF-8 characters: the mark goes after the first character of a match.
    size_t len = 1;
    const auto c = static_cast<uint8_t>(text[i]);
    if (c >= 0xF0) {
      len = 4;
    } else if (c >= 0xE0) {
      len = 3;
    } else if (c >= 0xC0) {
      len = 2;
    }
    len = std::min(len, text.size() - i);
    const size_t special = special_text_at(text, i);
    const bool kept = special > 0 && std::find(keep.begin(), keep.end(), text.substr(i, special)) != keep.end();
    out.append(text.substr(i, len));
    if (special > 0 && !kept && i + len < text.size()) out.append(mark);
    i += len;
  }
  return out;
}

std::vector<int32_t> Tokenizer::encode_escaped(std::string_view text, bool add_special, std::string_view mark) const {
  return encode_marked(text, add_special, /*parse_special=*/true, mark);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  return encode_marked(text, add_special, parse_special, {});
}

std::vector<int32_t> Tokenizer::encode_marked(std::string_view full_text, bool add_special, bool parse_special,
                                              std::string_view mark) const {
  std::vector<int32_t> out;
  const std::vector<Fragment> fragments = partition_special(vocab_, full_text, parse_special);
  // A plain-text fragment without the marks (they only separate a token text's characters).
  std::string unmarked;
  auto fragment_text = [&](const Fragment& f) -> std::string_view {
    const std::string_view t = full_text.substr(f.offset, f.length);
    if (mark.empty() || t.find(mark) == std::string_view::npos) return t;
    unmarked.clear();
    for (size_t i = 0; i < t.size();) {
      if (t.compare(i, mark.size(), mark) == 0) {
        i += mark.size();
      } else {
        unmarked.push_back(t[i++]);
      }
    }
    return unmarked;
  };
  if (add_special && vocab_.add_bos) out.push_back(vocab_.bos_id);
  if (vocab_.kind == TokenizerKind::kSpm) {
    bool prev_special = true;  // the first fragment gets the space prefix too
    std::string escaped;
    for (const Fragment& f : fragments) {
      if (f.token >= 0) {
        out.push_back(f.token);
        prev_special = true;
        continue;
      }
      escaped.clear();
      if (vocab_.add_space_prefix && prev_special) escaped = "\xE2\x96\x81";
      for (const char c : fragment_text(f)) {
        if (c == ' ') {
          escaped += "\xE2\x96\x81";  // U+2581
        } else {
          escaped.push_back(c);
        }
      }
      spm_.encode(vocab_, escaped, out);
      prev_special = false;
    }
  } else {
    for (const Fragment& f : fragments) {
      if (f.token >= 0) {
        out.push_back(f.token);
      } else {
        bpe_.encode(vocab_, fragment_text(f), out);
      }
    }
  }
  if (add_special && vocab_.add_eos) out.push_back(vocab_.eos_id);
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  CHECK(id >= 0 && id < n_vocab(), "token id %d outside [0, %d)", id, n_vocab());
  const uint32_t attr = vocab_.attrs[size_t(id)];
  const std::string& text = vocab_.texts[size_t(id)];
  if (attr & (kTokenAttrUnknown | kTokenAttrControl)) {
    return render_special || (attr & kTokenAttrRenderAlways) ? text : std::string();
  }
  if (attr & kTokenAttrUserDefined) return text;
  if (attr & kTokenAttrNormal) {
    if (vocab_.kind == TokenizerKind::kBpe && !vocab_.pre.spm_style) return decode_byte_level(text);
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
        out.push_back(' ');
        i += 2;
      } else {
        out.push_back(text[i]);
      }
    }
    return out;
  }
  if (attr & kTokenAttrByte) return std::string(1, byte_token_value(text));
  return std::string();  // unused / undefined tokens render as nothing
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool render_special) const {
  std::string out;
  bool remove_space = vocab_.add_space_prefix;
  for (const int32_t id : ids) {
    std::string piece = token_to_piece(id, render_special);
    if (remove_space && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    remove_space = false;
    out += piece;
  }
  return vocab_.clean_spaces ? clean_up_spaces(std::move(out)) : out;
}

bool Tokenizer::is_eog(int32_t id) const {
  return std::binary_search(vocab_.eog_ids.begin(), vocab_.eog_ids.end(), id);
}

const std::string& Tokenizer::token_text(int32_t id) const {
  CHECK(id >= 0 && id < n_vocab(), "token id %d outside [0, %d)", id, n_vocab());
  return vocab_.texts[size_t(id)];
}

}  // namespace sniper
