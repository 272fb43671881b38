// SPDX-License-Identifier: MIT
#include "synth/synth_vocab.h"

#include <cstdio>
#include <set>

#include "base/check.h"

namespace sniper {

namespace {
const char* const kWords[] = {
    "the",  "and",   "a",      "to",    "was",   "he",    "she",    "it",   "of",     "in",   "they",   "you",
    "said", "her",   "his",    "with",  "on",    "for",   "that",   "big",  "little", "day",  "one",    "time",
    "upon", "once",  "there",  "saw",   "play",  "happy", "friend", "mom",  "very",   "went", "wanted", "looked",
    "park", "ball",  "red",    "sun",   "tree",  "dog",   "cat",    "bird", "is",     "be",   "at",     "had",
    "not",  "but",   "what",   "all",   "were",  "we",    "when",   "your", "can",    "an",   "which",  "their",
    "if",   "do",    "will",   "each",  "about", "how",   "up",     "out",  "them",   "then", "many",   "some",
    "so",   "these", "would",  "other", "into",  "has",   "more",   "two",  "like",   "him",  "see",    "no",
    "way",  "could", "people", "my",    "than",  "first", "water",  "been", "who",    "its",  "now",    "find",
    "long", "down",  "come",   "made",  "may",   "part",
};
constexpr const char* kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space
}  // namespace

SynthVocab make_synth_vocab(int64_t size) {
  CHECK(size >= kMinSynthVocab, "synthetic vocabulary size %ld below %ld", static_cast<long>(size),
        static_cast<long>(kMinSynthVocab));
  SynthVocab v;
  std::set<std::string> seen;
  auto add = [&](const std::string& piece, int32_t type) {
    if (static_cast<int64_t>(v.tokens.size()) >= size || !seen.insert(piece).second) return;
    v.tokens.push_back(piece);
    v.scores.push_back(type == 1 ? -static_cast<float>(v.tokens.size()) : 0.0f);
    v.types.push_back(type);
  };
  add("<unk>", 2);
  add("<s>", 3);
  add("</s>", 3);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    add(buf, 6);
  }
  add(kSpace, 1);
  for (char c = 'a'; c <= 'z'; ++c) add(std::string(1, c), 1);
  for (char c = 'A'; c <= 'Z'; ++c) add(std::string(1, c), 1);
  for (char c : std::string("0123456789.,!?'\"-:;()")) add(std::string(1, c), 1);
  for (char c = 'a'; c <= 'z'; ++c) add(std::string(kSpace) + c, 1);
  for (const char* w : kWords) {
    const std::string word = std::string(kSpace) + w;
    for (size_t len = std::string(kSpace).size() + 1; len <= word.size(); ++len) add(word.substr(0, len), 1);
  }
  // Pad with two-letter pieces until the requested size.
  for (char a = 'a'; a <= 'z' && static_cast<int64_t>(v.tokens.size()) < size; ++a) {
    for (char b = 'a'; b <= 'z'; ++b) add(std::string(1, a) + b, 1);
  }
  for (int64_t i = 0; static_cast<int64_t>(v.tokens.size()) < size; ++i) add("<extra_" + std::to_string(i) + ">", 1);
  return v;
}

}  // namespace sniper
