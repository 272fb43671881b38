// SPDX-License-Identifier: MIT
// TokenConstraint: grammar-constrained sampling over a vocabulary. It knows each token's bytes and
// which tokens end generation, follows the grammar with a GrammarMatcher, and masks the logits of
// tokens that would leave the grammar (-inf), so the sampler can only pick tokens that keep the
// output a prefix of a sentence of the grammar. End-of-generation tokens are allowed exactly when
// the output is complete; tokens without bytes (control tokens) never are otherwise.
// Invariants: after accept(t) for tokens allowed by mask(), the accepted bytes are a prefix of a
// sentence; must_end() is true once the sentence is complete and nothing may follow.
// Thread-compatible (one per generated sequence); the vocabulary is shared and immutable.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "sampling/grammar.h"

namespace sniper {

// The bytes of every token and which ones end generation; shared by the constraints of one model.
struct TokenVocabulary {
  std::vector<std::string> pieces;  // [n_vocab] bytes as generated text ("" for control tokens)
  std::vector<uint8_t> is_eog;      // [n_vocab]
  // A trie of the non-empty pieces, so a mask walks each shared prefix once and drops a whole
  // subtree at its first impossible byte. Node 0 is the root.
  struct TrieNode {
    uint8_t byte = 0;
    int32_t first_child = -1;
    int32_t next_sibling = -1;
    int32_t tokens_begin = 0, tokens_end = 0;  // [begin, end) in trie_tokens: tokens spelled by this path
  };
  std::vector<TrieNode> trie;
  std::vector<int32_t> trie_tokens;

  // Builds the trie from pieces. Requires pieces.size() == is_eog.size().
  void index();
};

class TokenConstraint {
 public:
  TokenConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocab);

  // True when `token` may come next.
  bool allows(int32_t token);
  // Sets logits[t] = -inf for every token t in [0, n_vocab) that may not come next; returns the
  // number of tokens left (0: nothing can continue, e.g. a vocabulary lacking the needed bytes).
  int64_t mask(float* logits, int32_t n_vocab);
  // Advances over `token`'s bytes. Error (state unchanged) when the grammar does not allow them.
  [[nodiscard]] Status accept(int32_t token);
  // The output so far is a complete sentence.
  bool is_complete() const { return matcher_.is_complete(); }
  // Complete and nothing may follow: generation must end here.
  bool must_end() const { return matcher_.is_complete() && matcher_.next_bytes().empty(); }

 private:
  GrammarMatcher matcher_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::vector<uint8_t> allowed_;                         // [n_vocab] scratch for mask()
  std::vector<std::vector<GrammarMatcher::Top>> level_;  // [depth] stacks while walking the trie
};

}  // namespace sniper
