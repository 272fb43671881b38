// SPDX-License-Identifier: MIT
// A small SentencePiece-style vocabulary for synthetic models: <unk> <s> </s>, the 256 byte
// tokens, single characters, and common English words built up through all their prefixes so
// the SPM bigram merges can reach them. Deterministic; any size >= kMinSynthVocab.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sniper {

constexpr int64_t kMinSynthVocab = 259 + 100;

struct SynthVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;  // 1 normal, 2 unknown, 3 control, 6 byte
};

SynthVocab make_synth_vocab(int64_t size);

}  // namespace sniper
