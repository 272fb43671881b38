// SPDX-License-Identifier: MIT
// Hand-written pre-tokenizer regexes. The text is decoded to code points once; a split is a list
// of segment lengths (in code points) that each stage refines, exactly like llama.cpp's
// unicode_regex_split: a stage only splits inside the segments the previous stages produced, and
// for "find all" regexes both the matches and the unmatched gaps between them become segments.
#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "tokenizer/unicode.h"

namespace sniper {

namespace {

using Codepoints = std::vector<uint32_t>;
using Segments = std::vector<size_t>;  // lengths in code points, summing to the text length

constexpr uint32_t kOutOfRange = 0xFFFFFFFF;

// Position accessors bounded to one segment [begin, end): out-of-segment reads see nothing.
struct SegmentView {
  const Codepoints& cpts;
  size_t begin;
  size_t end;

  uint32_t cpt(size_t pos) const { return pos >= begin && pos < end ? cpts[pos] : kOutOfRange; }
  CodepointFlags flags(size_t pos) const {
    return pos >= begin && pos < end ? codepoint_flags(cpts[pos]) : CodepointFlags{};
  }
};

// Collects the word lengths of one segment: add(end) closes the word that started at the
// previous end.
struct WordSink {
  Segments& out;
  size_t prev_end;

  size_t add(size_t end) {
    const size_t len = end - prev_end;
    if (len > 0) out.push_back(len);
    prev_end = end;
    return len;
  }
};

bool is_cr_or_lf(uint32_t c) { return c == '\r' || c == '\n'; }

enum class CaseMode {
  kExact,         // 's|'t|... (GPT-2)
  kUnicodeLower,  // (?i:'s|'t|...) as llama.cpp's custom llama3 matcher: Unicode lowercase
  kAsciiEither,   // '[sS]|'[tT]|... as llama.cpp's std::regex form of the qwen2 regex
};

// Matches 's 't 'm 'd (length 2) or 're 've 'll (length 3) at pos; 0 when none.
size_t match_contraction(const SegmentView& v, size_t pos, CaseMode mode) {
  if (v.cpt(pos) != '\'' || pos + 1 >= v.end) return 0;
  auto lower = [&](uint32_t c) -> uint32_t {
    switch (mode) {
      case CaseMode::kExact: return c;
      case CaseMode::kUnicodeLower: return codepoint_to_lower(c);
      case CaseMode::kAsciiEither: return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
    }
    return c;
  };
  const uint32_t c1 = lower(v.cpt(pos + 1));
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if (pos + 2 >= v.end) return 0;
  const uint32_t c2 = lower(v.cpt(pos + 2));
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

// GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
Segments split_gpt2(const Codepoints& cpts, const Segments& segments) {
  Segments out;
  out.reserve(segments.size());
  size_t start = 0;
  for (const size_t seg_len : segments) {
    const SegmentView v{cpts, start, start + seg_len};
    WordSink sink{out, start};
    start += seg_len;
    for (size_t pos = v.begin; pos < v.end;) {
      const uint32_t cpt = v.cpt(pos);
      if (const size_t n = match_contraction(v, pos, CaseMode::kExact)) {
        pos += sink.add(pos + n);
        continue;
      }
      CodepointFlags f2 = cpt == ' ' ? v.flags(pos + 1) : v.flags(pos);
      if (f2.is_letter) {  // <space>?\p{L}+
        pos += cpt == ' ';
        while (f2.is_letter) f2 = v.flags(++pos);
        sink.add(pos);
        continue;
      }
      if (f2.is_number) {  // <space>?\p{N}+
        pos += cpt == ' ';
        while (f2.is_number) f2 = v.flags(++pos);
        sink.add(pos);
        continue;
      }
      auto is_other = [](const CodepointFlags& f) {
        return f.defined && !(f.is_whitespace || f.is_letter || f.is_number);
      };
      if (is_other(f2)) {  // <space>?[^\s\p{L}\p{N}]+
        pos += cpt == ' ';
        while (is_other(f2)) f2 = v.flags(++pos);
        sink.add(pos);
        continue;
      }
      size_t n_ws = 0;
      while (v.flags(pos + n_ws).is_whitespace) ++n_ws;
      if (n_ws > 1 && v.cpt(pos + n_ws) != kOutOfRange) {  // \s+(?!\S)
        pos += n_ws - 1;
        sink.add(pos);
        continue;
      }
      if (n_ws > 0) {  // \s+
        pos += n_ws;
        sink.add(pos);
        continue;
      }
      sink.add(++pos);  // no match: the code point is a word of its own
    }
  }
  return out;
}

// Llama-3 (max_digits 3) and Qwen2 (max_digits 1):
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,N}| ?[^\s\p{L}\p{N}]+[\r\n]*|
// \s*[\r\n]+|\s+(?!\S)|\s+
// With `marks_are_letters` (Qwen3.5, llama.cpp's unicode_regex_split_custom_qwen35) the letter run
// is [\p{L}\p{M}]+ and the symbol run excludes \p{M}; the optional lead character of a letter run
// may itself be a mark, as in llama.cpp.
Segments split_llama3(const Codepoints& cpts, const Segments& segments, size_t max_digits, CaseMode contraction_case,
                      bool marks_are_letters = false) {
  auto wordlike = [marks_are_letters](const CodepointFlags& f) {
    return f.is_letter || (marks_are_letters && f.is_mark);
  };
  Segments out;
  out.reserve(segments.size());
  size_t start = 0;
  for (const size_t seg_len : segments) {
    const SegmentView v{cpts, start, start + seg_len};
    WordSink sink{out, start};
    start += seg_len;
    for (size_t pos = v.begin; pos < v.end;) {
      const uint32_t cpt = v.cpt(pos);
      const CodepointFlags flags = v.flags(pos);
      if (const size_t n = match_contraction(v, pos, contraction_case)) {
        pos += sink.add(pos + n);
        continue;
      }
      // [^\r\n\p{L}\p{N}]?\p{L}+
      if (!(is_cr_or_lf(cpt) || flags.is_number) && (wordlike(flags) || wordlike(v.flags(pos + 1)))) {
        ++pos;
        while (wordlike(v.flags(pos))) ++pos;
        sink.add(pos);
        continue;
      }
      // \p{N}{1,max_digits}
      if (flags.is_number) {
        size_t ini = pos;
        while (v.flags(pos).is_number) {
          if (++pos - ini >= max_digits) {
            sink.add(pos);
            ini = pos;
          }
        }
        sink.add(pos);
        continue;
      }
      // <space>?[^\s\p{L}\p{N}]+[\r\n]*
      CodepointFlags f2 = cpt == ' ' ? v.flags(pos + 1) : flags;
      if (!(f2.is_whitespace || wordlike(f2) || f2.is_number) && flags.defined) {
        pos += cpt == ' ';
        while (!(f2.is_whitespace || wordlike(f2) || f2.is_number) && f2.defined) f2 = v.flags(++pos);
        while (is_cr_or_lf(v.cpt(pos))) ++pos;
        sink.add(pos);
        continue;
      }
      size_t n_ws = 0;
      size_t last_end_r_or_n = 0;
      while (v.flags(pos + n_ws).is_whitespace) {
        if (is_cr_or_lf(v.cpt(pos + n_ws))) last_end_r_or_n = pos + n_ws + 1;
        ++n_ws;
      }
      if (last_end_r_or_n > 0) {  // \s*[\r\n]+
        pos = last_end_r_or_n;
        sink.add(pos);
        continue;
      }
      if (n_ws > 1 && v.cpt(pos + n_ws) != kOutOfRange) {  // \s+(?!\S)
        pos += n_ws - 1;
        sink.add(pos);
        continue;
      }
      if (n_ws > 0) {  // \s+
        pos += n_ws;
        sink.add(pos);
        continue;
      }
      sink.add(++pos);
    }
  }
  return out;
}

// A "find all" regex stage (llama.cpp's std::regex fallback): `match(view, pos)` returns the
// length of the match starting at pos (0 for none); the leftmost match wins and both matches and
// the gaps between them become segments.
template <typename Match>
Segments split_find_all(const Codepoints& cpts, const Segments& segments, Match match) {
  Segments out;
  out.reserve(segments.size());
  size_t start = 0;
  for (const size_t seg_len : segments) {
    const SegmentView v{cpts, start, start + seg_len};
    start += seg_len;
    size_t last = v.begin;
    size_t pos = v.begin;
    while (pos < v.end) {
      const size_t len = match(v, pos);
      if (len == 0) {
        ++pos;
        continue;
      }
      if (pos > last) out.push_back(pos - last);
      out.push_back(len);
      pos += len;
      last = pos;
    }
    if (last < v.end) out.push_back(v.end - last);
  }
  return out;
}

// llama.cpp runs regexes without \p{..} through std::wregex after replacing non-ASCII
// whitespace with U+000B, so \s is ASCII whitespace plus that stand-in.
uint32_t wregex_view(uint32_t c) { return (c > 0x7F && codepoint_flags(c).is_whitespace) ? 0x0B : c; }

bool is_regex_space(uint32_t c) {  // \s of std::regex on the substituted text
  return c == ' ' || (c >= 0x09 && c <= 0x0D);
}

// Length of the run of code points at pos that satisfy `pred`.
template <typename Pred>
size_t run_length(const SegmentView& v, size_t pos, Pred pred) {
  size_t n = 0;
  while (pos + n < v.end && pred(v.cpts[pos + n])) ++n;
  return n;
}

// \s?[class]+ with greedy optional whitespace (backtracks to no whitespace when needed).
template <typename Pred>
size_t match_opt_space_run(const SegmentView& v, size_t pos, Pred in_class) {
  auto cls = [&](uint32_t c) { return in_class(wregex_view(c)); };
  if (is_regex_space(wregex_view(v.cpts[pos]))) {
    const size_t n = run_length(v, pos + 1, cls);
    if (n > 0) return 1 + n;
  }
  return run_length(v, pos, cls);
}

// A character class given as a sorted list of inclusive code point ranges.
struct CharClass {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;

  // Parses "a-zA-Z..." (UTF-8, no escapes) into ranges.
  explicit CharClass(std::string_view spec) {
    const Codepoints cps = utf8_to_codepoints(spec);
    for (size_t i = 0; i < cps.size(); ++i) {
      if (i + 2 < cps.size() && cps[i + 1] == '-') {
        ranges.emplace_back(cps[i], cps[i + 2]);
        i += 2;
      } else {
        ranges.emplace_back(cps[i], cps[i]);
      }
    }
  }
  bool contains(uint32_t c) const {
    for (const auto& [lo, hi] : ranges) {
      if (c >= lo && c <= hi) return true;
    }
    return false;
  }
};

Segments split_deepseek_llm(const Codepoints& cpts, Segments segs) {
  // The literals are range lists; clang-format 14 splits them differently on each run.
  // clang-format off
  static const CharClass kLetters(
      "A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃");
  static const CharClass kPunct("!-/:-~！-／：-～‘-‟　-。");
  static const CharClass kCjk("一-龥ࠀ-一가-퟿");
  // clang-format on
  // [\r\n]
  segs = split_find_all(cpts, segs,
                        [](const SegmentView& v, size_t pos) -> size_t { return is_cr_or_lf(v.cpts[pos]) ? 1 : 0; });
  // \s?[letters]+
  segs = split_find_all(cpts, segs, [](const SegmentView& v, size_t pos) {
    return match_opt_space_run(v, pos, [](uint32_t c) { return kLetters.contains(c); });
  });
  // \s?[punctuation]+
  segs = split_find_all(cpts, segs, [](const SegmentView& v, size_t pos) {
    return match_opt_space_run(v, pos, [](uint32_t c) { return kPunct.contains(c); });
  });
  // \s+$
  segs = split_find_all(cpts, segs, [](const SegmentView& v, size_t pos) -> size_t {
    const size_t n = run_length(v, pos, [](uint32_t c) { return is_regex_space(wregex_view(c)); });
    return (n > 0 && pos + n == v.end) ? n : 0;
  });
  // [CJK]+
  segs = split_find_all(cpts, segs, [](const SegmentView& v, size_t pos) {
    return run_length(v, pos, [](uint32_t c) { return kCjk.contains(wregex_view(c)); });
  });
  // \p{N}+
  segs = split_find_all(cpts, segs, [](const SegmentView& v, size_t pos) {
    return run_length(v, pos, [](uint32_t c) { return codepoint_flags(c).is_number; });
  });
  return segs;
}

Segments split_default(const Codepoints& cpts, Segments segs) {
  // [\p{P}\$\+<=>\^~\|]+
  segs = split_find_all(cpts, segs, [](const SegmentView& v, size_t pos) {
    return run_length(v, pos, [](uint32_t c) {
      return codepoint_flags(c).is_punctuation || (c < 0x80 && c != 0 && std::strchr("$+<=>^~|", int(c)));
    });
  });
  segs = split_gpt2(cpts, segs);
  // \p{N}+
  segs = split_find_all(cpts, segs, [](const SegmentView& v, size_t pos) {
    return run_length(v, pos, [](uint32_t c) { return codepoint_flags(c).is_number; });
  });
  // [0-9][0-9][0-9]
  segs = split_find_all(cpts, segs, [](const SegmentView& v, size_t pos) -> size_t {
    const size_t n = run_length(v, pos, [](uint32_t c) { return c >= '0' && c <= '9'; });
    return n >= 3 ? 3 : 0;
  });
  return segs;
}

// [^\n]+|[\n]+ (llama.cpp's unicode_regex_split_custom_newlines): alternating runs of '\n' and
// of everything else.
Segments split_newline_runs(const Codepoints& cpts, const Segments& segments) {
  Segments out;
  out.reserve(segments.size());
  size_t start = 0;
  for (const size_t seg_len : segments) {
    const size_t end = start + seg_len;
    for (size_t pos = start; pos < end;) {
      const bool newline = cpts[pos] == '\n';
      const size_t run_start = pos;
      while (pos < end && (cpts[pos] == '\n') == newline) ++pos;
      out.push_back(pos - run_start);
    }
    start = end;
  }
  return out;
}

struct NamedPre {
  const char* name;
  PreTokenizerConfig config;
};

// tokenizer.ggml.pre values and the llama.cpp pre-tokenizer type each maps to (only the ones whose
// regexes are implemented here). Flags as in llama.cpp's llama_vocab::impl::load.
constexpr PreTokenizerConfig kCfgDefault{PreTokenizerKind::kDefault, false, false, true};
constexpr PreTokenizerConfig kCfgLlama3{PreTokenizerKind::kLlama3, true, true, true};
constexpr PreTokenizerConfig kCfgLlama3Plain{PreTokenizerKind::kLlama3, false, false, true};
constexpr PreTokenizerConfig kCfgGpt2{PreTokenizerKind::kGpt2, false, false, true};
constexpr PreTokenizerConfig kCfgGpt2NoClean{PreTokenizerKind::kGpt2, false, false, false};
constexpr PreTokenizerConfig kCfgQwen2{PreTokenizerKind::kQwen2, false, false, false};
constexpr PreTokenizerConfig kCfgQwen2Clean{PreTokenizerKind::kQwen2, false, false, true};
constexpr PreTokenizerConfig kCfgStarcoder{PreTokenizerKind::kStarcoder, false, false, true};
constexpr PreTokenizerConfig kCfgStarcoderNoClean{PreTokenizerKind::kStarcoder, false, false, false};
constexpr PreTokenizerConfig kCfgDeepseekLlm{PreTokenizerKind::kDeepseekLlm, false, false, false};
constexpr PreTokenizerConfig kCfgQwen35{PreTokenizerKind::kQwen35, false, false, false};
constexpr PreTokenizerConfig kCfgGemma4{PreTokenizerKind::kNewlines, false, true, true, /*spm_style=*/true};

constexpr NamedPre kPreTokenizers[] = {
    {"default", kCfgDefault},
    {"llama3", kCfgLlama3},
    {"llama-v3", kCfgLlama3},
    {"llama-bpe", kCfgLlama3},
    {"falcon3", kCfgLlama3},
    {"falcon-h1", kCfgLlama3},
    {"pixtral", kCfgLlama3},
    {"midm-2.0", kCfgLlama3},
    {"lfm2", kCfgLlama3},
    {"jina-v5-nano", kCfgLlama3},
    {"dbrx", kCfgLlama3Plain},
    {"smaug-bpe", kCfgLlama3Plain},
    {"glm4", kCfgLlama3Plain},
    {"chatglm-bpe", kCfgLlama3Plain},
    {"gpt-2", kCfgGpt2},
    {"phi-2", kCfgGpt2},
    {"jina-es", kCfgGpt2},
    {"jina-de", kCfgGpt2},
    {"gigachat", kCfgGpt2},
    {"jina-v2-es", kCfgGpt2},
    {"jina-v2-de", kCfgGpt2},
    {"a.x-4.0", kCfgGpt2},
    {"mellum", kCfgGpt2},
    {"modern-bert", kCfgGpt2},
    {"mpt", kCfgGpt2},
    {"olmo", kCfgGpt2},
    {"jais", kCfgGpt2},
    {"exaone4", kCfgGpt2},
    {"trillion", kCfgGpt2NoClean},
    {"granite-docling", kCfgGpt2NoClean},
    {"qwen2", kCfgQwen2},
    {"deepseek-r1-qwen", kCfgQwen2},
    {"kormo", kCfgQwen2},
    {"f2llmv2", kCfgQwen2},
    {"hunyuan", kCfgQwen2},
    {"solar-open", kCfgQwen2},
    {"grok-2", kCfgQwen2},
    {"megrez", kCfgQwen2Clean},
    {"stablelm2", kCfgQwen2Clean},
    {"starcoder", kCfgStarcoder},
    {"refact", kCfgStarcoder},
    {"codeshell", kCfgStarcoder},
    {"exaone", kCfgStarcoder},
    {"minerva-7b", kCfgStarcoder},
    {"mellum2", kCfgStarcoder},
    {"command-r", kCfgStarcoderNoClean},
    {"smollm", kCfgStarcoderNoClean},
    {"deepseek-llm", kCfgDeepseekLlm},
    {"qwen35", kCfgQwen35},
    {"gemma4", kCfgGemma4},
    {"granite-embed-multi-311m", kCfgGemma4},
};

}  // namespace

Result<PreTokenizerConfig> pre_tokenizer_from_name(std::string_view name) {
  if (name.empty()) return kCfgDefault;
  for (const NamedPre& entry : kPreTokenizers) {
    if (name == entry.name) return entry.config;
  }
  std::string allowed;
  for (const NamedPre& entry : kPreTokenizers) {
    if (!allowed.empty()) allowed += ", ";
    allowed += entry.name;
  }
  return make_error("tokenizer.ggml.pre is '%.*s' but must be one of: %s", int(name.size()), name.data(),
                    allowed.c_str());
}

std::vector<std::string> pre_tokenize(PreTokenizerKind kind, std::string_view text) {
  const Codepoints cpts = utf8_to_codepoints(text);
  Segments segs;
  if (!cpts.empty()) segs.push_back(cpts.size());
  switch (kind) {
    case PreTokenizerKind::kDefault: segs = split_default(cpts, std::move(segs)); break;
    case PreTokenizerKind::kGpt2: segs = split_gpt2(cpts, segs); break;
    case PreTokenizerKind::kStarcoder:
      segs = split_find_all(cpts, segs, [](const SegmentView& v, size_t pos) -> size_t {
        return codepoint_flags(v.cpts[pos]).is_number ? 1 : 0;
      });
      segs = split_gpt2(cpts, segs);
      break;
    case PreTokenizerKind::kLlama3: segs = split_llama3(cpts, segs, 3, CaseMode::kUnicodeLower); break;
    case PreTokenizerKind::kQwen2: segs = split_llama3(cpts, segs, 1, CaseMode::kAsciiEither); break;
    case PreTokenizerKind::kDeepseekLlm: segs = split_deepseek_llm(cpts, std::move(segs)); break;
    case PreTokenizerKind::kQwen35:
      // llama.cpp runs the [sS]-spelled Qwen3.5 regex through its custom matcher, which lowercases
      // with the Unicode tables (unlike the std::regex path the Qwen2 spelling takes).
      segs = split_llama3(cpts, segs, 1, CaseMode::kUnicodeLower, /*marks_are_letters=*/true);
      break;
    case PreTokenizerKind::kNewlines: segs = split_newline_runs(cpts, segs); break;
  }
  std::vector<std::string> words;
  words.reserve(segs.size());
  size_t start = 0;
  for (const size_t len : segs) {
    std::string word;
    for (size_t i = start; i < start + len; ++i) append_utf8(word, cpts[i]);
    words.push_back(std::move(word));
    start += len;
  }
  return words;
}

}  // namespace sniper
