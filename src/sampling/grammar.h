// SPDX-License-Identifier: MIT
// Grammar: a byte-level context-free grammar (rules of alternatives, each a sequence of byte
// sets and rule references), and GrammarMatcher, the pushdown recognizer that follows it one
// byte at a time. Used for constrained sampling: a token is allowed when its bytes keep at least
// one parse alive (see token_constraint.h).
// The matcher keeps the set of live parse stacks (llama.cpp's grammar design: every stack's top
// is a byte set; alternatives are explored in parallel). Stacks share their tails in an arena of
// immutable frames, so trying a token and rolling back costs no allocation.
// Work per byte is linear in the live stacks: settle() de-duplicates the stacks it reaches with a
// hash set (TopSet), so a rule with many alternatives (a schema's enum, anyOf) costs O(stacks) per
// byte, not O(stacks^2). Equal byte sets are stored once (most are single bytes of literals).
// Invariants: a Grammar has no left recursion and no cycle of nullable references (the builder
// in json_schema_grammar.cpp only makes right-recursive rules; Grammar::validate() checks it),
// so following a byte always terminates. A rule reference that ends an alternative is a tail
// call (no frame is pushed), so right-recursive repetition runs in constant stack depth.
// Grammar is immutable once built (thread-safe to share); GrammarMatcher is thread-compatible.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace sniper {

// A set of bytes.
struct ByteSet {
  std::array<uint64_t, 4> bits{};
  void add(uint8_t b) { bits[b >> 6] |= uint64_t{1} << (b & 63); }
  void add_range(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) add(static_cast<uint8_t>(b));
  }
  bool has(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  bool empty() const { return (bits[0] | bits[1] | bits[2] | bits[3]) == 0; }
};

class Grammar {
 public:
  // One element of an alternative: a byte set (matches one byte), a rule reference, or the end
  // of the alternative.
  struct Element {
    enum class Kind : uint8_t { kBytes, kRule, kEnd };
    Kind kind = Kind::kEnd;
    int32_t index = 0;  // kBytes: index in sets_; kRule: rule id
  };

  // Builder interface. A rule is created empty, then given alternatives; an alternative is a
  // sequence of symbols (built with bytes()/literal()/ref()).
  struct Symbol {
    bool is_rule = false;
    ByteSet set;
    int32_t rule = -1;
  };
  using Sequence = std::vector<Symbol>;
  static Symbol bytes(ByteSet s) { return Symbol{false, s, -1}; }
  static Symbol byte(uint8_t b) {
    ByteSet s;
    s.add(b);
    return bytes(s);
  }
  static Symbol ref(int32_t rule) { return Symbol{true, {}, rule}; }
  // Appends the bytes of `text` to `seq`, one set each.
  static void append_literal(Sequence* seq, std::string_view text);

  int32_t add_rule(std::string name);
  void add_alternative(int32_t rule, const Sequence& seq);
  void set_root(int32_t rule) { root_ = rule; }

  // Checks that every reference names a rule with at least one alternative, that no rule is
  // left-recursive (directly or through nullable prefixes). Errors name the rule.
  [[nodiscard]] Status validate() const;
  // The longest chain of rules entered one inside the other before a byte is consumed: how deep
  // the matcher's expansion recurses. Precondition: validate() passed. Grammars from untrusted
  // text bound it (gbnf.h).
  size_t left_depth() const;

  int32_t root() const { return root_; }
  int32_t n_rules() const { return static_cast<int32_t>(rules_.size()); }
  // Elements of all alternatives (symbols and ends): the grammar's size, for bounds.
  size_t n_elements() const { return elems_.size(); }
  const std::vector<int32_t>& alternatives(int32_t rule) const { return rules_[static_cast<size_t>(rule)].alts; }
  const std::string& rule_name(int32_t rule) const { return rules_[static_cast<size_t>(rule)].name; }
  const Element& element(int32_t pos) const { return elems_[static_cast<size_t>(pos)]; }
  const ByteSet& set(int32_t index) const { return sets_[static_cast<size_t>(index)]; }

 private:
  struct Rule {
    std::string name;
    std::vector<int32_t> alts;  // positions in elems_ where each alternative starts
  };
  // For each rule, the rules reachable from it without consuming a byte.
  std::vector<std::vector<int32_t>> left_edges() const;

  std::vector<Rule> rules_;
  std::vector<Element> elems_;                            // all alternatives, each terminated by kEnd
  std::vector<ByteSet> sets_;                             // distinct sets
  std::map<std::array<uint64_t, 4>, int32_t> set_index_;  // set bits -> index in sets_ (interning)
  int32_t root_ = 0;
};

class GrammarMatcher {
 public:
  // Starts at the grammar's root. `grammar` must outlive the matcher and pass validate().
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

  // Consumes bytes; returns false (state unchanged) when no parse accepts them.
  [[nodiscard]] bool accept(std::string_view bytes);
  // True when the bytes so far could be followed by `bytes` (state unchanged). No allocation
  // once the scratch buffers have grown.
  bool can_accept(std::string_view bytes);
  // True when the bytes so far form a complete sentence of the grammar.
  bool is_complete() const;
  // The bytes that may come next (empty when the grammar allows nothing more).
  ByteSet next_bytes() const;
  // Number of live parse stacks (for tests and bounds).
  size_t n_stacks() const { return stacks_.size(); }

  // Probing many continuations that share prefixes (a token trie): advance() steps a set of
  // stacks over one byte without touching the matcher's own state; the frames it creates stay
  // until rollback(mark) with a mark() taken before. Stacks from a rolled-back step are invalid.
  struct Top {
    int32_t pos;     // element index in the grammar (a kBytes element), or -1: the parse is complete
    int32_t parent;  // frame index in frames_, or -1
    bool operator==(const Top&) const = default;
  };
  const std::vector<Top>& stacks() const { return stacks_; }
  bool advance(const std::vector<Top>& from, uint8_t byte, std::vector<Top>* to) { return step(from, byte, to); }
  size_t mark() const { return frames_.size(); }
  void rollback(size_t mark) { frames_.resize(mark); }

 private:
  struct Frame {
    int32_t pos;  // the element after the rule reference, to resume at
    int32_t parent;
  };
  // The tops already in a settle() output: an open-addressing hash set that a new generation
  // clears in O(1), so a step allocates nothing once it has grown.
  class TopSet {
   public:
    void clear();
    // Inserts t; false when it was already there.
    bool insert(const Top& t);

   private:
    void grow();
    static uint64_t key(const Top& t) {
      return (static_cast<uint64_t>(static_cast<uint32_t>(t.pos)) << 32) | static_cast<uint32_t>(t.parent);
    }
    std::vector<uint64_t> keys_;
    std::vector<uint32_t> gens_;  // a slot is used when gens_[i] == gen_
    uint32_t gen_ = 1;
    size_t count_ = 0;
  };

  // Moves from (pos, parent) to every byte-set top reachable without consuming input, appending
  // those not in seen_ to *out.
  void settle(int32_t pos, int32_t parent, std::vector<Top>* out, int depth);
  // Advances `from` over one byte into `to` (deduplicated); returns !to->empty().
  bool step(const std::vector<Top>& from, uint8_t byte, std::vector<Top>* to);

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Frame> frames_;  // arena; frames_ beyond a probe's start are dropped after it
  std::vector<Top> stacks_;
  std::vector<Top> scratch_a_, scratch_b_;
  TopSet seen_;  // the tops of the settle() output being built
};

}  // namespace sniper
